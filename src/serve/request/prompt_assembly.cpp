#include "serve/request/prompt_assembly.h"

#include <memory>
#include <stdexcept>

#include "serve/request/request_error.h"
#include "serve/request/request_image.h"
#include "vision/image_decode.h"

namespace tandem::serve {

namespace {

// A text that cannot fit the context whatever it tokenizes to (PromptContext::max_token_bytes)
// is refused before the work proportional to it.
void check_prompt_size(size_t bytes, const PromptContext& ctx, const char* field) {
  if (ctx.max_token_bytes == 0 || ctx.n_ctx <= 0) return;
  const uint64_t least = bytes / (3 * ctx.max_token_bytes);
  if (least >= static_cast<uint64_t>(ctx.n_ctx))
    throw RequestError(std::string("'") + field + "' has " + std::to_string(bytes) + " bytes: at least " +
                           std::to_string(least) + " tokens, more than a slot's context of " +
                           std::to_string(ctx.n_ctx) + " tokens",
                       field);
}

// The chat request with each message that has image parts as one text, the marker where each
// image was: what llama.cpp's server renders.
text::ChatRequest with_markers(const text::ChatRequest& chat, const std::string& marker) {
  text::ChatRequest out = chat;
  out.add_generation_prompt = true;
  for (text::ChatMessage& m : out.messages) {
    bool has_image = false;
    for (const text::ChatContentPart& p : m.parts) has_image = has_image || p.kind == text::ChatContentPart::Kind::Image;
    if (!m.content_is_parts || !has_image) continue;
    std::string text;
    bool prev_text = false;
    for (const text::ChatContentPart& p : m.parts) {
      if (p.kind == text::ChatContentPart::Kind::Image) {
        text += marker;
        prev_text = false;
        continue;
      }
      if (prev_text) text += "\n";
      text += p.text;
      prev_text = true;
    }
    m.content = std::move(text);
    m.content_is_parts = false;
    m.parts.clear();
  }
  return out;
}

text::ChatPrompt render(const text::ChatRequest& chat, const PromptContext& ctx) {
  if (!ctx.tmpl) throw std::logic_error("assemble_prompt: a chat prompt needs a chat template");
  try {
    return ctx.tmpl->render(chat);
  } catch (const text::ChatTemplateError& e) {
    throw RequestError(std::string("messages: ") + e.what(), "messages");
  }
}

// The images decoded and laid out under the request's budget, then `text` split at the markers:
// out's prompt, images and user starts.
void lay_out_images(const PromptInput& in, std::string_view text, const PromptContext& ctx, EngineRequest& out) {
  const std::string field = in.field();
  if (!ctx.image_params)
    throw RequestError("the request has images but this server has no vision model (start it with --mmproj FILE)", field);
  if (static_cast<int64_t>(in.images.size()) > ctx.max_images)
    throw RequestError("the request has " + std::to_string(in.images.size()) + " images; this server accepts at most " +
                           std::to_string(ctx.max_images) + " per request (--max-images)",
                       field);
  vision::PreprocessParams params;
  try {
    params = ctx.image_params(in.image_budget);
    vision::validate(params);
  } catch (const std::invalid_argument& e) {
    throw RequestError(std::string("image budget: ") + e.what(), "image_max_tokens");
  }
  out.images.clear();
  for (size_t i = 0; i < in.images.size(); ++i) {
    const auto refuse = [&](const std::exception& e) {
      return RequestError("'" + field + "': image " + std::to_string(i) + ": " + e.what(), field);
    };
    try {
      const vision::RgbImage decoded = vision::decode_image(in.images[i]);
      if (ctx.keep_pixels) {
        out.images.push_back(request_image(decoded, params, in.image_budget));
      } else {
        RequestImage im;
        im.chunk = image_chunk(decoded, params);
        im.budget = in.image_budget;
        out.images.push_back(std::move(im));
      }
    } catch (const vision::ImageError& e) {  // undecodable, truncated, above a limit
      throw refuse(e);
    } catch (const std::invalid_argument& e) {  // a size the budget cannot lay out
      throw refuse(e);
    }
  }
  vision::MultimodalPromptOptions mo;
  mo.marker = ctx.media_marker;
  std::vector<vision::PromptChunk> chunks;
  try {
    chunks = vision::tokenize_multimodal(*ctx.tok, text, in.images.size(), mo);
  } catch (const std::invalid_argument& e) {
    throw RequestError("'" + field + "': " + e.what(), field);
  }
  flatten_prompt(chunks, out.images, out.prompt);
  if (out.prompt.empty()) throw RequestError("'" + field + "': the prompt is empty", field);
  if (!out.images.empty() && out.images.back().chunk.end() == static_cast<int64_t>(out.prompt.size()))
    throw RequestError("'" + field + "': the prompt ends with an image; text must follow it", field);
  out.user_starts = find_user_starts(*ctx.tok, out.prompt, ctx.tmpl);
}

}  // namespace

EngineRequest assemble_prompt(const Request& req, const PromptContext& ctx) {
  if (!ctx.tok) throw std::logic_error("assemble_prompt: no tokenizer");
  const PromptInput& in = req.prompt;
  EngineRequest out;
  if (in.form == PromptInput::Form::Chat) {
    const text::ChatPrompt rendered = render(with_markers(in.chat, ctx.media_marker), ctx);
    if (in.images.empty()) {
      check_prompt_size(rendered.text.size(), ctx, "messages");
      text::ChatTokens ct = text::tokenize_chat(*ctx.tok, rendered);
      out.prompt = std::move(ct.ids);
      out.user_starts = std::move(ct.user_starts);  // the template family's user spans
    } else {
      // The rendered text holds a media marker per image: tokenized around them as mtmd does.
      lay_out_images(in, rendered.text, ctx, out);
    }
  } else if (!in.images.empty()) {
    if (in.raw.size() != 1 || in.raw[0].is_token)
      throw RequestError("with 'multimodal_data' the prompt must be a string", "prompt");
    lay_out_images(in, in.raw[0].text, ctx, out);
  } else {
    size_t bytes = 0;
    for (const PromptPiece& p : in.raw) bytes += p.is_token ? 0 : p.text.size();
    check_prompt_size(bytes, ctx, "prompt");
    out.prompt = prompt_tokens(in.raw, *ctx.tok, "prompt", /*add_special=*/true);
    if (out.prompt.empty()) throw RequestError("'prompt' is empty", "prompt");
    out.user_starts = find_user_starts(*ctx.tok, out.prompt, ctx.tmpl);
  }
  out.params = req.params;
  return out;
}

std::string render_chat_text(const Request& req, const PromptContext& ctx) {
  if (req.prompt.form != PromptInput::Form::Chat) throw std::logic_error("render_chat_text: not a chat request");
  return render(with_markers(req.prompt.chat, ctx.media_marker), ctx).text;
}

std::vector<int32_t> prompt_tokens(std::span<const PromptPiece> pieces, const text::Tokenizer& tok,
                                   const std::string& field, bool add_special) {
  std::vector<int32_t> ids;
  const int32_t n_vocab = tok.n_vocab();
  // add_special as llama.cpp's tokenize_mixed: BOS (when the vocabulary adds one) only before a
  // text that comes first.
  text::EncodeOptions first;
  first.add_special = add_special;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const PromptPiece& p = pieces[i];
    if (!p.is_token) {
      tok.encode(p.text, ids, i == 0 ? first : text::EncodeOptions{});
      continue;
    }
    if (p.token < 0 || p.token >= n_vocab)
      throw RequestError("'" + field + "': token id " + std::to_string(p.token) + " at index " + std::to_string(i) +
                             " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")",
                         field);
    ids.push_back(static_cast<int32_t>(p.token));
  }
  return ids;
}

std::vector<int64_t> find_user_starts(const text::Tokenizer& tok, std::span<const int32_t> tokens,
                                      const text::ChatTemplate* tmpl) {
  const std::string_view delimiter =
      tmpl ? tmpl->user_delimiter() : text::chat_template_user_delimiter(text::ChatTemplateFamily::ChatML);
  return text::find_user_starts(tok, tokens, delimiter);
}

}  // namespace tandem::serve
