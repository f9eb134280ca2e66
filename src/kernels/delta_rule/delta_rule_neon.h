// NEON body of the per-token gated delta rule (delta_rule_neon.cpp), for every Arm tier (dotprod
// and i8mm add nothing for floats). The recurrence of delta_rule_recurrent_ref with four keys per
// register and two registers a step, as the AVX2 body does with eight: per value row j, one sweep
// decays the row and reads k·S, a second writes the delta-rule update and reads q·S (fused
// multiply-adds, sums in another order than the reference: equal within rounding, not bit for
// bit). Each token's operations do not depend on how many tokens the call has, so a batch equals
// token-by-token calls bit for bit (what speculative verification needs).
// Call only after delta_rule.cpp's dispatch has checked the tier, and only for d a multiple of 8.
#pragma once

#include <cstdint>

#include "kernels/delta_rule/delta_rule.h"

namespace tandem::kernels::neon {

void delta_rule_recurrent(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from);

}  // namespace tandem::kernels::neon
