// tandem-tokenize: token ids of a text with a GGUF file's tokenizer (and the reverse).
//
//   tandem-tokenize -m model.gguf -p "Hello world"      ids, comma-separated
//   tandem-tokenize -m model.gguf -f prompt.txt --pieces one line per token: id, type, bytes
//   tandem-tokenize -m model.gguf --decode 9707,1879     text of the ids
//   tandem-tokenize -m model.gguf --batch corpus.b64     one record per line, base64 of its bytes;
//                                                         prints {"ids":[...],"rt":true} per record
//   tandem-tokenize -m model.gguf --print-template       tokenizer.chat_template
//   tandem-tokenize -m model.gguf --render-chat cases.json
//       cases: [{"messages": [...], "tools": [...], "add_generation_prompt": bool,
//                "enable_thinking": bool}, ...]; prints a JSON array of
//       {"text": ..., "message_starts": [token index per message], "n_tokens": N} or {"error": ...}
//
// Options: --no-special (do not recognize control tokens in the text), --no-nfc.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: tandem-tokenize -m MODEL.gguf (-p TEXT | -f FILE | --decode IDS | --batch FILE.b64 |\n"
               "                       --print-template | --render-chat CASES.json)\n"
               "                       [--pieces] [--no-special] [--no-nfc]\n");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string base64_decode(std::string_view s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = val(c);
    if (v < 0) continue;  // '=' padding, '\r'
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::string cur;
  for (char c : s + ",") {
    if ((c >= '0' && c <= '9') || c == '-') {
      cur += c;
    } else if (!cur.empty()) {
      ids.push_back(static_cast<int32_t>(std::stol(cur)));
      cur.clear();
    }
  }
  return ids;
}

// Printable form of token bytes for --pieces.
std::string escape(std::string_view b) {
  std::string o;
  for (unsigned char c : b) {
    if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      o += buf;
    } else o += static_cast<char>(c);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem::text;
  std::string model, text, file, decode_ids, batch, render_chat;
  bool have_text = false, pieces = false, print_template = false;
  EncodeOptions eopt;
  TokenizerOptions topt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tandem-tokenize: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-m" || a == "--model") model = next();
    else if (a == "-p" || a == "--prompt") { text = next(); have_text = true; }
    else if (a == "-f" || a == "--file") file = next();
    else if (a == "--decode") decode_ids = next();
    else if (a == "--batch") batch = next();
    else if (a == "--render-chat") render_chat = next();
    else if (a == "--print-template") print_template = true;
    else if (a == "--pieces") pieces = true;
    else if (a == "--no-special") eopt.parse_special = false;
    else if (a == "--no-nfc") topt.nfc = false;
    else if (a == "-h" || a == "--help") { usage(); return 0; }
    else {
      std::fprintf(stderr, "tandem-tokenize: unknown argument '%s'\n", a.c_str());
      usage();
      return 2;
    }
  }
  if (model.empty()) {
    usage();
    return 2;
  }
  try {
    const auto gguf = tandem::GgufFile::open(model);
    const auto tok = Tokenizer::from_gguf(*gguf, topt);

    if (print_template) {
      std::fwrite(tok->vocab().chat_template().data(), 1, tok->vocab().chat_template().size(), stdout);
      return 0;
    }
    if (!render_chat.empty()) {
      const auto cases = nlohmann::ordered_json::parse(read_file(render_chat));
      if (!cases.is_array()) throw std::runtime_error(render_chat + ": expected a JSON array of cases");
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& c : cases) {
        nlohmann::ordered_json r;
        try {
          const ChatTemplate tmpl = ChatTemplate::from_gguf_template(tok->vocab().chat_template(), chat_template_tokens(*tok));
          const ChatRequest req = ChatRequest::from_json(c);
          const ChatPrompt p = tmpl.render(req);
          const ChatTokens t = tokenize_chat(*tok, p);
          r["text"] = p.text;
          r["message_starts"] = t.message_starts;
          r["n_tokens"] = t.ids.size();
        } catch (const std::exception& e) {
          r["error"] = e.what();
        }
        out.push_back(std::move(r));
      }
      std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
      return 0;
    }
    if (!batch.empty()) {
      std::ifstream in(batch, std::ios::binary);
      if (!in) throw std::runtime_error("cannot open '" + batch + "'");
      std::string line, out;
      std::vector<int32_t> ids;
      while (std::getline(in, line)) {
        const std::string rec = base64_decode(line);
        ids.clear();
        tok->encode(rec, ids, eopt);
        out = "{\"ids\":[";
        for (size_t k = 0; k < ids.size(); ++k) {
          if (k) out += ',';
          out += std::to_string(ids[k]);
        }
        out += "],\"rt\":";
        out += tok->decode(ids) == rec ? "true" : "false";
        out += "}\n";
        std::fwrite(out.data(), 1, out.size(), stdout);
      }
      return 0;
    }
    if (!decode_ids.empty()) {
      const std::string s = tok->decode(parse_ids(decode_ids));
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fputc('\n', stdout);
      return 0;
    }
    if (!file.empty()) {
      text = read_file(file);
      have_text = true;
    }
    if (!have_text) {
      std::ostringstream ss;
      ss << std::cin.rdbuf();
      text = ss.str();
    }
    const auto ids = tok->encode(text, eopt);
    if (pieces) {
      for (int32_t id : ids) {
        const char* type = "";
        switch (tok->vocab().token_type(id)) {
          case TokenType::Control: type = " control"; break;
          case TokenType::UserDefined: type = " user"; break;
          default: break;
        }
        std::printf("%d%s\t%s\n", id, type, escape(tok->vocab().token_bytes(id)).c_str());
      }
    } else {
      std::string s;
      for (size_t k = 0; k < ids.size(); ++k) {
        if (k) s += ", ";
        s += std::to_string(ids[k]);
      }
      std::printf("%s\n", s.c_str());
    }
    std::fprintf(stderr, "%zu tokens\n", ids.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-tokenize: %s\n", e.what());
    return 1;
  }
  return 0;
}
