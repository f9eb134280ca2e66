// The HVX Q4_0 / Q8_0 products (matmul_hvx.h). vrmpy multiplies unsigned bytes by the four
// signed bytes of a scalar register and adds each lane's four products: with lane r holding four
// codes of weight row r and the register four activation codes, 8 vrmpy make 32 rows' block sums
// at once, the register broadcast standing in for a splatted activation vector. Signed weight
// codes are stored as unsigned ones with an offset (Q4_0's nibbles are already, code − 8; Q8_0's
// bytes are flipped to code + 128) and the offset's share, offset · Σ activation codes, is taken
// off once per block and column: the sums stay exact integers. The float step has no vector unit
// on v67 (qf32 needs v68, and is not IEEE), so it runs on the scalar FPU in the reference's order.
#include "kernels/matmul/matmul_hvx.h"

#include <hexagon_types.h>
#include <hvx_hexagon_protos.h>

namespace tandem::kernels::hvx {
namespace {

constexpr int kQK = 32;                  // elements per block
constexpr int kVectorBytes = 128;
constexpr int kWordsPerBlock = kQK / 4;  // one vrmpy operand per 4 codes

struct Layout {
  int block_bytes;       // of the gguf block: fp16 scale then codes
  int vectors_per_block; // per group of 32 rows
  int32_t offset;        // what the unsigned codes carry
};

Layout layout_of(uint32_t type) {
  if (type == kTypeQ4_0) return {2 + kQK / 2, 4, 8};
  return {2 + kQK, 8, 128};
}

// A block scale, bit-exact as gguf's fp16_to_fp32 on the host (normals, subnormals, infinities).
float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise the mantissa, one exponent step per shift
    exp = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

size_t align_up(size_t n) { return (n + kVectorBytes - 1) & ~static_cast<size_t>(kVectorBytes - 1); }

int groups_of(int rows) { return (rows + kRowsPerGroup - 1) / kRowsPerGroup; }  // a shift: 32 is a power of two

size_t codes_bytes(uint32_t type, int rows, int cols) {
  return static_cast<size_t>(groups_of(rows)) * (cols / kQK) * layout_of(type).vectors_per_block * kVectorBytes;
}

// A prepared column (prepare_column): the fields' places in its bytes.
struct Column {
  const uint32_t* words;  // [block][8]
  const float* scale;     // [block]
  const int32_t* bias;    // [block]: −offset · Σ codes
};

Column column_at(const void* memory, int cols) {
  const int blocks = cols / kQK;
  auto* base = static_cast<const uint8_t*>(memory);
  return {reinterpret_cast<const uint32_t*>(base), reinterpret_cast<const float*>(base + blocks * kQK),
          reinterpret_cast<const int32_t*>(base + blocks * (kQK + 4))};
}

// The reference's float step for a block of 32 rows: acc += (float(sum) · d_w) · d_a. Written
// four rows a step, each operation for the four rows together, since clang-14's Hexagon scheduler
// kept a plain loop's rows one after the other (one float operation per packet).
void float_step(const int32_t* __restrict sums, const float* __restrict dw, float da, float* __restrict acc) {
  for (int r = 0; r < kRowsPerGroup; r += 4) {
    float p[4];
    for (int i = 0; i < 4; ++i) p[i] = static_cast<float>(sums[r + i]);
    for (int i = 0; i < 4; ++i) p[i] = p[i] * dw[r + i];
    for (int i = 0; i < 4; ++i) p[i] = p[i] * da;
    for (int i = 0; i < 4; ++i) acc[r + i] = acc[r + i] + p[i];
  }
}

}  // namespace

size_t gguf_matrix_bytes(uint32_t type, int rows, int cols) {
  return static_cast<size_t>(rows) * (cols / kQK) * layout_of(type).block_bytes;
}

size_t packed_matrix_bytes(uint32_t type, int rows, int cols) {
  return codes_bytes(type, rows, cols) + static_cast<size_t>(groups_of(rows)) * (cols / kQK) * kRowsPerGroup * 4;
}

PackedMatrix pack_matrix(uint32_t type, int rows, int cols, const uint8_t* gguf_rows, void* memory) {
  const Layout l = layout_of(type);
  PackedMatrix m;
  m.type = type;
  m.rows = rows;
  m.cols = cols;
  m.groups = groups_of(rows);
  m.blocks = cols / kQK;
  m.codes = static_cast<uint8_t*>(memory);
  m.scales = reinterpret_cast<float*>(m.codes + codes_bytes(type, rows, cols));
  const size_t row_bytes = static_cast<size_t>(m.blocks) * l.block_bytes;
  for (int r = 0; r < rows; ++r) {
    const int g = r / kRowsPerGroup, lane = r % kRowsPerGroup;
    for (int b = 0; b < m.blocks; ++b) {
      const uint8_t* block = gguf_rows + r * row_bytes + b * l.block_bytes;
      const size_t gb = static_cast<size_t>(g) * m.blocks + b;
      m.scales[gb * kRowsPerGroup + lane] = fp16_to_fp32(load_u16(block));
      uint8_t* vectors = m.codes + gb * l.vectors_per_block * kVectorBytes;
      for (int v = 0; v < l.vectors_per_block; ++v)
        for (int j = 0; j < 4; ++j) {
          const uint8_t code = block[2 + 4 * v + j];
          vectors[v * kVectorBytes + 4 * lane + j] = type == kTypeQ4_0 ? code : static_cast<uint8_t>(code ^ 0x80);
        }
    }
  }
  return m;
}

size_t column_bytes(int cols) { return align_up(static_cast<size_t>(cols / kQK) * (kQK + 8)); }

void prepare_column(uint32_t weight_type, int cols, const uint8_t* q8_0_blocks, void* memory) {
  const int blocks = cols / kQK;
  const Column c = column_at(memory, cols);
  auto* words = const_cast<uint32_t*>(c.words);
  auto* scale = const_cast<float*>(c.scale);
  auto* bias = const_cast<int32_t*>(c.bias);
  const int32_t offset = layout_of(weight_type).offset;
  for (int b = 0; b < blocks; ++b) {
    const uint8_t* block = q8_0_blocks + b * (2 + kQK);
    scale[b] = fp16_to_fp32(load_u16(block));
    int32_t sum = 0;
    for (int w = 0; w < kWordsPerBlock; ++w) {
      const uint8_t* q = block + 2 + 4 * w;
      words[b * kWordsPerBlock + w] = q[0] | (q[1] << 8) | (q[2] << 16) | (static_cast<uint32_t>(q[3]) << 24);
      for (int j = 0; j < 4; ++j) sum += static_cast<int8_t>(q[j]);
    }
    bias[b] = -offset * sum;
  }
}

void matmul_columns(const PackedMatrix& m, const void* columns, int n_columns, float* out) {
  const Layout l = layout_of(m.type);
  const size_t stride = column_bytes(m.cols);
  Column col[kMaxColumns];
  for (int c = 0; c < n_columns; ++c) col[c] = column_at(static_cast<const uint8_t*>(columns) + c * stride, m.cols);
  const HVX_Vector low_nibbles = Q6_V_vsplat_R(0x0f0f0f0f);
  alignas(kVectorBytes) int32_t sums[kRowsPerGroup];
  float acc[kMaxColumns][kRowsPerGroup];
  for (int g = 0; g < m.groups; ++g) {
    for (int c = 0; c < n_columns; ++c)
      for (int r = 0; r < kRowsPerGroup; ++r) acc[c][r] = 0.0f;
    const auto* vectors = reinterpret_cast<const HVX_Vector*>(m.codes) + static_cast<size_t>(g) * m.blocks * l.vectors_per_block;
    const float* scales = m.scales + static_cast<size_t>(g) * m.blocks * kRowsPerGroup;
    for (int b = 0; b < m.blocks; ++b, vectors += l.vectors_per_block, scales += kRowsPerGroup) {
      // The block's 8 code vectors, in activation word order (Q4_0: the low nibbles are elements
      // 0..15, words 0..3; the high ones 16..31, words 4..7), unpacked once for every column.
      HVX_Vector w[kWordsPerBlock];
      if (m.type == kTypeQ4_0) {
        for (int v = 0; v < 4; ++v) {
          w[v] = Q6_V_vand_VV(vectors[v], low_nibbles);
          w[v + 4] = Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(vectors[v], 4), low_nibbles);
        }
      } else {
        for (int v = 0; v < kWordsPerBlock; ++v) w[v] = vectors[v];
      }
      for (int c = 0; c < n_columns; ++c) {
        const uint32_t* a = col[c].words + b * kWordsPerBlock;
        HVX_Vector s = Q6_V_vsplat_R(col[c].bias[b]);
        for (int v = 0; v < kWordsPerBlock; ++v) s = Q6_Vw_vrmpyacc_VwVubRb(s, w[v], static_cast<int>(a[v]));
        *reinterpret_cast<HVX_Vector*>(sums) = s;
        float_step(sums, scales, col[c].scale[b], acc[c]);
      }
    }
    const int valid = m.rows - g * kRowsPerGroup < kRowsPerGroup ? m.rows - g * kRowsPerGroup : kRowsPerGroup;
    for (int c = 0; c < n_columns; ++c)
      for (int r = 0; r < valid; ++r) out[static_cast<size_t>(c) * m.rows + g * kRowsPerGroup + r] = acc[c][r];
  }
}

}  // namespace tandem::kernels::hvx
