#include "text/reasoning.h"

#include <array>
#include <utility>

#include "text/tag_scan.h"

namespace tandem::text {

namespace {

constexpr std::string_view kOpenThink = "<think>";
constexpr std::string_view kCloseThink = "</think>";

constexpr std::array<std::pair<std::string_view, ReasoningFormat>, 4> kFormats{{
    {"none", ReasoningFormat::None},
    {"auto", ReasoningFormat::Auto},
    {"deepseek", ReasoningFormat::Deepseek},
    {"deepseek-legacy", ReasoningFormat::DeepseekLegacy},
}};

}  // namespace

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name) {
  for (const auto& [n, f] : kFormats)
    if (n == name) return f;
  return std::nullopt;
}

const char* reasoning_format_name(ReasoningFormat f) {
  for (const auto& [n, g] : kFormats)
    if (g == f) return n.data();
  return "none";
}

const char* reasoning_format_names() { return "none, auto, deepseek or deepseek-legacy"; }

ReasoningSplitter::ReasoningSplitter(bool starts_inside) : state_(starts_inside ? State::Reasoning : State::Start) {}

void ReasoningSplitter::push(std::string_view piece, std::string& reasoning, std::string& content) {
  if (state_ == State::Content) {
    content.append(piece);
    return;
  }
  held_.append(piece);
  advance(reasoning, content, /*at_end=*/false);
}

void ReasoningSplitter::finish(std::string& reasoning, std::string& content) {
  advance(reasoning, content, /*at_end=*/true);
  held_.clear();
}

void ReasoningSplitter::advance(std::string& reasoning, std::string& content, bool at_end) {
  for (;;) {
    switch (state_) {
      case State::Start: {
        const size_t blanks = leading_blanks(held_);
        const std::string_view rest = std::string_view(held_).substr(blanks);
        if (rest.starts_with(kOpenThink)) {
          held_.erase(0, blanks + kOpenThink.size());
          state_ = State::Reasoning;
          continue;
        }
        if (!at_end && kOpenThink.starts_with(rest)) return;  // blanks so far, or the tag's beginning
        state_ = State::Content;
        continue;
      }
      case State::Reasoning: {
        if (!reasoning_begun_) held_.erase(0, leading_blanks(held_));
        // Blanks before the end are held: they are stripped if </think> follows them.
        const size_t close = held_.find(kCloseThink);
        const size_t settled = close != std::string::npos ? without_trailing_blanks(std::string_view(held_).substr(0, close))
                               : at_end                   ? without_trailing_blanks(held_)
                                                          : settled_before_tag(held_, kCloseThink);
        if (settled > 0) {
          reasoning.append(held_, 0, settled);
          reasoning_begun_ = true;
        }
        if (close == std::string::npos) {
          held_.erase(0, at_end ? held_.size() : settled);
          return;
        }
        held_.erase(0, close + kCloseThink.size());
        state_ = State::AfterReasoning;
        continue;
      }
      case State::AfterReasoning: {
        const size_t blanks = leading_blanks(held_);
        held_.erase(0, blanks);
        if (held_.empty()) return;
        state_ = State::Content;
        continue;
      }
      case State::Content:
        content.append(held_);
        held_.clear();
        return;
    }
  }
}

SplitAnswer split_reasoning(std::string_view answer, bool starts_inside) {
  SplitAnswer out;
  ReasoningSplitter s(starts_inside);
  s.push(answer, out.reasoning, out.content);
  s.finish(out.reasoning, out.content);
  return out;
}

bool streams_reasoning(ReasoningFormat f) { return f == ReasoningFormat::Auto || f == ReasoningFormat::Deepseek; }

}  // namespace tandem::text
