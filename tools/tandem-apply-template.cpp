// tandem-apply-template: renders chat templates from the command line, as the server would.
//
//   tandem-apply-template TEMPLATE.jinja < contexts.jsonl
//       The Jinja interpreter on TEMPLATE: each input line is a JSON object of the template's
//       variables (messages, tools, add_generation_prompt, bos_token, ...); each output line is
//       {"prompt": "..."}, {"raised": "..."} (the template called raise_exception) or
//       {"error": "..."}. A template the interpreter cannot load: {"load_error": "..."}, exit 2.
//   tandem-apply-template --chat [--bos T] [--eos T] [--add-bos] TEMPLATE < requests.jsonl
//       As tandem-server renders a chat request (a native family when the template is one, else
//       the interpreter): each line {"messages": [...], "tools"?, "add_generation_prompt"?,
//       "enable_thinking"?, "chat_template_kwargs"?}; the output also names the renderer.
// tests/text/jinja_oracle.py runs it against python3-jinja2.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "text/chat_template.h"
#include "text/jinja/template.h"

using tandem::text::Json;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: tandem-apply-template [--chat [--bos TEXT] [--eos TEXT] [--add-bos]] TEMPLATE < lines.jsonl\n");
  return 2;
}

void answer(const Json& j) {
  std::cout << j.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n" << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  bool chat = false;
  std::string path;
  tandem::text::ChatTemplateTokens tokens;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--chat") chat = true;
    else if (a == "--bos" && i + 1 < argc) tokens.bos_token = argv[++i];
    else if (a == "--eos" && i + 1 < argc) tokens.eos_token = argv[++i];
    else if (a == "--add-bos") tokens.add_bos = true;
    else if (a == "-h" || a == "--help") return usage(), 0;
    else if (path.empty() && a.rfind("--", 0) != 0) path = a;
    else return usage();
  }
  if (path.empty()) return usage();
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "tandem-apply-template: cannot read %s\n", path.c_str());
    return 1;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string source = ss.str();

  std::optional<tandem::text::jinja::Template> tmpl;
  std::optional<tandem::text::ChatTemplate> chat_tmpl;
  try {
    if (chat) chat_tmpl = tandem::text::ChatTemplate::from_gguf_template(source, tokens);
    else tmpl = tandem::text::jinja::Template::parse(source);
  } catch (const std::exception& e) {
    answer({{"load_error", e.what()}});
    return 2;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    Json in;
    try {
      in = Json::parse(line);
    } catch (const std::exception& e) {
      answer({{"error", std::string("bad input line: ") + e.what()}});
      continue;
    }
    try {
      if (chat) {
        tandem::text::ChatRequest req = tandem::text::ChatRequest::from_json(in);
        if (in.contains("chat_template_kwargs") && in["chat_template_kwargs"].is_object()) {
          req.template_kwargs = in["chat_template_kwargs"];
          if (req.template_kwargs.contains("enable_thinking") && req.template_kwargs["enable_thinking"].is_boolean())
            req.enable_thinking = req.template_kwargs["enable_thinking"].get<bool>();
        }
        answer({{"prompt", chat_tmpl->render(req).text}, {"renderer", chat_tmpl->name()}});
      } else {
        answer({{"prompt", tmpl->render(in)}});
      }
    } catch (const tandem::text::jinja::RaisedError& e) {
      answer({{"raised", e.what()}});
    } catch (const std::exception& e) {
      answer({{"error", e.what()}});
    }
  }
  return 0;
}
