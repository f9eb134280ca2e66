// AMX tile primitives shared by the tile kernels (matmul_amx.cpp, matmul_kquant_amx.cpp): the
// 64-byte tile configuration, loaded through inline asm whose memory operand covers all 64 bytes
// (GCC 12's _tile_loadconfig declares an 8-byte read, so stores to the config struct before it
// can be optimised away: llama.cpp's AMX path dies with SIGILL on such a machine), and tile
// load / store / product macros with their memory as asm operands.
//
// Included only by translation units compiled with the AMX flags; everything here is static
// inline or a macro, so no AMX instruction can end up in a function another unit links to.
#pragma once

#include <cstdint>

namespace tandem::kernels::amx::tiles {

// Tile loads and stores of one contiguous 512-byte (load) or 1 KiB (store) tile, with
// that memory as an asm operand: GCC 12's _tile_loadd names no memory at all (so earlier
// stores to the source could be moved past it), and a "memory" clobber instead would
// force the zmm accumulators out to the stack around every tile instruction. Tile
// numbers must be literals.
#define TANDEM_TILE_LOAD(t, base, stride)                                      \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(static_cast<long>(stride)), \
                   "m"(*reinterpret_cast<const ::tandem::kernels::amx::tiles::Bytes512*>(base)))
#define TANDEM_TILE_STORE(t, base, stride)                                     \
  __asm__ volatile("tilestored %%tmm" #t ", (%1,%2,1)"                         \
                   : "=m"(*reinterpret_cast<::tandem::kernels::amx::tiles::Bytes1024*>(base))                 \
                   : "r"(base), "r"(static_cast<long>(stride)))
#define TANDEM_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
// c += a · b over int8: DPBSSD both signed; DPBSUD a signed (activations), b unsigned (codes).
#define TANDEM_TILE_DPBSSD(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TANDEM_TILE_DPBSUD(c, a, b) __asm__ volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

struct Bytes512 { uint8_t b[512]; };
struct Bytes1024 { uint8_t b[1024]; };

struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);

static inline void zero_config(TileConfig* c) {
  auto* p = reinterpret_cast<uint8_t*>(c);
  for (int i = 0; i < 64; ++i) p[i] = 0;
}

// ldtilecfg with a memory operand covering the whole 64-byte config (see the top of this file).
static inline void load_config(const TileConfig* cfg) {
  __asm__ volatile("ldtilecfg %0" ::"m"(*cfg));
}
static inline void release_tiles() { __asm__ volatile("tilerelease" ::: "memory"); }

}  // namespace tandem::kernels::amx::tiles
