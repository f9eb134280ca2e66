#include "runtime/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define TANDEM_X86 1
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
// The bits of <asm/hwcap.h>, spelled out: an old libc's headers may lack HWCAP2_I8MM.
constexpr unsigned long kHwcapAsimd = 1ul << 1;     // HWCAP_ASIMD
constexpr unsigned long kHwcapAsimddp = 1ul << 20;  // HWCAP_ASIMDDP: SDOT / UDOT
constexpr unsigned long kHwcap2I8mm = 1ul << 13;    // HWCAP2_I8MM: SMMLA / UMMLA / USMMLA
#endif

namespace tandem {
namespace {

#ifdef TANDEM_X86
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Linux keeps AMX tile data off until a process asks for it.
bool request_amx_permission() {
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#ifdef TANDEM_X86
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  if (!osxsave) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_os = (xcr0 & 0x6) == 0x6;
  const bool zmm_os = (xcr0 & 0xE6) == 0xE6;
  const bool tile_os = (xcr0 & (3u << 17)) == (3u << 17);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2 = ymm_os && (b & (1u << 5));
  f.avx512f = zmm_os && (b & (1u << 16));
  f.avx512bw = zmm_os && (b & (1u << 30));
  f.avx512vl = zmm_os && (b & (1u << 31));
  f.avx512vnni = zmm_os && (c & (1u << 11));
  const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24), amx_int8 = d & (1u << 25);
  unsigned a1, b1, c1, d1;
  if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) f.avx512bf16 = zmm_os && (a1 & (1u << 5));
  if (tile_os && amx_tile && request_amx_permission()) {
    f.amx_tile = true;
    f.amx_int8 = amx_int8;
    f.amx_bf16 = amx_bf16;
  }
#endif
#if defined(__aarch64__)
  // The kernel's hwcaps, not the ID registers: they say what the kernel lets user space run, and
  // qemu-user sets them from its -cpu model (so each tier is reachable in emulated tests).
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.asimd = hw & kHwcapAsimd;
  f.asimddp = f.asimd && (hw & kHwcapAsimddp);
  f.i8mm = f.asimd && (hw2 & kHwcap2I8mm);
#endif
  return f;
}

CpuTier initial_tier() {
  CpuTier t = cpu_features().best_tier();
  if (const char* env = std::getenv("TANDEM_CPU_PATH")) {
    auto forced = cpu_tier_from_name(env);
    if (!forced) {
      std::fprintf(stderr, "tandem: TANDEM_CPU_PATH='%s' is not one of %s; ignored\n", env, cpu_tier_names());
    } else if (!tier_has(t, *forced)) {
      // Neither at nor below the best tier of this machine's family: a tier of the other
      // instruction set (lowering to it would mean scalar, which is not what was asked).
      if (tier_isa(*forced) != tier_isa(t) && t != CpuTier::Scalar)
        std::fprintf(stderr,
                     "tandem: TANDEM_CPU_PATH='%s' is a tier of another instruction set than this machine's "
                     "(best tier %s); ignored\n",
                     env, cpu_tier_name(t));
    } else {
      t = *forced;
    }
  }
  return t;
}

}  // namespace

CpuTier CpuFeatures::best_tier() const {
  // The I8mm tier's kernels also use SDOT, so it needs both (every i8mm core has dotprod).
  if (asimd && asimddp && i8mm) return CpuTier::I8mm;
  if (asimd && asimddp) return CpuTier::Dotprod;
  if (asimd) return CpuTier::Neon;
  const bool avx512 = avx512f && avx512bw && avx512vl && avx512vnni && fma && f16c;
  if (avx512 && amx_tile && amx_int8) return CpuTier::Amx;
  if (avx512) return CpuTier::Avx512Vnni;
  if (avx2 && fma && f16c) return CpuTier::Avx2;
  return CpuTier::Scalar;
}

std::string CpuFeatures::describe() const {
  std::ostringstream s;
  s << "avx2=" << avx2 << " fma=" << fma << " f16c=" << f16c << " avx512f=" << avx512f << " avx512bw=" << avx512bw
    << " avx512vnni=" << avx512vnni << " avx512bf16=" << avx512bf16 << " amx_tile=" << amx_tile
    << " amx_int8=" << amx_int8 << " amx_bf16=" << amx_bf16 << " asimd=" << asimd << " asimddp=" << asimddp
    << " i8mm=" << i8mm << " -> best tier " << cpu_tier_name(best_tier());
  return s.str();
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

const char* cpu_tier_name(CpuTier t) {
  switch (t) {
    case CpuTier::Scalar: return "scalar";
    case CpuTier::Avx2: return "avx2";
    case CpuTier::Avx512Vnni: return "avx512";
    case CpuTier::Amx: return "amx";
    case CpuTier::Neon: return "neon";
    case CpuTier::Dotprod: return "dotprod";
    case CpuTier::I8mm: return "i8mm";
  }
  return "?";
}

std::optional<CpuTier> cpu_tier_from_name(std::string_view n) {
  if (n == "scalar") return CpuTier::Scalar;
  if (n == "avx2") return CpuTier::Avx2;
  if (n == "avx512" || n == "avx512vnni") return CpuTier::Avx512Vnni;
  if (n == "amx") return CpuTier::Amx;
  if (n == "neon") return CpuTier::Neon;
  if (n == "dotprod") return CpuTier::Dotprod;
  if (n == "i8mm") return CpuTier::I8mm;
  return std::nullopt;
}

const char* cpu_tier_names() { return "scalar, avx2, avx512, amx, neon, dotprod, i8mm"; }

CpuTier default_cpu_tier() {
  static const CpuTier t = initial_tier();
  return t;
}

CpuTier clamp_to_machine(CpuTier t) {
  const CpuTier best = cpu_features().best_tier();
  if (tier_has(best, t)) return t;                  // at or below the best, same family (or scalar)
  if (tier_isa(t) == tier_isa(best)) return best;   // above the best of this family
  return CpuTier::Scalar;                           // the other instruction set: none of its code runs here
}

}  // namespace tandem
