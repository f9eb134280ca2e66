// The cost-free simulation backend in use: the same Slot, policy, planner and Speculator objects
// as the server, over recorded token streams, with a NullBackend instead of the network. The
// replay simulator (tandem-sim) and Marconi's alpha tuning are built on this, so the counts they
// predict are the server's by construction.
//
// Speculation: what the MTP head proposes and which drafts the target accepts depends on the
// weights, so the dry run takes both from the server's request log (per step: drafts verified,
// drafts accepted — RecordedRequest::step_drafted / step_accepted). Given those, everything
// else is computed, not copied: the tokens each step feeds and keeps, the verification passes,
// the roll-backs, the positions, and through them the next request's restore, passes and
// checkpoints.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "serve/backend/null_backend.h"
#include "serve/backend/recorded_request.h"
#include "serve/meter/request_stats.h"
#include "serve/policy/checkpoint_policy.h"
#include "serve/slot/slot.h"

namespace tandem::serve {

std::unique_ptr<Slot> make_dry_run_slot(std::unique_ptr<CheckpointPolicy> policy, SlotConfig cfg,
                                        const NullBackend& backend);

// Prefills each request, feeds its output tokens (through decode, or through speculative steps
// when the slot has speculation enabled: then every request needs its logged steps,
// std::invalid_argument otherwise), ends it; one RequestStats per request (timings are those of
// the dry run, i.e. meaningless; the counts are the server's).
std::vector<RequestStats> replay(Slot& slot, std::span<const RecordedRequest> requests);

}  // namespace tandem::serve
