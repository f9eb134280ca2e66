// tandem-run: generate text with a qwen35 GGUF model.
//
//   tandem-run -m model.gguf -p "Hello" -n 16
//   tandem-run -m model.gguf --chat messages.json --no-think --temp 0.7 --seed 1
//
// --chat takes an OpenAI-style JSON file: a messages array, or {"messages": [...], "tools": [...],
// "enable_thinking": false}; it is rendered with the model's chat template (text/chat_template.h)
// with the generation prompt. -p text is tokenized as is (control tokens like <|im_start|> are
// recognized unless --no-special). The text is printed as it is generated; timings go to stderr.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/architectures.h"
#include "text/chat_template.h"
#include "text/sampler.h"
#include "text/stop_strings.h"
#include "text/tokenizer.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "vision/multimodal_prompt.h"
#include "vision/vision_model.h"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: tandem-run -m MODEL.gguf (-p TEXT | -f FILE | --chat MESSAGES.json) [options]\n"
               "  -n N                  tokens to generate (default 64)\n"
               "  --ctx N               context size (default: prompt + n, at most the model's)\n"
               "  --temp T              temperature, 0 = greedy (default 0.8)\n"
               "  --top-k K --top-p P --min-p P           (defaults 40, 0.95, 0.05)\n"
               "  --repeat-penalty R --presence-penalty P --frequency-penalty F --repeat-last-n N\n"
               "  --seed S              RNG seed (default 0); the same seed gives the same output\n"
               "  --stop STR            stop string (repeatable)\n"
               "  --ignore-eos          keep going after end-of-generation tokens\n"
               "  --no-think / --think  chat: enable_thinking = false / true\n"
               "  --no-special          -p/-f: do not parse control tokens in the text\n"
               "  --mmproj FILE         the vision tower (mmproj GGUF) for --image\n"
               "  --image FILE          an image (PNG, JPEG, BMP, GIF, ...; repeatable): each goes where the\n"
               "                        prompt says <__media__>; a -p/-f prompt without the marker gets the\n"
               "                        images in front of its text\n"
               "  --image-min-tokens N --image-max-tokens N   llama.cpp's token budget per image (8, 4096)\n");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem;
  using namespace tandem::text;
  std::string model_path, prompt, prompt_file, chat_file;
  bool have_prompt = false, ignore_eos = false, parse_special = true;
  std::optional<bool> thinking;
  int n_predict = 64;
  int64_t n_ctx = 0;
  SamplerParams sp;
  std::vector<std::string> stops;
  std::string mmproj_path;
  std::vector<std::string> image_paths;
  vision::ImageBudget budget;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "-m" || a == "--model") model_path = next();
      else if (a == "-p" || a == "--prompt") { prompt = next(); have_prompt = true; }
      else if (a == "-f" || a == "--file") prompt_file = next();
      else if (a == "--chat") chat_file = next();
      else if (a == "-n" || a == "--n-predict") n_predict = std::stoi(next());
      else if (a == "--ctx" || a == "-c") n_ctx = std::stoll(next());
      else if (a == "--temp") sp.temperature = std::stof(next());
      else if (a == "--top-k") sp.top_k = std::stoi(next());
      else if (a == "--top-p") sp.top_p = std::stof(next());
      else if (a == "--min-p") sp.min_p = std::stof(next());
      else if (a == "--repeat-penalty") sp.repeat_penalty = std::stof(next());
      else if (a == "--presence-penalty") sp.presence_penalty = std::stof(next());
      else if (a == "--frequency-penalty") sp.frequency_penalty = std::stof(next());
      else if (a == "--repeat-last-n") sp.penalty_last_n = std::stoi(next());
      else if (a == "--seed") sp.seed = std::stoull(next());
      else if (a == "--stop") stops.push_back(next());
      else if (a == "--ignore-eos") ignore_eos = true;
      else if (a == "--no-think") thinking = false;
      else if (a == "--think") thinking = true;
      else if (a == "--no-special") parse_special = false;
      else if (a == "--mmproj") mmproj_path = next();
      else if (a == "--image") image_paths.push_back(next());
      else if (a == "--image-min-tokens") budget.min_tokens = std::stoi(next());
      else if (a == "--image-max-tokens") budget.max_tokens = std::stoi(next());
      else if (a == "-h" || a == "--help") { usage(); return 0; }
      else throw std::invalid_argument("unknown argument '" + a + "'");
    }
    if (model_path.empty()) throw std::invalid_argument("-m MODEL.gguf is required");
    if (!prompt_file.empty()) { prompt = read_file(prompt_file); have_prompt = true; }
    if (have_prompt == !chat_file.empty()) throw std::invalid_argument("give exactly one of -p, -f or --chat");
    if (n_predict < 0) throw std::invalid_argument("-n must be >= 0");
    if (!image_paths.empty() && mmproj_path.empty()) throw std::invalid_argument("--image needs --mmproj MMPROJ.gguf");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-run: %s\n", e.what());
    usage();
    return 2;
  }

  try {
    const auto t_load = std::chrono::steady_clock::now();
    auto model = load_model(model_path, LoadOptions{});
    const auto tok = Tokenizer::from_gguf(model->file());
    const double load_ms = ms_since(t_load);

    // The prompt text (chat-rendered or as given), then its chunks: text tokens and, with
    // --image, image chunks where the markers are (vision/multimodal_prompt.h).
    std::string text;
    if (!chat_file.empty()) {
      const ChatTemplate tmpl = ChatTemplate::from_gguf_template(tok->vocab().chat_template(), chat_template_tokens(*tok));
      if (!tmpl.exact()) std::fprintf(stderr, "tandem-run: warning: %s\n", tmpl.note().c_str());
      ChatRequest req = ChatRequest::from_json(Json::parse(read_file(chat_file)));
      req.add_generation_prompt = true;
      if (thinking) req.enable_thinking = thinking;
      const ChatPrompt rendered = tmpl.render(req);
      text = rendered.text;
      if (!image_paths.empty() && text.find(vision::kDefaultMediaMarker) == std::string::npos)
        throw std::invalid_argument(std::string("--chat with --image: put ") + vision::kDefaultMediaMarker +
                                    " in a message's content where each image goes");
      if (image_paths.empty()) {
        const ChatTokens ct = tokenize_chat(*tok, rendered);
        std::fprintf(stderr, "chat template: %s; %zu messages; last user message starts at token %d\n",
                     chat_template_family_name(tmpl.family()), ct.message_starts.size(), ct.last_user_start());
      }
    } else {
      text = prompt;
      if (!image_paths.empty() && text.find(vision::kDefaultMediaMarker) == std::string::npos) {
        std::string markers;
        for (size_t i = 0; i < image_paths.size(); ++i) markers += vision::kDefaultMediaMarker;
        text = markers + text;
      }
    }
    vision::MultimodalPromptOptions mo;
    mo.parse_special = parse_special || !chat_file.empty();
    const std::vector<vision::PromptChunk> chunks = vision::tokenize_multimodal(*tok, text, image_paths.size(), mo);
    std::vector<vision::ImageEmbedding> images;
    if (!image_paths.empty()) {
      vision::VisionLoadOptions vo;
      auto vm = vision::VisionModel::load(mmproj_path, vo);
      vm->check_text_model(model->shape().n_embd, model_path);
      for (const std::string& path : image_paths) {
        const std::string bytes = read_file(path);
        const auto t_img = std::chrono::steady_clock::now();
        const vision::PreprocessedImage img = vision::preprocess(
            vision::decode_image(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())),
            vm->preprocess_params(budget));
        vision::ImageEmbedding e;
        const vision::EncodeStats st = vm->encode(img, e.rows);
        e.nx = st.nx;
        e.ny = st.ny;
        std::fprintf(stderr, "image %s: %dx%d -> %d tokens, encoded in %.1f ms\n", path.c_str(), img.width, img.height,
                     st.nx * st.ny, ms_since(t_img));
        images.push_back(std::move(e));
      }
    }
    std::vector<int32_t> ids;  // the text tokens (what the sampler's penalties see)
    for (const auto& c : chunks) ids.insert(ids.end(), c.tokens.begin(), c.tokens.end());
    if (ids.empty() && images.empty()) throw std::invalid_argument("the prompt is empty");
    for (int32_t id : ids)
      if (id >= model->shape().n_vocab)
        throw std::runtime_error("prompt token " + std::to_string(id) + " is outside the model's embedding (" +
                                 std::to_string(model->shape().n_vocab) + " rows)");
    const int64_t prompt_rows = vision::multimodal_prompt_rows(chunks, images);

    const int64_t max_ctx = model->shape().context_length > 0 ? model->shape().context_length : INT64_MAX;
    if (n_ctx <= 0) n_ctx = std::min<int64_t>(prompt_rows + n_predict, max_ctx);
    if (prompt_rows >= n_ctx)
      throw std::invalid_argument("prompt (" + std::to_string(prompt_rows) + " tokens and image rows) does not fit the context (" +
                                  std::to_string(n_ctx) + ")");
    auto seq = model->new_sequence(n_ctx);

    // The prompt is echoed (an image as [image NxM]), then the continuation streams after it.
    for (const auto& c : chunks) {
      const std::string shown = c.kind == vision::PromptChunk::Kind::Text
                                    ? tok->decode(c.tokens)
                                    : "[image " + std::to_string(images[static_cast<size_t>(c.image)].nx) + "x" +
                                          std::to_string(images[static_cast<size_t>(c.image)].ny) + "]";
      std::fwrite(shown.data(), 1, shown.size(), stdout);
    }
    std::fflush(stdout);

    Sampler sampler(sp);
    for (int32_t id : ids) sampler.accept(id);
    StreamDecoder stream(*tok, /*render_special=*/false);
    StopStrings stop(stops);
    ForwardOptions opt;  // LogitsMode::Last: one row
    ForwardOutput out;

    const auto t_prompt = std::chrono::steady_clock::now();
    vision::prefill_multimodal(*model, *seq, chunks, images, opt, out);
    const double prompt_ms = ms_since(t_prompt);

    const auto t_gen = std::chrono::steady_clock::now();
    int n_gen = 0;
    const char* reason = "length";
    int32_t next = 0;
    while (n_gen < n_predict) {
      next = sampler.sample(std::span<const float>(out.logits_row(0), static_cast<size_t>(out.n_vocab)));
      sampler.accept(next);
      ++n_gen;
      if (!ignore_eos && tok->vocab().is_eog(next)) {
        reason = "end of generation token";
        break;
      }
      const std::string_view piece = stop.push(stream.push(next));
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      if (stop.stopped()) {
        reason = "stop string";
        break;
      }
      if (n_gen == n_predict) break;
      if (seq->n_past() + 1 > n_ctx) {
        reason = "context full";
        break;
      }
      model->forward(*seq, std::span<const int32_t>(&next, 1), opt, out);
    }
    const double gen_ms = ms_since(t_gen);
    if (!stop.stopped()) {
      const std::string_view tail = stop.push(stream.flush());
      std::fwrite(tail.data(), 1, tail.size(), stdout);
      const std::string_view rest = stop.flush();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);

    std::fprintf(stderr, "\nload:       %8.1f ms\n", load_ms);
    std::fprintf(stderr, "prompt:     %8.1f ms  %5lld rows  %8.1f rows/s\n", prompt_ms, static_cast<long long>(prompt_rows),
                 prompt_ms > 0 ? 1000.0 * static_cast<double>(prompt_rows) / prompt_ms : 0.0);
    std::fprintf(stderr, "generation: %8.1f ms  %5d tokens  %8.1f tok/s  (stopped: %s)\n", gen_ms, n_gen,
                 gen_ms > 0 ? 1000.0 * n_gen / gen_ms : 0.0, reason);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-run: %s\n", e.what());
    return 1;
  }
  return 0;
}
