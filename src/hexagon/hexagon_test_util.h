// The Hexagon tests' op server: the DSP build's binary under qemu-hexagon-static, or the reason
// it cannot run here. Where: TANDEM_HEXAGON_DSP, else build-hexagon/tandem-hexagon-dsp in the
// checkout (scripts/test.sh's hexagon stage builds it there); the emulator: TANDEM_QEMU_HEXAGON,
// else qemu-hexagon-static on the PATH.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hexagon/qemu_transport.h"
#include "model/test_paths.h"

namespace tandem::hexagon {

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

inline std::string find_on_path(const std::string& prog) {
  std::istringstream path(env_or("PATH", ""));
  for (std::string dir; std::getline(path, dir, ':');)
    if (!dir.empty() && access((dir + "/" + prog).c_str(), X_OK) == 0) return dir + "/" + prog;
  return "";
}

// The op server's command line, or "" with *why set.
inline std::vector<std::string> op_server_command(std::string* why) {
  const std::string dsp = env_or("TANDEM_HEXAGON_DSP", std::string(TANDEM_SOURCE_DIR) + "/build-hexagon/tandem-hexagon-dsp");
  const std::string qemu = env_or("TANDEM_QEMU_HEXAGON", find_on_path("qemu-hexagon-static"));
  if (qemu.empty() || access(qemu.c_str(), X_OK) != 0) {
    *why = "qemu-hexagon-static not found (Debian's qemu-user-static; scripts/install-deps.sh --hexagon)";
  } else if (access(dsp.c_str(), R_OK) != 0) {
    *why = "no Hexagon build at " + dsp + " (docs/hexagon.md: cmake -S src/hexagon/dsp -B build-hexagon ...)";
  } else {
    return {qemu, dsp};
  }
  return {};
}

inline bool hexagon_required() { return env_or("TANDEM_HEXAGON_REQUIRED", "0") == "1"; }

}  // namespace tandem::hexagon

// Declares `name`, a started QemuTransport, or skips the test with the reason (fails it when
// TANDEM_HEXAGON_REQUIRED=1).
#define TANDEM_OP_SERVER_OR_SKIP(name)                                                  \
  std::string name##_why;                                                               \
  const auto name##_argv = ::tandem::hexagon::op_server_command(&name##_why);           \
  if (name##_argv.empty()) {                                                            \
    if (::tandem::hexagon::hexagon_required()) FAIL() << name##_why;                    \
    GTEST_SKIP() << name##_why;                                                         \
  }                                                                                     \
  auto name = std::make_unique<::tandem::hexagon::QemuTransport>(name##_argv)
