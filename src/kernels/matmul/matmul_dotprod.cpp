// The dotprod tier's Q4_0 / Q8_0 row kernels (matmul_neon.h): the shared body with SDOT, two per
// 32-weight block and column. Compiled with -march=armv8.2-a+dotprod (CMakeLists.txt); called only
// when the hwcaps report ASIMDDP (runtime/cpu_features.h).
#include <arm_neon.h>

#include <type_traits>

#include "kernels/matmul/matmul_neon.h"

namespace tandem::kernels::dotprod {
constexpr int kMaxCols = neon::kMaxCols;
#include "kernels/matmul/matmul_neon_body.h"
}  // namespace tandem::kernels::dotprod
