// tandem-train-data: a trace's (prompt, answer) token pairs for training a policy, tokenized
// exactly as tandem-server tokenizes a request: the body rendered with the model's chat
// template, special tokens on (agent::tokenize_request), and the answer the server would
// sample for the expected action: its compact JSON as the agent's schema writes it, then the
// end-of-turn token (agent::expected_output, without the request's max_tokens cap: a target
// must end with its end-of-turn token).
//
//   tandem-train-data (-m MODEL.gguf | --tokenizer-json tokenizer.json [--chat-template F])
//                     [-o OUT.jsonl] [--tag KEY=VALUE]... TRACE.jsonl...
//
// One JSON line per record with an expected action:
//   {"trace": "t.jsonl", "line": 3, "episode": "e1", "step": 2, "app": "...", "action": "{...}",
//    KEY: VALUE..., "n_vocab": N, "prompt": [ids], "answer": [ids]}
// --tag adds fields (e.g. --tag seed=7: the trainer splits train/validation/test by it; a value
// that is an integer is written as one). Records without an expected action are skipped;
// records with images are refused (the policy is trained on text prompts).
// --tokenizer-json uses a HF tokenizer.json (and its tokenizer_config.json's chat template) as
// tandem-gen-model / tandem-import-weights embed it, so no model file is needed.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/action.h"
#include "agent/request_tokens.h"
#include "agent/trace.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/qwen35/qwen35_generator.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

using namespace tandem;
using ojson = nlohmann::ordered_json;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: tandem-train-data (-m MODEL.gguf | --tokenizer-json FILE [--chat-template FILE])\n"
               "                         [-o OUT.jsonl] [--tag KEY=VALUE]... TRACE.jsonl...\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, tokenizer_json, chat_template, out_path;
  std::vector<std::string> traces;
  std::vector<std::pair<std::string, std::string>> tags;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "-m" || a == "--model") model = value();
      else if (a == "--tokenizer-json") tokenizer_json = value();
      else if (a == "--chat-template") chat_template = value();
      else if (a == "-o") out_path = value();
      else if (a == "--tag") {
        const std::string kv = value();
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--tag: expected KEY=VALUE, got '" + kv + "'");
        tags.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      } else if (!a.empty() && a[0] == '-') throw std::invalid_argument("unknown option " + a);
      else traces.push_back(a);
    }
    if (model.empty() == tokenizer_json.empty()) throw std::invalid_argument("give exactly one of -m and --tokenizer-json");
    if (traces.empty()) throw std::invalid_argument("no trace given");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-train-data: %s\n", e.what());
    usage(stderr);
    return 2;
  }
  try {
    // The tokenizer reads only tokenizer.* keys: from a tokenizer.json, an in-memory GGUF holding
    // just those (the bytes must outlive the file view).
    std::vector<uint8_t> vocab_gguf;
    std::unique_ptr<GgufFile> file;
    if (!model.empty()) {
      file = GgufFile::open(model);
    } else {
      GgufWriter w;
      w.set_string("general.architecture", "qwen35");
      write_qwen35_vocab(w, load_hf_tokenizer(tokenizer_json, chat_template));
      vocab_gguf = w.to_bytes();
      file = GgufFile::from_memory(vocab_gguf.data(), vocab_gguf.size(), tokenizer_json);
    }
    const auto tok = text::Tokenizer::from_gguf(*file);
    const auto tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template(), text::chat_template_tokens(*tok));

    std::ofstream out_file;
    if (!out_path.empty()) {
      out_file.open(out_path);
      if (!out_file) throw std::runtime_error("cannot write '" + out_path + "'");
    }
    std::ostream& out = out_path.empty() ? std::cout : out_file;
    size_t n = 0, skipped = 0, prompt_tokens = 0, answer_max = 0;
    for (const std::string& path : traces) {
      for (agent::TraceRecord rec : agent::read_trace(path)) {
        if (!rec.expected_action) {
          ++skipped;
          continue;
        }
        const std::string where = path + ":" + std::to_string(rec.line);
        if (agent::has_images(rec.body) || !rec.image.empty())
          throw std::runtime_error(where + ": the record carries a screenshot; the policy trains on text prompts");
        const agent::ParseResult p = agent::parse_action(rec.expected_action->dump());
        if (!p.ok()) throw std::runtime_error(where + ": expected_action does not parse as an agent action");
        const agent::RequestTokens t = agent::tokenize_request(*tok, tmpl, rec.body);
        for (const char* key : {"max_tokens", "n_predict", "max_completion_tokens"}) rec.body.erase(key);
        const std::vector<int32_t> answer = agent::expected_output(*tok, rec);
        ojson line;
        line["trace"] = path;
        line["line"] = rec.line;
        if (!rec.episode.empty()) line["episode"] = rec.episode;
        if (rec.step >= 0) line["step"] = rec.step;
        if (!rec.app.empty()) line["app"] = rec.app;
        line["action"] = agent::to_text(*p.action);
        for (const auto& [k, v] : tags) {
          char* end = nullptr;
          const long long x = std::strtoll(v.c_str(), &end, 10);
          if (!v.empty() && *end == '\0') line[k] = x;
          else line[k] = v;
        }
        line["n_vocab"] = tok->vocab().size();
        line["prompt"] = t.ids;
        line["answer"] = answer;
        out << line.dump() << "\n";
        ++n;
        prompt_tokens += t.ids.size();
        answer_max = std::max(answer_max, answer.size());
      }
    }
    std::fprintf(stderr, "%zu pairs (%zu records without an expected action skipped), prompt %.1f tokens mean, "
                 "answer <= %zu tokens\n", n, skipped, n ? double(prompt_tokens) / double(n) : 0.0, answer_max);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-train-data: %s\n", e.what());
    return 1;
  }
  return 0;
}
