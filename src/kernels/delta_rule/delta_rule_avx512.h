// AVX-512 bodies of the gated delta rule (delta_rule_avx512.cpp, compiled with that
// tier's flags). Call only after the run-time dispatch in delta_rule.cpp has checked
// the tier, and only for d a multiple of 16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/delta_rule/delta_rule.h"

namespace tandem::kernels::avx512 {

void delta_rule_recurrent(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from);

// Floats of 64-byte aligned workspace delta_rule_chunked needs for head size d.
size_t delta_rule_chunked_workspace_floats(int d);

void delta_rule_chunked(const DeltaRuleInput& in, float* state, float* workspace, const int64_t* cuts, int n_cuts,
                        float* cut_states);

}  // namespace tandem::kernels::avx512
