// The cost-free simulation backend in use: the same Slot, policy and planner objects as the
// server, over recorded token streams, with a NullBackend instead of the network. The replay
// simulator (tandem-sim) and Marconi's alpha tuning are built on this, so the counts they
// predict are the server's by construction.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "serve/checkpoint_policy.h"
#include "serve/null_backend.h"
#include "serve/recorded_request.h"
#include "serve/request_stats.h"
#include "serve/slot.h"

namespace tandem::serve {

std::unique_ptr<Slot> make_dry_run_slot(std::unique_ptr<CheckpointPolicy> policy, SlotConfig cfg,
                                        const NullBackend& backend);

// Prefills each request, feeds its output tokens through decode, ends it; one RequestStats per
// request (timings are those of the dry run, i.e. meaningless; the counts are the server's).
std::vector<RequestStats> replay(Slot& slot, std::span<const RecordedRequest> requests);

}  // namespace tandem::serve
