// The dotprod tier's Q4_0 / Q8_0 row kernels (matmul_neon.h): the shared body with SDOT, two per
// 32-weight block and column. Compiled with -march=armv8.2-a+dotprod (CMakeLists.txt); called only
// when the hwcaps report ASIMDDP (runtime/cpu_features.h).
#include <arm_neon.h>

#include <type_traits>

#include "kernels/matmul/matmul_neon.h"

namespace tandem::kernels::dotprod {

constexpr int kMaxCols = kMaxRowCols;
#include "kernels/matmul/matmul_neon_body.h"

const RowKernels<const BlockQ8_0*> kRowKernels = {.q4_0 = detail::rows_q<BlockQ4_0>,
                                                  .q8_0 = detail::rows_q<BlockQ8_0>,
                                                  .q4_K = detail::rows_k4<BlockQ4_K>,
                                                  .q5_K = detail::rows_k4<BlockQ5_K>,
                                                  .q6_K = detail::rows_k6};

}  // namespace tandem::kernels::dotprod
