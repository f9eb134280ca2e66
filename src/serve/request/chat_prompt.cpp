#include "serve/request/chat_prompt.h"

#include "serve/request/image_url.h"
#include "serve/request/request_error.h"

namespace tandem::serve {

namespace {

// A string member or "" (another type is the template's or the HTTP layer's error to name).
std::string str(const Json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The image files of a message's parts, in order, with the checks llama.cpp's server makes where
// it turns them into media markers: every part an object, each a text or an image part.
void collect_images(const Json& m, size_t mi, std::vector<std::vector<uint8_t>>& files) {
  const auto content = m.find("content");
  if (content == m.end() || !content->is_array()) return;
  bool has_media = false;
  for (const Json& part : *content) has_media = has_media || is_media_part(part);
  if (!has_media) return;
  const std::string role = str(m, "role");
  const std::string where = "messages[" + std::to_string(mi) + "]";
  for (size_t pi = 0; pi < content->size(); ++pi) {
    const Json& part = (*content)[pi];
    const std::string at = where + ".content[" + std::to_string(pi) + "]";
    if (!part.is_object()) throw RequestError("'" + at + "' must be an object", "messages");
    if (const auto ty = part.find("type"); ty != part.end() && !ty->is_string())
      throw RequestError("'" + at + ".type' must be a string", "messages");
    const std::string type = str(part, "type");
    if (type == "video" || part.contains("video") || type == "input_audio")
      throw RequestError("'" + at + "': video and audio parts are not supported (images only)", "messages");
    if (type == "image_url" || type == "image" || part.contains("image_url") || part.contains("image")) {
      // The Qwen3.5 template's rule ("System message cannot contain images"); user and tool
      // messages (a screenshot a tool returned) may.
      if (role == "system") throw RequestError("'" + at + "': a system message cannot contain images", "messages");
      auto u = part.find("image_url");
      if (u == part.end()) u = part.find("image");
      const Json* url = u != part.end() ? &*u : nullptr;
      if (url && url->is_object()) {
        const auto inner = url->find("url");
        url = inner != url->end() ? &*inner : nullptr;
      }
      if (!url || !url->is_string())
        throw RequestError("'" + at + "': expected \"image_url\": {\"url\": \"data:image/...;base64,...\"}", "messages");
      files.push_back(image_url_bytes(url->get_ref<const std::string&>(), at + ".image_url.url"));
      continue;
    }
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string()) throw RequestError("'" + at + "': expected a text or image_url part", "messages");
  }
}

}  // namespace

bool is_media_part(const Json& part) {
  if (!part.is_object()) return false;
  const std::string type = str(part, "type");
  return part.contains("image_url") || part.contains("image") || part.contains("video") || type == "image_url" ||
         type == "image" || type == "video" || type == "input_audio";
}

PromptInput read_chat_prompt(const Json& body) {
  PromptInput in;
  in.form = PromptInput::Form::Chat;
  Json chat = Json::object();
  if (const auto msgs = body.find("messages"); msgs != body.end()) {
    if (msgs->is_array())
      for (size_t mi = 0; mi < msgs->size(); ++mi)
        if ((*msgs)[mi].is_object()) collect_images((*msgs)[mi], mi, in.images);
    chat["messages"] = *msgs;
  }
  // tool_choice "none": the model may not call, so it is not shown the tools (llama.cpp renders
  // no tools then either); the HTTP layer checks tool_choice's other values.
  const auto choice = body.find("tool_choice");
  const bool no_tools = choice != body.end() && choice->is_string() && *choice == "none";
  if (const auto tools = body.find("tools"); tools != body.end() && !tools->is_null() && !no_tools) chat["tools"] = *tools;
  std::optional<bool> thinking = opt_bool(body, "enable_thinking");
  if (const auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object()) throw RequestError("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    if (auto v = opt_bool(*k, "enable_thinking")) thinking = v;
  }
  try {
    in.chat = text::ChatRequest::from_json(chat);
  } catch (const text::ChatTemplateError& e) {
    throw RequestError(std::string("messages: ") + e.what(), "messages");
  }
  in.chat.enable_thinking = thinking;
  // Every kwarg reaches an interpreted template as a variable (llama.cpp's chat_template_kwargs).
  if (const auto k = body.find("chat_template_kwargs"); k != body.end() && k->is_object()) in.chat.template_kwargs = *k;
  in.chat.add_generation_prompt = true;
  // OpenAI's "developer" is the system role under another name (its newer models' instructions).
  for (text::ChatMessage& m : in.chat.messages)
    if (m.role == "developer") m.role = "system";
  if (!in.images.empty()) in.image_budget = read_image_budget(body);
  return in;
}

vision::ImageBudget read_image_budget(const Json& b) {
  vision::ImageBudget budget;
  if (auto v = opt_int(b, "image_min_tokens", -1, vision::kMaxBudgetTokens)) budget.min_tokens = static_cast<int>(*v);
  if (auto v = opt_int(b, "image_max_tokens", -1, vision::kMaxBudgetTokens)) budget.max_tokens = static_cast<int>(*v);
  if (budget.min_tokens > 0 && budget.max_tokens > 0 && budget.min_tokens > budget.max_tokens)
    throw RequestError("'image_min_tokens' (" + std::to_string(budget.min_tokens) + ") exceeds 'image_max_tokens' (" +
                           std::to_string(budget.max_tokens) + ")",
                       "image_min_tokens");
  return budget;
}

}  // namespace tandem::serve
