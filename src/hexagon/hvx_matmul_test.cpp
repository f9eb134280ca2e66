// The HVX Q4_0 / Q8_0 products (kernels/matmul/matmul_hvx.cpp) run by the op server under
// qemu-hexagon-static, against the scalar reference (vec_dot_ref) bit for bit, on random inputs
// with row counts that are not multiples of the 32-row group and widths of any block count; the
// column-shared product (1 + k columns) against the same reference column by column. Skipped
// with the reason when the DSP build or the emulator is absent (TANDEM_HEXAGON_REQUIRED=1, as
// CI's hexagon stage sets, makes that a failure).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/quants.h"
#include "hexagon/hexagon_test_util.h"
#include "kernels/activation_quant/activation_quant.h"
#include "kernels/matmul/vec_dot.h"

namespace tandem::hexagon {
namespace {

struct Shape {
  GgmlType type;
  int rows, cols, columns;
  float weight_scale = 0.5f;  // 1e-5: block scales that are fp16 subnormals
};

std::vector<uint8_t> random_weight_rows(std::mt19937& rng, GgmlType type, int rows, int cols, float scale) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> x(cols);
  std::vector<uint8_t> q(row_bytes(type, cols) * rows);
  for (int r = 0; r < rows; ++r) {
    for (float& v : x) v = nd(rng);
    quantize_row(type, x.data(), q.data() + row_bytes(type, cols) * r, cols);
  }
  return q;
}

class HvxMatmul : public ::testing::TestWithParam<Shape> {};

TEST_P(HvxMatmul, EqualsTheScalarReferenceBitForBit) {
  TANDEM_OP_SERVER_OR_SKIP(dsp);
  const Shape s = GetParam();
  std::mt19937 rng(1000u * s.rows + s.cols + s.columns);
  const std::vector<uint8_t> w = random_weight_rows(rng, s.type, s.rows, s.cols, s.weight_scale);
  std::vector<uint8_t> a(row_bytes(GgmlType::Q8_0, s.cols) * s.columns);
  {
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> x(s.cols);
    for (int c = 0; c < s.columns; ++c) {
      for (float& v : x) v = nd(rng);
      kernels::quantize_activation(CpuTier::Scalar, GgmlType::Q8_0, x.data(), a.data() + row_bytes(GgmlType::Q8_0, s.cols) * c, s.cols);
    }
  }
  const uint32_t m = dsp->load_matrix(s.type, s.rows, s.cols, w.data());
  std::vector<float> out(static_cast<size_t>(s.rows) * s.columns);
  dsp->matmul(m, a.data(), s.columns, out.data());
  int mismatches = 0;
  for (int c = 0; c < s.columns; ++c)
    for (int r = 0; r < s.rows; ++r) {
      const float ref = kernels::vec_dot_ref(s.type, s.cols, w.data() + row_bytes(s.type, s.cols) * r,
                                             a.data() + row_bytes(GgmlType::Q8_0, s.cols) * c);
      const float got = out[static_cast<size_t>(c) * s.rows + r];
      if (std::memcmp(&ref, &got, sizeof ref) != 0 && ++mismatches <= 5)
        ADD_FAILURE() << "column " << c << " row " << r << ": HVX " << got << " reference " << ref;
    }
  EXPECT_EQ(mismatches, 0);
  // The first column alone gives the same bits as within the shared product.
  std::vector<float> one(s.rows);
  dsp->matmul(m, a.data(), 1, one.data());
  EXPECT_EQ(std::memcmp(one.data(), out.data(), sizeof(float) * s.rows), 0);
  dsp->release(m);
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& i) {
  return std::string(ggml_type_name(i.param.type)) + "_" + std::to_string(i.param.rows) + "x" +
         std::to_string(i.param.cols) + "_cols" + std::to_string(i.param.columns) + (i.param.weight_scale < 1e-3f ? "_tiny" : "");
}

// Rows: one, under a group, a group and one over, several groups with a remainder; widths of
// 1, 3, 5 and 40 blocks; 1 column (decode), 4 (1 + 3 drafts) and the maximum, 8; tiny weights
// whose block scales are fp16 subnormals.
INSTANTIATE_TEST_SUITE_P(Shapes, HvxMatmul,
                         ::testing::Values(Shape{GgmlType::Q8_0, 1, 32, 1}, Shape{GgmlType::Q4_0, 1, 32, 1},
                                           Shape{GgmlType::Q8_0, 31, 96, 4}, Shape{GgmlType::Q4_0, 33, 96, 4},
                                           Shape{GgmlType::Q8_0, 100, 160, 8}, Shape{GgmlType::Q4_0, 100, 160, 8},
                                           Shape{GgmlType::Q8_0, 257, 1280, 4}, Shape{GgmlType::Q4_0, 257, 1280, 4},
                                           Shape{GgmlType::Q8_0, 40, 64, 2, 1e-5f}, Shape{GgmlType::Q4_0, 40, 64, 2, 1e-5f}),
                         shape_name);

}  // namespace
}  // namespace tandem::hexagon
