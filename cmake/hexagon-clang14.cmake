# The DSP side for Qualcomm Hexagon (v67, HVX with 128-byte vectors) with Debian's clang-14 and
# lld-14, no Hexagon SDK (docs/hexagon.md):
#   cmake -S src/hexagon/dsp -B build-hexagon -G Ninja -DCMAKE_TOOLCHAIN_FILE=$PWD/cmake/hexagon-clang14.cmake
# There is no Hexagon libc, libm or C++ runtime here: the programs are freestanding
# (src/hexagon/dsp/runtime.h), with no exceptions, RTTI or static-initialisation guards, and no
# calls the compiler would satisfy from libgcc-like helpers (float division is
# __hexagon_divsf3, absent: the code divides by no float). The binaries run on x86 under
# qemu-hexagon-static (Debian's qemu-user-static).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR hexagon)
set(CMAKE_CXX_COMPILER clang++-14)
set(CMAKE_CXX_COMPILER_TARGET hexagon)
# -ffp-contract=off as the host build: clang fuses a*b+c into sffma by default, which would round
# the float step of the products differently from the scalar reference.
set(CMAKE_CXX_FLAGS_INIT "-mv67 -mhvx -mhvx-length=128b -O2 -ffreestanding -ffp-contract=off -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-asynchronous-unwind-tables")
# ld.lld by that name (Debian's `lld` package, lld-14 on Debian 12): clang's Hexagon driver
# recognises lld by its name and would pass hexagon-ld's options to ld.lld-14 (--ld-path).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostdlib -static -fuse-ld=lld")
# No C runtime to link a test executable against while CMake checks the compiler.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
find_program(TANDEM_QEMU_HEXAGON qemu-hexagon-static)
if(TANDEM_QEMU_HEXAGON)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TANDEM_QEMU_HEXAGON})
endif()
