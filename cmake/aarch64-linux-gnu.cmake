# Cross build for Arm64 Linux / Android shells with Debian's g++-aarch64-linux-gnu:
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Libraries come from Debian's arm64 multiarch packages (scripts/install-deps.sh --arm64 installs
# them: libicu-dev:arm64, libgtest-dev:arm64, ...), found under /usr/lib/aarch64-linux-gnu.
# The binaries run on x86 under qemu-user (qemu-aarch64-static -L /usr/aarch64-linux-gnu, or
# statically linked; docs/arm64.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Headers from /usr/include (arch-independent ones: nlohmann, stb, httplib) and the arm64
# libraries; never the x86-64 ones.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config: the arm64 .pc files only (cpp-httplib, stb).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# Tests built here run through qemu (ctest and gtest_discover_tests use it).
find_program(TANDEM_QEMU_AARCH64 qemu-aarch64-static)
if(TANDEM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TANDEM_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu)
endif()
