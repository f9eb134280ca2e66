// Weight matrices rearranged once, at load, into groups of 16 rows interleaved for the
// kernels ("packed"; WeightMatrix::packed, WeightLayout::Packed): one layout per type, which
// every tier that multiplies packed weights of that type reads. Q4_0 / Q8_0 are in the AMX
// "B tile" order (the tiles, and AVX-512 VNNI's and AVX2's vector units), Q4_K / Q5_K / Q6_K in
// the same 16-row interleave for the vector units (and the tiles, with their scales folded in).
// Which matrices are packed is decided per type and tier by kernels::plan_matrix (matmul.h).
//
// Why: an AMX tile product wants the weights of 16 output rows interleaved four bytes at a
// time (B[k/4][o*4 + k%4]). Rearranging the mmap'd ggml blocks on every call costs a gather
// per block, which is cheap only when it is amortised over many tokens (prefill). With the
// weights stored in tile order, a call with 5..15 tokens unpacks with a few shifts and masks
// per 16 row-blocks instead. The same order suits the vector units: a 64-byte line is 16 rows
// × 4 codes, one VPDPBUSD operand, so 1..4 tokens (decode, a 1+3 verification) and, without
// AMX, every T multiply these groups on AVX-512 VNNI (matmul_amx.h, gemm_packed_vnni), and on
// AVX2 8 rows per register (matmul_packed_avx2.h).
//
// Layout (64-byte aligned), per group of 16 rows (rows past the matrix are zero), per
// 32-element block b (nb = n / 32 blocks):
//  * Q8_0: the 512-byte B tile itself (8 rows of 16 rows × 4 codes);
//  * Q4_0: 256 bytes, byte i holding two tile bytes as nibbles: tile row i/64 in its low
//    nibble, tile row 4 + i/64 in its high nibble, each nibble being (q XOR 8), the 4-bit
//    two's complement of the code q − 8. Masking a nibble into the high half of a byte
//    therefore gives the signed value 16·(q − 8) in one AND (high) or shift + AND (low);
//    the factor 16 is exact and is taken out of the weight scale.
// then the group's nb × 16 scales d_w as fp16 (as in the file). A group takes
// packed_group_bytes(type, n) bytes.
//
// Q6_K (not a tile type: its 16-element sub-blocks each carry an int8 scale) gets the same
// 16-row interleave for the vector units (matmul_kquant_vnni.h): lane o of a 64-byte line is
// row o, 4 consecutive codes, one VPDPBUSD operand, so a multi-token product needs no
// horizontal sums and shares each unpacked line between its tokens. Per group, per
// super-block s (nb = n / 256), at s × 3328 bytes:
//  * per sub-block j (16 elements = 4 code quads), three lines at 192·j: A, B, C, with
//    byte 4·o + e of each being, for row o and e = 0..3 (element 16j + 4m + e of quad m):
//    A = low 4 bits of quad 0 | low 4 bits of quad 1 << 4, B = the same for quads 2 and 3,
//    C = high 2 bits of quads 0, 1, 2, 3 at bits 0, 2, 4, 6. The code (0..63, the value
//    plus 32, as in the file) is (A or B nibble) | (C bits) << 4.
//  * at 3072: the sub-block scales, byte 16·j + o = scale j of row o (int8);
// then the group's nb × 16 super-block scales d as fp16, row o of super-block s at
// s × 16 + o. Exactly the bytes of the ggml blocks (3360 per 16 rows × 256 elements), rows
// past the matrix zero.
//
// Q4_K (eight 32-element sub-blocks per super-block, each with a 6-bit scale and min) gets the
// same interleave (matmul_kquant_vnni.h). Per group, per super-block s, at s × 2368 bytes:
//  * 32 code lines: line 8c + i (chunk c = 0..3 of 64 elements, i = 0..7) holds at byte
//    4·o + e the file's byte qs[32c + 4i + e] of row o: its low nibble is element
//    64c + 4i + e (sub-block 2c), its high nibble element 64c + 32 + 4i + e (sub-block 2c + 1);
//  * at 2048: the sub-block scales, byte 16·j + o = scale j of row o (0..63);
//  * at 2176: the mins in pairs, bytes 32·p + 2·o and 32·p + 2·o + 1 = mins 2p and 2p + 1 of
//    row o (0..63: widened to int16 they are one VPDPWSSD operand per pair of sub-blocks);
//  * at 2304: the 16 rows' d, then at 2336 their dmin (fp16, as in the file).
// 2368 bytes per 16 rows × 256 elements where the file has 2304: the 6-bit scales and mins
// are unpacked once instead of on every pass.
//
// Q5_K (a Q4_K block plus a fifth bit per code) takes the Q4_K layout unchanged and appends, at
// 2368, 8 high-bit lines: line i holds at byte 4·o + e the file's byte qh[4i + e] of row o,
// whose bit 2c is the fifth bit of element 64c + 4i + e (the low nibble of code line 8c + i)
// and bit 2c + 1 that of element 64c + 32 + 4i + e (its high nibble). 2880 bytes per 16 rows ×
// 256 elements where the file has 2816.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gguf/ggml_type.h"

namespace tandem::kernels {

struct WeightMatrix;

// Whether weights of this type can be packed (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K).
bool packable(GgmlType t);
// The Q6_K layout's offsets, shared by the packer and the kernel: a sub-block's three code
// lines, where a super-block's scales start, and the super-block's code and scale bytes.
constexpr size_t kQ6KSubBlockBytes = 192;
constexpr size_t kQ6KScalesOffset = 16 * kQ6KSubBlockBytes;  // 3072
constexpr size_t kQ6KSuperBlockBytes = kQ6KScalesOffset + 16 * 16;  // 3328
// The Q4_K layout's offsets within a super-block (see above).
constexpr size_t kQ4KScalesOffset = 32 * 64;                          // 2048
constexpr size_t kQ4KMinsOffset = kQ4KScalesOffset + 8 * 16;          // 2176
constexpr size_t kQ4KDOffset = kQ4KMinsOffset + 4 * 32;               // 2304
constexpr size_t kQ4KSuperBlockBytes = kQ4KDOffset + 2 * 16 * 2;      // 2368
static_assert(kQ4KSuperBlockBytes % 64 == 0, "Q4_K super-blocks stay line-aligned");
constexpr size_t kQ5KHighOffset = kQ4KSuperBlockBytes;                // 2368
constexpr size_t kQ5KSuperBlockBytes = kQ5KHighOffset + 8 * 64;       // 2880
// Whether W has a packed form: a packable type and rows of a whole number of blocks.
bool packable(const WeightMatrix& W);
// Bytes of one 16-row group (a multiple of 64) and of the whole packed matrix.
size_t packed_group_bytes(GgmlType t, int64_t n);
size_t packed_bytes(GgmlType t, int64_t rows, int64_t n);
// Writes the packed form of `rows` ggml rows of n elements (`stride` bytes apart) to out
// (packed_bytes, 64-byte aligned). Plain C++: callable on any CPU.
void pack_weights(GgmlType t, const uint8_t* w, size_t stride, int64_t rows, int64_t n, uint8_t* out);

// Owner of the packed copies of a model's matrices. pack() fills W.packed, and matmul then
// takes the packed path plan_matrix gives for it (the AMX tiles or the vector units); the ggml
// rows stay where they are for row lookups (tied embeddings) and ActivationMode::Exact. The
// loader packs the matrices whose plan_matrix(type, tier).layout is WeightLayout::Packed.
class PackedWeights {
 public:
  // Packs W when its type has a packed form and it is not packed yet; returns whether it did.
  bool pack(WeightMatrix& W);
  size_t bytes() const { return bytes_; }
  size_t matrices() const { return matrices_; }

 private:
  // The packed matrices are carved from arenas of kArenaBytes or more (runtime/huge_pages.h:
  // 2 MiB-aligned, on transparent huge pages where the kernel grants them), one after another
  // at 64-byte boundaries: a matrix of its own huge-page-rounded buffer would hold up to 2 MiB
  // of a page it never uses (a 0.8B FFN matrix is 2.06 MB).
  static constexpr size_t kArenaBytes = size_t{64} << 20;
  uint8_t* carve(size_t n);
  struct Free { void operator()(uint8_t* p) const; };
  std::vector<std::unique_ptr<uint8_t, Free>> arenas_;
  uint8_t* next_ = nullptr;  // the last arena's first unused byte
  size_t arena_left_ = 0;    // and how many follow it
  size_t bytes_ = 0;
  size_t matrices_ = 0;
};

}  // namespace tandem::kernels
