#include "serve/policy/checkpoint_policy.h"

#include <algorithm>

namespace tandem::serve {

std::string_view to_string(CheckpointOrigin origin) {
  switch (origin) {
    case CheckpointOrigin::UserMessage: return "user_message";
    case CheckpointOrigin::NearEnd: return "near_end";
    case CheckpointOrigin::Divergence: return "divergence";
    case CheckpointOrigin::Branch: return "branch";
    case CheckpointOrigin::Leaf: return "leaf";
    case CheckpointOrigin::BeforeImage: return "before_image";
    case CheckpointOrigin::Forecast: return "forecast";
    case CheckpointOrigin::Recent: return "recent";
  }
  return "?";
}

void evict_oldest_to_fit(std::span<const Checkpoint> held, int capacity, std::vector<size_t>& evict) {
  // Positions ascend in the held list and every request adds above its restore point, so
  // the front is the oldest.
  size_t remaining = held.size() - evict.size();
  for (size_t i = 0; i < held.size() && remaining >= static_cast<size_t>(capacity); ++i) {
    if (std::find(evict.begin(), evict.end(), i) != evict.end()) continue;
    evict.push_back(i);
    --remaining;
  }
  std::sort(evict.begin(), evict.end());
}

}  // namespace tandem::serve
