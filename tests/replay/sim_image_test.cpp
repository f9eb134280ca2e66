// Screenshot steps in the agent workload (issue 26):
//  * synthetic screenshots: deterministic, phone-sized, a round trip through PNG; the generator
//    attaches them where the accessibility data is sparse, and an unchanged screen (still
//    loading after a wait) is the same image;
//  * the replay model's layout of a screenshot request is the server's: a small screenshot
//    episode is served by tandem-server's HTTP front and engine (tiny model, tiny random mmproj),
//    and for stock, divergence and divergence with --checkpoint-before-image the server's logged
//    prompt, image chunks and every count (and the encoder's work: images encoded, encoder-cache
//    hits, with the cache on and off) equal tandem-sim's on every request.
#include <gtest/gtest.h>

#include <httplib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "agent/episode_gen.h"
#include "agent/request_tokens.h"
#include "agent/screenshot.h"
#include "agent/sim.h"
#include "http/api/request_log.h"
#include "http/routes/http_test_util.h"
#include "http/routes/server.h"
#include "serve/engine/engine.h"
#include "vision/image_decode.h"
#include "sim_test_util.h"

namespace tandem::agent {
namespace {

using ojson = nlohmann::ordered_json;

GenOptions screenshot_episode(GenOptions::Screenshots mode, int steps = 6) {
  GenOptions o;
  o.single_screens = 0;
  o.episodes = 1;
  o.steps = steps;
  o.screenshots = mode;
  return o;
}

TEST(Screenshots, RenderingIsDeterministicAndRoundTripsThroughPng) {
  const auto gen = generate_trace(screenshot_episode(GenOptions::Screenshots::All, 3));
  ASSERT_EQ(gen.size(), 3u);
  ScreenStyle st;
  st.width = 360;
  st.height = 780;
  st.app = gen[0].record.app;
  st.clock = gen[0].clock;
  const vision::RgbImage a = render_screen(gen[0].screen, st);
  EXPECT_EQ(a.width, 360);
  EXPECT_EQ(a.height, 780);
  EXPECT_EQ(render_screen(gen[0].screen, st).rgb, a.rgb);  // the same screen, the same pixels
  // It draws something: many distinct colours, not a blank page.
  size_t differing = 0;
  for (size_t i = 3; i < a.rgb.size(); i += 3) differing += a.rgb[i] != a.rgb[0];
  EXPECT_GT(differing, a.rgb.size() / 30);
  const vision::RgbImage b = render_screen(gen[1].screen, st);
  EXPECT_NE(b.rgb, a.rgb);  // another screen
  ScreenStyle other_clock = st;
  other_clock.clock = "23:59";
  EXPECT_NE(render_screen(gen[0].screen, other_clock).rgb, a.rgb);
  const std::vector<uint8_t> png = encode_png(a);
  const vision::RgbImage back = vision::decode_image(png);
  EXPECT_EQ(back.width, a.width);
  EXPECT_EQ(back.height, a.height);
  EXPECT_EQ(back.rgb, a.rgb);
  EXPECT_THROW(render_screen(gen[0].screen, ScreenStyle{.width = 10, .height = 780}), std::invalid_argument);
  EXPECT_EQ(parse_size("720x1560"), std::make_pair(720, 1560));
  EXPECT_THROW(parse_size("720"), std::invalid_argument);
}

TEST(Screenshots, AttachedWhereTheAccessibilityDataIsSparse) {
  GenOptions o;  // the default trace's shape
  const auto text_only = generate_trace(o);
  o.screenshots = GenOptions::Screenshots::Sparse;
  o.sparse_rate = 0.3;
  const auto gen = generate_trace(o);
  ASSERT_EQ(gen.size(), text_only.size());
  size_t shots = 0, after_wait = 0;
  for (size_t i = 0; i < gen.size(); ++i) {
    EXPECT_EQ(gen[i].screenshot, screen_is_sparse(gen[i].observation.tree)) << "request " << i + 1;
    EXPECT_FALSE(screen_is_sparse(text_only[i].observation.tree)) << "a full screen labels its controls";
    EXPECT_FALSE(text_only[i].screenshot);
    EXPECT_TRUE(text_only[i].screen.is_null());
    shots += gen[i].screenshot;
    // The screenshot draws the whole screen, which a sparse tree lacks.
    if (gen[i].screenshot) EXPECT_NE(gen[i].screen, gen[i].observation.tree);
    if (i > 0 && gen[i].record.episode == gen[i - 1].record.episode && !gen[i].record.episode.empty() &&
        gen[i].history.back().action.kind == ActionKind::Wait) {
      // A wait follows a screen that says it is loading; the next is the page loaded, or the same
      // screen still loading: the same picture, clock included.
      EXPECT_NE(gen[i - 1].screen.dump().find("Loading"), std::string::npos);
      if (gen[i].screen == gen[i - 1].screen) EXPECT_EQ(gen[i].clock, gen[i - 1].clock);
      ++after_wait;
    }
  }
  EXPECT_GT(shots, 0u);
  EXPECT_LT(shots, gen.size());
  (void)after_wait;  // the seed decides whether an episode waits
  // Every step: a screenshot everywhere.
  o.screenshots = GenOptions::Screenshots::All;
  for (const auto& g : generate_trace(o)) EXPECT_TRUE(g.screenshot);
  // Screens still loading after the first wait (--unchanged-rate 1): each repeats once, the same
  // screenshot and clock; with 0, every action changes the screen.
  size_t repeats = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    GenOptions still = screenshot_episode(GenOptions::Screenshots::All, 8);
    still.seed = seed;
    still.unchanged_rate = 1.0;
    const auto same = generate_trace(still);
    for (size_t i = 1; i < same.size(); ++i)
      if (same[i].screen == same[i - 1].screen) {
        EXPECT_EQ(same[i].clock, same[i - 1].clock);
        EXPECT_EQ(same[i].history.back().action.kind, ActionKind::Wait);
        ++repeats;
      }
    still.unchanged_rate = 0.0;
    const auto moving = generate_trace(still);
    for (size_t i = 1; i < moving.size(); ++i) EXPECT_NE(moving[i].screen, moving[i - 1].screen);
  }
  EXPECT_GT(repeats, 0u);
}

TEST(Screenshots, RequestBodyAndLogImagesAsTheServerHasThem) {
  auto& tm = http::testing::TinyModel::get();
  const auto gen = generate_trace(screenshot_episode(GenOptions::Screenshots::All, 2));
  ScreenStyle st;
  st.width = 180;
  st.height = 390;
  st.app = gen[0].record.app;
  const std::vector<uint8_t> png = encode_png(render_screen(gen[0].screen, st));
  // A record's image file, read from beside the trace.
  const std::string dir = ::testing::TempDir() + "/tandem-agent-shot-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/s.png", std::ios::binary).write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  TraceRecord rec = gen[0].record;
  rec.image = "s.png";
  const ojson body = request_body(rec, dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(body, with_screenshot(rec.body, png));
  EXPECT_TRUE(has_images(body));
  EXPECT_FALSE(has_images(rec.body));
  const auto& parts = body["messages"].back()["content"];
  ASSERT_TRUE(parts.is_array());
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]["text"], rec.body["messages"].back()["content"]);
  EXPECT_EQ(parts[1]["image_url"]["url"].get<std::string>().rfind("data:image/png;base64,", 0), 0u);
  rec.image = "missing.png";
  EXPECT_THROW(request_body(rec, "/nonexistent-dir"), TraceError);

  ImageLayout layout;
  layout.budget.max_tokens = 16;
  const RequestTokens text = tokenize_request(*tm.tok, tm.tmpl, gen[0].record.body);
  const RequestTokens t = tokenize_request(*tm.tok, tm.tmpl, body, layout);
  ASSERT_EQ(t.images.size(), 1u);
  const serve::ImageChunk c = t.images[0];
  EXPECT_GT(c.rows(), 0);
  EXPECT_LE(c.rows(), 16);
  // The text, the image's placeholder rows, then the end of the message and the generation prompt.
  for (int64_t i = c.begin; i < c.end(); ++i) ASSERT_EQ(t.ids[static_cast<size_t>(i)], serve::image_placeholder(c.id));
  EXPECT_GT(static_cast<int64_t>(t.ids.size()), c.end());
  EXPECT_EQ(t.user_starts, text.user_starts);
  // Another budget: another grid and another identity.
  layout.budget.max_tokens = 64;
  const RequestTokens t64 = tokenize_request(*tm.tok, tm.tmpl, body, layout);
  ASSERT_EQ(t64.images.size(), 1u);
  EXPECT_GT(t64.images[0].rows(), c.rows());
  EXPECT_NE(t64.images[0].id, c.id);
  // A request's own budget wins over the server's.
  ojson own = body;
  own["image_max_tokens"] = 16;
  EXPECT_TRUE(tokenize_request(*tm.tok, tm.tmpl, own, layout).images[0].same_image(c));

  // The log's image chunks replace the trace's.
  ojson log = {{"output", {1, 2}}, {"images", ojson::array({ojson{{"begin", c.begin}, {"nx", c.nx}, {"ny", c.ny}, {"id", c.id + 1}}})}};
  const serve::RecordedRequest r = recorded_request_from_log(t, log);
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_EQ(r.images[0].id, c.id + 1);
  EXPECT_EQ(recorded_request(t, {1, 2}).images.size(), 1u);
  log["images"] = ojson::array({ojson{{"begin", "x"}}});
  EXPECT_THROW(recorded_request_from_log(t, log), std::invalid_argument);
}

TEST(ReplayModelVsServer, EqualsTheServersRequestLogOnAScreenshotEpisode) {
  auto& tm = http::testing::TinyModel::get();
  // Two single screens and an episode of 6 steps; every step has a screenshot but the 2nd and
  // 5th of the episode (text steps between screenshot steps).
  GenOptions o = screenshot_episode(GenOptions::Screenshots::All, 6);
  o.single_screens = 2;
  const auto gen = generate_trace(o);
  ASSERT_EQ(gen.size(), 8u);
  std::vector<ojson> bodies;
  size_t n_shots = 0;
  for (size_t i = 0; i < gen.size(); ++i) {
    const auto& g = gen[i];
    if (g.record.step == 2 || g.record.step == 5) {
      bodies.push_back(g.record.body);
      continue;
    }
    // Step 4 sees step 3's screen again (the same screenshot: an encoder-cache hit).
    const auto& shown = g.record.step == 4 ? gen[i - 1] : g;
    ScreenStyle st;
    st.width = 180;
    st.height = 390;
    st.app = shown.record.app;
    st.clock = shown.clock;
    bodies.push_back(with_screenshot(g.record.body, encode_png(render_screen(shown.screen, st))));
    ++n_shots;
  }
  ImageLayout base;
  base.patch_size = tm.vision()->hparams().patch_size;
  base.merge = tm.vision()->hparams().merge;

  std::map<std::string, int64_t> new_tokens;
  for (const char* flags : {"--checkpoint-policy stock --consolidate-batches off", "--checkpoint-policy divergence",
                            "--checkpoint-policy divergence --checkpoint-before-image on",
                            "--checkpoint-policy divergence --encoder-cache 0"}) {
    SCOPED_TRACE(flags);
    const ServeSettings st = parse_config(std::string(flags) + " --image-max-tokens 16");
    serve::EngineConfig cfg = st;  // the configuration is the server's EngineConfig
    cfg.n_parallel = 1;
    std::vector<ojson> log;
    testing::serve_and_log(cfg, bodies, ::testing::TempDir() + "/tandem-agent-image-log-" + std::to_string(::getpid()) + ".jsonl",
                           log, /*with_vision=*/true);
    if (HasFatalFailure()) return;
    ImageLayout layout = base;
    layout.budget = st.images.budget;
    std::vector<serve::RecordedRequest> recorded;
    std::vector<RequestTokens> reqs;
    for (size_t i = 0; i < bodies.size(); ++i) {
      reqs.push_back(tokenize_request(*tm.tok, tm.tmpl, bodies[i], layout));
      const RequestTokens& t = reqs.back();
      ASSERT_EQ(log[i]["prompt"].get<std::vector<int32_t>>(), t.ids) << "request " << i + 1;
      ASSERT_EQ(log[i]["user_starts"].get<std::vector<int64_t>>(), t.user_starts) << "request " << i + 1;
      const size_t logged = log[i].contains("images") ? log[i]["images"].size() : 0;
      ASSERT_EQ(logged, t.images.size()) << "request " << i + 1;
      for (size_t k = 0; k < logged; ++k) {
        const auto& im = log[i]["images"][k];
        EXPECT_TRUE(t.images[k].same_image({im["begin"].get<int64_t>(), im["nx"].get<int>(), im["ny"].get<int>(),
                                            im["id"].get<uint64_t>()}))
            << "request " << i + 1 << " image " << k;
      }
      recorded.push_back(recorded_request_from_log(t, log[i]));
    }
    const auto sim = simulate(recorded, st, tm.model->shape());
    int64_t nr = 0, rows = 0, rows_prefilled = 0, hits = 0;
    size_t with_images = 0;
    for (size_t i = 0; i < bodies.size(); ++i) {
      const auto server = nlohmann::json::parse(log[i]["timings"].dump()).get<serve::RequestStats>();
      EXPECT_TRUE(sim[i].same_counts(server)) << "request " << i + 1 << "\nserver " << nlohmann::json(server).dump()
                                              << "\nsim    " << nlohmann::json(sim[i]).dump();
      EXPECT_EQ(sim[i].image_rows_prefilled, server.image_rows_prefilled) << "request " << i + 1;
      EXPECT_EQ(sim[i].images_encoded, server.images_encoded) << "request " << i + 1;
      EXPECT_EQ(sim[i].encoder_cache_hits, server.encoder_cache_hits) << "request " << i + 1;
      hits += server.encoder_cache_hits;
      nr += server.new_tokens;
      rows += server.image_rows;
      rows_prefilled += server.image_rows_prefilled;
      with_images += server.images > 0;
    }
    EXPECT_EQ(with_images, n_shots);
    // The repeated screen comes from the encoder cache unless it is off.
    if (std::string(flags).find("--encoder-cache 0") == std::string::npos) EXPECT_EQ(hits, 1);
    else EXPECT_EQ(hits, 0);
    EXPECT_GT(rows_prefilled, 0);
    EXPECT_LE(rows_prefilled, rows);
    new_tokens[flags] = nr;
    std::printf("%-60s server == sim on %zu requests (N-R %lld, image rows prefilled %lld of %lld, cache hits %lld)\n",
                flags, bodies.size(), static_cast<long long>(nr), static_cast<long long>(rows_prefilled),
                static_cast<long long>(rows), static_cast<long long>(hits));
  }
  // Stock reprocesses the text before each screenshot; divergence restores it.
  EXPECT_LT(new_tokens["--checkpoint-policy divergence"], new_tokens["--checkpoint-policy stock --consolidate-batches off"]);
}

}  // namespace
}  // namespace tandem::agent
