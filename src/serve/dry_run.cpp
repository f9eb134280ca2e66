#include "serve/dry_run.h"

namespace tandem::serve {

std::unique_ptr<Slot> make_dry_run_slot(std::unique_ptr<CheckpointPolicy> policy, SlotConfig cfg,
                                        const NullBackend& backend) {
  return std::make_unique<Slot>(std::make_unique<NullBackend>(backend), std::move(policy), cfg);
}

std::vector<RequestStats> replay(Slot& slot, std::span<const RecordedRequest> requests) {
  std::vector<RequestStats> out;
  out.reserve(requests.size());
  for (const RecordedRequest& r : requests) {
    slot.prefill(Prompt{r.prompt, r.user_starts});
    for (int32_t t : r.output) slot.decode(t);
    out.push_back(slot.end_request());
  }
  return out;
}

}  // namespace tandem::serve
