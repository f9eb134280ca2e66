// Loading a Q4_0 / Q8_0 weight block into NEON registers, shared by every Arm tier's row kernels
// (matmul_neon_body.h for neon and dotprod, matmul_i8mm.cpp). Included inside each tier's
// namespace, like matmul_neon_body.h: its functions are local to that tier, so no function
// compiled for a newer Arm feature can be picked by the linker for a caller on an older core.
//
// Not a public header: include only after <arm_neon.h> and gguf/quants.h.

inline float half_to_float(uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// One weight block as two registers of signed codes (elements 0..15, 16..31) and its scale.
inline void load_block(const BlockQ8_0* x, int8x16_t& lo, int8x16_t& hi, float& d) {
  lo = vld1q_s8(x->qs);
  hi = vld1q_s8(x->qs + 16);
  d = half_to_float(x->d);
}
inline void load_block(const BlockQ4_0* x, int8x16_t& lo, int8x16_t& hi, float& d) {
  // Low nibbles are elements 0..15, high nibbles 16..31 (ggml's block_q4_0); codes minus 8.
  const uint8x16_t q = vld1q_u8(x->qs);
  const int8x16_t eight = vdupq_n_s8(8);
  lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), eight);
  hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
  d = half_to_float(x->d);
}
