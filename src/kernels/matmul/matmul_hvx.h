// Q4_0 / Q8_0 weight matrix × Q8_0 activations on the Hexagon vector unit (HVX, 128-byte
// vectors), for the DSP side (hexagon/, built with Debian's clang-14; docs/hexagon.md). Freestanding:
// no standard library, no gguf/ headers (the block layouts are read byte by byte here).
//
// Bit for bit the scalar reference (matmul/vec_dot.cpp, dot_legacy): each block's int32 sum of
// code × activation is exact, and the float step is the reference's, per block in order:
// acc = acc + (float(sum) · d_w) · d_a, with fp-contract off.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace tandem::kernels::hvx {

constexpr int kRowsPerGroup = 32;  // one int32 lane per row
constexpr int kMaxColumns = 8;     // the token and up to 7 drafts (the verify product)
constexpr uint32_t kTypeQ4_0 = 2;  // GGML type ids
constexpr uint32_t kTypeQ8_0 = 8;

// A matrix as the kernel reads it, packed once at load (pack_matrix): per group of 32 rows and
// per block, the codes as unsigned bytes in vectors whose lane r holds 4 codes of row r (Q8_0:
// 8 vectors, code ^ 0x80; Q4_0: 4 vectors of the block's 16 bytes, both nibbles), then each
// row's scale as a float. The last group is padded with zero rows.
struct PackedMatrix {
  uint32_t type = 0;
  int rows = 0, cols = 0, groups = 0, blocks = 0;
  uint8_t* codes = nullptr;  // 128-byte aligned
  float* scales = nullptr;   // [group][block][32]
};

// Bytes of gguf row data (rows × cols of `type`), and of its packed copy (codes then scales).
size_t gguf_matrix_bytes(uint32_t type, int rows, int cols);
size_t packed_matrix_bytes(uint32_t type, int rows, int cols);
// Packs gguf rows into `memory` (packed_matrix_bytes, 128-byte aligned, zeroed).
PackedMatrix pack_matrix(uint32_t type, int rows, int cols, const uint8_t* gguf_rows, void* memory);

// One activation column (cols/32 Q8_0 blocks) in the kernel's form: the codes as 4-byte words
// (the scalar operand of vrmpy), the scale as a float, and −offset · Σ codes per block (the
// unsigned weight codes carry an offset: 8 for Q4_0, 128 for Q8_0).
size_t column_bytes(int cols);
void prepare_column(uint32_t weight_type, int cols, const uint8_t* q8_0_blocks, void* memory);

// out[c · rows + r] = row r · column c for n_columns ≤ kMaxColumns columns (each prepared in
// column_bytes(m.cols) bytes, one after the other): every weight vector is loaded once for all
// the columns.
void matmul_columns(const PackedMatrix& m, const void* columns, int n_columns, float* out);

}  // namespace tandem::kernels::hvx
