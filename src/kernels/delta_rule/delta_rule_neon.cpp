// Armv8.0 Advanced SIMD (the build's default flags on Arm64); nothing with external linkage but the
// header's. The per-token recurrence of delta_rule_loops.h on F32x4 (4 keys per register).
#include "kernels/delta_rule/delta_rule_neon.h"

#include "kernels/delta_rule/delta_rule_loops.h"
#include "kernels/simd/simd_neon.h"

namespace tandem::kernels::neon {

void delta_rule_recurrent(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from) {
  delta_rule_recurrent_on<F32x4>(in, state, snapshots, snapshot_from);
}

}  // namespace tandem::kernels::neon
