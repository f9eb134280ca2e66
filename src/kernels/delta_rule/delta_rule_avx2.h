// AVX2 body of the per-token gated delta rule (delta_rule_avx2.cpp, compiled with -mavx2 -mfma),
// for CPUs without AVX-512. The recurrence of delta_rule_recurrent_ref, 8 keys per register:
// per value row j, one sweep decays the row and reads k·S, a second writes the delta-rule
// update and reads q·S (FMA, and sums in another order than the reference: equal within
// rounding, not bit for bit). Each token's operations do not depend on how many tokens the call
// has, so a batch equals token-by-token calls bit for bit (what speculative verification needs).
// Call only after delta_rule.cpp's dispatch has checked the tier, and only for d a multiple of 8.
#pragma once

#include <cstdint>

#include "kernels/delta_rule/delta_rule.h"

namespace tandem::kernels::avx2 {

void delta_rule_recurrent(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from);

}  // namespace tandem::kernels::avx2
