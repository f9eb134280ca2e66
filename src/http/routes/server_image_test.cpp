// Screenshot requests over HTTP (issue 26) on the tiny model and a tiny random mmproj:
//  * an OpenAI image_url content part (a PNG data: URL) and llama.cpp's /completion multimodal
//    form with /props' media_marker give the same prompt and the same tokens;
//  * timings, the request log and /metrics report the image rows, the encoder and its cache;
//  * /props and /v1/models say that vision is available;
//  * bad input — a remote URL, an undecodable or oversized image, a budget out of range, an image
//    in a system message, too many images, images without --mmproj — is a 400 naming what was
//    wrong, and the server keeps serving.
#include <gtest/gtest.h>
#include <stb/stb_image_write.h>

#include <random>
#include <string>
#include <vector>

#include "http/routes/http_test_util.h"
#include "text/chat_template.h"

namespace tandem::http {
namespace {

using namespace testing;

std::string base64(const std::vector<uint8_t>& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (in[i] << 16) | (in[i + 1] << 8) | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = in[i] << 16;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (in[i] << 16) | (in[i + 1] << 8);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// A w x h PNG of seeded noise.
std::vector<uint8_t> png(int w, int h, uint32_t seed) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  std::mt19937 rng(seed);
  for (auto& b : rgb) b = static_cast<uint8_t>(rng() & 0xff);
  std::vector<uint8_t> out;
  stbi_write_png_to_func([](void* ctx, void* data, int n) {
    auto* o = static_cast<std::vector<uint8_t>*>(ctx);
    o->insert(o->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + n);
  }, &out, w, h, 3, rgb.data(), w * 3);
  return out;
}

std::string data_url(const std::vector<uint8_t>& file) { return "data:image/png;base64," + base64(file); }

serve::EngineConfig image_engine() {
  serve::EngineConfig c = small_engine();
  c.images.max_per_request = 2;
  c.images.budget.max_tokens = 16;
  return c;
}

Json chat_with_image(const std::string& url, const std::string& role = "user") {
  Json parts = Json::array({Json{{"type", "text"}, {"text", "Describe "}},
                            Json{{"type", "image_url"}, {"image_url", Json{{"url", url}}}},
                            Json{{"type", "text"}, {"text", " now"}}});
  return Json{{"messages", Json::array({Json{{"role", role}, {"content", parts}}})},
              {"max_tokens", 6},
              {"temperature", 0},
              {"ignore_eos", true}};
}


void expect_400(TestServer& s, const std::string& path, const Json& body, const std::string& needle) {
  auto r = post_json(s, path, body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find(needle), std::string::npos) << "expected '" << needle << "' in " << r->body;
}

TEST(HttpImages, ChatImagePartAndCompletionMultimodalGiveTheSameTokens) {
  TestServer s(image_engine(), {}, /*with_vision=*/true);
  const std::vector<uint8_t> file = png(120, 90, 1);
  auto r1 = post_json(s, "/v1/chat/completions", chat_with_image(data_url(file)));
  ASSERT_TRUE(r1);
  ASSERT_EQ(r1->status, 200) << r1->body;
  const Json j1 = Json::parse(r1->body);
  EXPECT_EQ(j1["timings"]["images"], 1);
  EXPECT_GT(j1["timings"]["image_rows"].get<int64_t>(), 0);
  EXPECT_EQ(j1["timings"]["images_encoded"], 1);

  // The same prompt through /completion: the chat template's text with the server's marker.
  auto props = s.client()->Get("/props");
  ASSERT_TRUE(props);
  const Json pj = Json::parse(props->body);
  EXPECT_EQ(pj["modalities"]["vision"], true);
  const std::string marker = pj["media_marker"].get<std::string>();
  text::ChatRequest cr = text::ChatRequest::from_json(
      Json{{"messages", Json::array({Json{{"role", "user"}, {"content", "Describe " + marker + " now"}}})}});
  cr.add_generation_prompt = true;
  const std::string prompt = TinyModel::get().tmpl.render(cr).text;
  Json body{{"prompt", Json{{"prompt_string", prompt}, {"multimodal_data", Json::array({base64(file)})}}},
            {"n_predict", 6}, {"temperature", 0}, {"ignore_eos", true}};
  auto r2 = post_json(s, "/completion", body);
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  const Json j2 = Json::parse(r2->body);
  EXPECT_EQ(j2["timings"]["images_encoded"], 0);  // the same screen: from the encoder cache or the reused prefix

  const std::vector<Json> rec = s.take_records();
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0]["prompt"], rec[1]["prompt"]);
  EXPECT_EQ(rec[0]["output"], rec[1]["output"]);
  ASSERT_TRUE(rec[0].contains("images"));
  EXPECT_EQ(rec[0]["images"], rec[1]["images"]);

  auto models = s.client()->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_NE(models->body.find("multimodal"), std::string::npos) << models->body;
  auto metrics = s.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("tandem_request_images_encoded_total 1"), std::string::npos);
  EXPECT_NE(metrics->body.find("tandem_encoder_cache_entries 1"), std::string::npos);
}

TEST(HttpImages, BadImagesAre400AndTheServerKeepsServing) {
  TestServer s(image_engine(), {}, /*with_vision=*/true);
  const std::string good = data_url(png(64, 48, 2));
  expect_400(s, "/v1/chat/completions", chat_with_image("https://example.com/screen.png"), "inline");
  expect_400(s, "/v1/chat/completions", chat_with_image("file:///etc/passwd"), "inline");
  expect_400(s, "/v1/chat/completions", chat_with_image("data:text/plain;base64,aGVsbG8="), "data:image");
  expect_400(s, "/v1/chat/completions", chat_with_image("data:image/png;base64,!!!!"), "base64");
  expect_400(s, "/v1/chat/completions", chat_with_image("data:image/png;base64," + base64({1, 2, 3, 4, 5, 6, 7, 8})),
             "image 0");
  // A PNG header that declares 100000 x 100000 pixels: refused from the header.
  std::vector<uint8_t> huge = png(8, 8, 3);
  huge[16] = 0, huge[17] = 1, huge[18] = 0x86, huge[19] = 0xa0;  // IHDR width = 100000
  huge[20] = 0, huge[21] = 1, huge[22] = 0x86, huge[23] = 0xa0;  // IHDR height = 100000
  expect_400(s, "/v1/chat/completions", chat_with_image(data_url(huge)), "100000");  // the header's size, refused
  Json budget = chat_with_image(good);
  budget["image_max_tokens"] = 1 << 20;
  expect_400(s, "/v1/chat/completions", budget, "image_max_tokens");
  expect_400(s, "/v1/chat/completions", chat_with_image(good, "system"), "system message cannot contain images");
  // Malformed parts: no URL at all, a non-string type (400s, not a crash or a 500).
  Json no_url = chat_with_image(good);
  no_url["messages"][0]["content"][1] = Json{{"type", "image_url"}};
  expect_400(s, "/v1/chat/completions", no_url, "image_url");
  Json odd_type = chat_with_image(good);
  odd_type["messages"][0]["content"][0]["type"] = 7;
  auto r_odd = post_json(s, "/v1/chat/completions", odd_type);
  ASSERT_TRUE(r_odd);
  EXPECT_EQ(r_odd->status, 400) << r_odd->body;
  Json three = chat_with_image(good);
  for (int i = 0; i < 2; ++i)
    three["messages"][0]["content"].push_back(Json{{"type", "image_url"}, {"image_url", Json{{"url", good}}}});
  expect_400(s, "/v1/chat/completions", three, "at most 2");
  Json video = chat_with_image(good);
  video["messages"][0]["content"].push_back(Json{{"type", "video"}, {"video", "x"}});
  expect_400(s, "/v1/chat/completions", video, "video");
  Json mismatch{{"prompt", Json{{"prompt_string", "no marker here"}, {"multimodal_data", Json::array({good.substr(22)})}}}};
  expect_400(s, "/completion", mismatch, "marker");

  auto ok = post_json(s, "/v1/chat/completions", chat_with_image(good));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST(HttpImages, WithoutMmprojImagesAre400NamingTheFlag) {
  TestServer s(small_engine());
  expect_400(s, "/v1/chat/completions", chat_with_image(data_url(png(32, 32, 4))), "--mmproj");
  auto props = s.client()->Get("/props");
  ASSERT_TRUE(props);
  EXPECT_EQ(Json::parse(props->body)["modalities"]["vision"], false);
}

}  // namespace
}  // namespace tandem::http
