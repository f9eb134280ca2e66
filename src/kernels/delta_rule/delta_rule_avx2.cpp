// Compiled with -mavx2 -mfma (CMakeLists.txt); nothing with external linkage but the
// header's. The per-token recurrence of delta_rule_loops.h on F32x8 (8 keys per register).
#include "kernels/delta_rule/delta_rule_avx2.h"

#include "kernels/delta_rule/delta_rule_loops.h"
#include "kernels/simd/simd_avx2.h"

namespace tandem::kernels::avx2 {

void delta_rule_recurrent(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from) {
  delta_rule_recurrent_on<F32x8>(in, state, snapshots, snapshot_from);
}

}  // namespace tandem::kernels::avx2
