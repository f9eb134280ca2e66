// Compiled with -mavx2 -mfma -mf16c (see CMakeLists.txt). Nothing here may have external
// linkage except the kRowKernels table: every kernel and helper is in an anonymous namespace
// (row_loop.h's loop too) and no library template or inline function is used (one compiled with
// -mavx2 could be picked by the linker for a generic translation unit).
#include "kernels/matmul/matmul_avx2.h"

#include <immintrin.h>

#include <type_traits>

#include "kernels/matmul/row_loop.h"

namespace tandem::kernels::avx2 {
namespace {

float h2f(uint16_t h) { return _cvtsh_ss(h); }

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__m256i loadu256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
__m128i loadu128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Q4_0 / Q8_0 against block_q8_0 activations: per 32-element block, the signed weights
// q are made unsigned (|q|) once and their sign moved onto each column's activations
// (ggml's mul_sum_i8_pairs): maddubs(|q|, sign(y, q)) = q * y pairwise, exact in int16,
// then madd with ones to int32.

// The signed codes (-8..7) of a Q4_0 block: low nibbles are elements 0..15, high nibbles
// 16..31 (the order of y.qs).
__m256i nibbles(const uint8_t* qs) {  // unsigned 0..15, in element order
  const __m128i t = loadu128(qs);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}
__m256i q4_0_codes(const BlockQ4_0& x) { return _mm256_sub_epi8(nibbles(x.qs), _mm256_set1_epi8(8)); }

// The sum of the int16 pairs p16 (madd with ones to int32, then the eight lanes), converted, in
// lane 0: a block's integer dot product.
__m128 block_sum(__m256i p16) {
  const __m256i dot = _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(dot), _mm256_extracti128_si256(dot, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtepi32_ps(s);
}

// Σ q·y of one block with signed codes q (aq = |q|), in lane 0.
__m128 q8_block_sum(__m256i aq, __m256i q, const int8_t* y) {
  return block_sum(_mm256_maddubs_epi16(aq, _mm256_sign_epi8(loadu256(y), q)));
}

// Q4_0 accumulates in the order of ggml's repacked Q4_0 GEMV/GEMM (ggml_gemv_q4_0_8x8_q8_0,
// which llama.cpp runs for Q4_0 weights on x86): each block's whole integer sum is converted
// and added with one FMA by d_w * d_y, block after block. With ggml's vec_dot order instead
// (per-lane FMAs, one horizontal sum at the end) the golden a-Q4_0 logits missed their
// ref-B bound at the first token; in this order they are within it.
template <int NC>
struct Q4_0Row {
  static void run(const BlockQ4_0* w, int64_t nb, const BlockQ8_0* const* a, float* out) {
    __m128 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i q = q4_0_codes(w[b]);
      const __m256i aq = _mm256_abs_epi8(q);
      const float dw = h2f(w[b].d);
      for (int c = 0; c < NC; ++c) {
        const BlockQ8_0& yb = a[c][b];
        acc[c] = _mm_fmadd_ss(q8_block_sum(aq, q, yb.qs), _mm_set_ss(dw * h2f(yb.d)), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) out[c] = _mm_cvtss_f32(acc[c]);
  }
};

// Decode GEMV (one column): four rows at a time, four independent FMA chains sharing the
// activation loads. Each row's operations are those of Q4_0Row, so the results are equal
// bit for bit.
struct Q4_0Rows4 {
  static void run(const uint8_t* w, size_t stride, int64_t nb, const BlockQ8_0* a, float* out) {
    __m128 acc[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    for (int64_t b = 0; b < nb; ++b) {
      const float dy = h2f(a[b].d);
      for (int r = 0; r < 4; ++r) {
        const BlockQ4_0& x = reinterpret_cast<const BlockQ4_0*>(w + static_cast<size_t>(r) * stride)[b];
        const __m256i q = q4_0_codes(x);
        acc[r] = _mm_fmadd_ss(q8_block_sum(_mm256_abs_epi8(q), q, a[b].qs), _mm_set_ss(h2f(x.d) * dy), acc[r]);
      }
    }
    for (int r = 0; r < 4; ++r) out[r] = _mm_cvtss_f32(acc[r]);
  }
};

// The legacy 5-bit and offset types, Q5_0 (q − 16, against block_q8_0), Q4_1 and Q5_1 (d·q + m,
// q unsigned, against block_q8_1, whose s = d_y · Σ y gives the offset term m · s). The fifth
// bits (qh, bit j for element j) are spread to one byte each: byte i of a 32-bit word picked by
// a shuffle, tested against the bit 1 << (i % 8).
__m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, 4);
  const __m256i bytes = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
}

// The 32 codes of a legacy block, unsigned (0..15 or 0..31), in element order.
template <typename Block>
__m256i legacy_codes(const Block& x) {
  const __m256i q = nibbles(x.qs);
  if constexpr (std::is_same_v<Block, BlockQ4_1>) return q;
  else return _mm256_or_si256(q, fifth_bits(x.qh));
}

// Σ q·y of one block in lane 0 (q unsigned: maddubs takes it as it is).
__m128 unsigned_block_sum(__m256i q, const int8_t* y) { return block_sum(_mm256_maddubs_epi16(q, loadu256(y))); }

// Block after block, one FMA of the block's integer sum by d_w · d_y (and for Q4_1 / Q5_1 one
// more of m_w by s_y), as Q4_0Row.
template <int NC>
struct LegacyRow {
  template <typename Block, typename Act>
  static void run(const Block* w, int64_t nb, const Act* const* a, float* out) {
    __m128 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i q = legacy_codes(w[b]);
      const float dw = h2f(w[b].d);
      if constexpr (std::is_same_v<Block, BlockQ5_0>) {
        const __m256i sq = _mm256_sub_epi8(q, _mm256_set1_epi8(16));  // signed codes −16..15
        const __m256i aq = _mm256_abs_epi8(sq);
        for (int c = 0; c < NC; ++c) {
          const Act& yb = a[c][b];
          acc[c] = _mm_fmadd_ss(q8_block_sum(aq, sq, yb.qs), _mm_set_ss(dw * h2f(yb.d)), acc[c]);
        }
      } else {
        const float mw = h2f(w[b].m);
        for (int c = 0; c < NC; ++c) {
          const Act& yb = a[c][b];
          acc[c] = _mm_fmadd_ss(unsigned_block_sum(q, yb.qs), _mm_set_ss(dw * h2f(yb.d)), acc[c]);
          acc[c] = _mm_fmadd_ss(_mm_set_ss(mw), _mm_set_ss(h2f(yb.s)), acc[c]);
        }
      }
    }
    for (int c = 0; c < NC; ++c) out[c] = _mm_cvtss_f32(acc[c]);
  }
};

// Q8_0 keeps ggml's AVX2 vec_dot order (per-lane FMAs, one horizontal sum at the end): the
// golden Q8_0 files' first-token logits then equal llama.cpp's bit for bit.
template <int NC>
struct Q8_0Row {
  static void run(const BlockQ8_0* w, int64_t nb, const BlockQ8_0* const* a, float* out) {
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i q = loadu256(w[b].qs);
      const __m256i aq = _mm256_abs_epi8(q);  // |q| (as unsigned: -128 -> 128)
      const float dw = h2f(w[b].d);
      for (int c = 0; c < NC; ++c) {
        const BlockQ8_0& yb = a[c][b];
        const __m256i p16 = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(loadu256(yb.qs), q));
        const __m256i dot = _mm256_madd_epi16(p16, ones);
        acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * h2f(yb.d)), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum(acc[c]);
  }
};

// Q4_K against block_q8_K: the 4-bit codes are unsigned already (maddubs takes them as
// they are); each 32-element sub-block's int16 pair sums are multiplied by its 6-bit
// scale in the madd to int32. The mins term goes to its own 4-lane accumulator, with
// pairs of sub-blocks per lane, and the two are added at the end: the lane layout and
// float order of ggml's AVX2 vec_dot_q4_K_q8_K.
// Q5_K: the same with a fifth bit per code from qh (bit 2j of byte l for element 64j + l, bit
// 2j + 1 for element 64j + 32 + l) ORed in as 16; maddubs pairs stay below 31 * 127 * 2.
template <int NC>
struct Q4_KRow {
  template <typename Block>
  static void run(const Block* w, int64_t nb, const BlockQ8_K* const* a, float* out) {
    constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
    __m256 acc[NC];
    __m128 acc_m[NC];
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm256_setzero_ps();
      acc_m[c] = _mm_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i) {
      const Block& b = w[i];
      const float d = h2f(b.d), dmin = h2f(b.dmin);
      int sc[8], mn[8];
      for (int j = 0; j < 8; ++j) k4_scale_min(j, b.scales, &sc[j], &mn[j]);
      // Sub-block k (elements 32k .. 32k+31): low nibbles of qs[32j..] for k = 2j, high for 2j+1.
      __m256i q[8], s[8];
      // Q5_K: the block's fifth bits, read once for its four chunks.
      [[maybe_unused]] const __m256i H = [&] {
        if constexpr (kFifthBit) return loadu256(b.qh);
        else return _mm256_setzero_si256();
      }();
      [[maybe_unused]] const __m256i one = _mm256_set1_epi8(1);
      for (int j = 0; j < 4; ++j) {
        const __m256i v = loadu256(b.qs + 32 * j);
        q[2 * j] = _mm256_and_si256(v, m4);
        q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if constexpr (kFifthBit) {
          q[2 * j] = _mm256_or_si256(
              q[2 * j], _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(H, _mm_cvtsi32_si128(2 * j)), one), 4));
          q[2 * j + 1] = _mm256_or_si256(
              q[2 * j + 1], _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(H, _mm_cvtsi32_si128(2 * j + 1)), one), 4));
        }
        s[2 * j] = _mm256_set1_epi16(static_cast<short>(sc[2 * j]));
        s[2 * j + 1] = _mm256_set1_epi16(static_cast<short>(sc[2 * j + 1]));
      }
      const __m128i mins = _mm_setr_epi16(static_cast<short>(mn[0]), static_cast<short>(mn[1]),
                                          static_cast<short>(mn[2]), static_cast<short>(mn[3]),
                                          static_cast<short>(mn[4]), static_cast<short>(mn[5]),
                                          static_cast<short>(mn[6]), static_cast<short>(mn[7]));
      for (int c = 0; c < NC; ++c) {
        const BlockQ8_K& y = a[c][i];
        __m256i isum = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k) {
          const __m256i p16 = _mm256_maddubs_epi16(q[k], loadu256(y.qs + 32 * k));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, s[k]));
        }
        // Lane j of the 16-element sums: bsums[2j] + bsums[2j+1], the sum of sub-block j.
        const __m256i bs = loadu256(y.bsums);
        const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m128i prod = _mm_madd_epi16(mins, q8s);
        acc_m[c] = _mm_fmadd_ps(_mm_set1_ps(-y.d * dmin), _mm_cvtepi32_ps(prod), acc_m[c]);
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y.d * d), _mm256_cvtepi32_ps(isum), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) {
      __m128 m = _mm_add_ps(acc_m[c], _mm_movehl_ps(acc_m[c], acc_m[c]));
      m = _mm_add_ss(m, _mm_movehdup_ps(m));
      out[c] = hsum(acc[c]) + _mm_cvtss_f32(m);
    }
  }
};

// Q6_K against block_q8_K: the stored 6-bit codes are q + 32; q = code - 32 goes through
// the sign trick as Q8_0 does, which gives exactly ggml's int16 pair sums
// (maddubs(code, y) - maddubs(32, y)) at the cost of one sign per chunk instead of a second
// maddubs. Each 16-element sub-block's pair sums then get its int8 scale in the madd; the
// int32 lanes are those of ggml's AVX2 vec_dot_q6_K_q8_K, and so is the float order. (The sign trick
// needs activations in [-127, 127], which quantize_activation guarantees.)
template <int NC>
struct Q6_KRow {
  static void run(const BlockQ6_K* w, int64_t nb, const BlockQ8_K* const* a, float* out) {
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03), m32 = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < nb; ++i) {
      const BlockQ6_K& b = w[i];
      const float d = h2f(b.d);
      // Chunk k covers elements 32k .. 32k+31 (sub-blocks 2k and 2k+1).
      __m256i q[8], aq[8], s[8];
      for (int h = 0; h < 2; ++h) {
        const __m256i A0 = loadu256(b.ql + 64 * h), A1 = loadu256(b.ql + 64 * h + 32);
        const __m256i H = loadu256(b.qh + 32 * h);
        q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(A0, m4), _mm256_slli_epi16(_mm256_and_si256(H, m3), 4));
        q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(A1, m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 2), m3), 4));
        q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A0, 4), m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 4), m3), 4));
        q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A1, 4), m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 6), m3), 4));
      }
      for (int k = 0; k < 8; ++k) {
        q[k] = _mm256_sub_epi8(q[k], m32);
        aq[k] = _mm256_abs_epi8(q[k]);
        s[k] = _mm256_set_m128i(_mm_set1_epi16(b.scales[2 * k + 1]), _mm_set1_epi16(b.scales[2 * k]));
      }
      for (int c = 0; c < NC; ++c) {
        const BlockQ8_K& y = a[c][i];
        __m256i isum = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k) {
          const __m256i p16 = _mm256_maddubs_epi16(aq[k], _mm256_sign_epi8(loadu256(y.qs + 32 * k), q[k]));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, s[k]));
        }
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y.d * d), _mm256_cvtepi32_ps(isum), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum(acc[c]);
  }
};

// F32 / F16 rows on 8-float registers (FloatRow): the partial step loaded masked (F32) or through
// a zero-padded copy (F16).
struct Lanes {
  using Acc = __m256;
  static constexpr int64_t kStep = 8;
  static __m256 zero() { return _mm256_setzero_ps(); }
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static __m256 load(const uint16_t* p) { return _mm256_cvtph_ps(loadu128(p)); }
  static __m256 load_tail(const float* p, int64_t k) {
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(k)),
                                                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  }
  static __m256 load_tail(const uint16_t* p, int64_t k) {
    alignas(16) uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = 0; j < k; ++j) buf[j] = p[j];
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
  }
  static __m256 fma(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(__m256 v) { return hsum(v); }
  template <typename T>
  static void prefetch(const T*, int64_t) {}
};
template <int NC>
using FloatLanesRow = FloatRow<Lanes, NC>;

}  // namespace

const RowKernels<const BlockQ8_0*> kRowKernels = {
    .q4_0 = rows_by_columns_gemv4<BlockQ4_0, Q4_0Row, Q4_0Rows4>, .q8_0 = rows_by_columns<BlockQ8_0, Q8_0Row>,
    .q5_0 = rows_by_columns<BlockQ5_0, LegacyRow>, .q4_1 = rows_by_columns<BlockQ4_1, LegacyRow>,
    .q5_1 = rows_by_columns<BlockQ5_1, LegacyRow>, .q4_K = rows_by_columns<BlockQ4_K, Q4_KRow>,
    .q5_K = rows_by_columns<BlockQ5_K, Q4_KRow>, .q6_K = rows_by_columns<BlockQ6_K, Q6_KRow>,
    .f32 = rows_by_columns<float, FloatLanesRow>, .f16 = rows_by_columns<uint16_t, FloatLanesRow>};

}  // namespace tandem::kernels::avx2
