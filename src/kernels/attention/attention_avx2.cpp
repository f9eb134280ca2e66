// Compiled with -mavx2 -mfma (CMakeLists.txt); nothing with external linkage but the header's.
// attention_rows as attention_blocks.h writes it, on F32x8.
#include "kernels/attention/attention_avx2.h"

#include "kernels/attention/attention_blocks.h"
#include "kernels/simd/simd_avx2.h"

namespace tandem::kernels::avx2 {

void attention_rows(int n, const float* const* q, float* const* out, const int64_t* n_kv, int hd, float scale,
                    const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores) {
  attention_rows_on<F32x8>(n, q, out, n_kv, hd, scale, k_cache, v_cache, kv_stride, scores);
}

}  // namespace tandem::kernels::avx2
