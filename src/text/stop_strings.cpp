#include "text/stop_strings.h"

#include <algorithm>

namespace tandem::text {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

void StopStrings::reset() {
  pending_.clear();
  stopped_ = false;
}

std::string_view StopStrings::push(std::string_view text) {
  out_.clear();
  if (stopped_) return out_;
  pending_.append(text);
  // Earliest complete stop string.
  size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    out_.assign(pending_, 0, cut);
    pending_.clear();
    stopped_ = true;
    return out_;
  }
  // Hold back the longest suffix that is a prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k) {
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  out_.assign(pending_, 0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out_;
}

std::string_view StopStrings::flush() {
  out_.clear();
  if (!stopped_) out_.swap(pending_);
  pending_.clear();
  return out_;
}

}  // namespace tandem::text
