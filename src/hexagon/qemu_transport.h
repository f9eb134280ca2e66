// The transport of this machine (transport.h): the op server (src/hexagon/dsp/op_server.cpp)
// as a child process under qemu-hexagon-static, requests and replies over a socket pair (a
// socket, not a pipe, so that a write to a dead child is an error, not a SIGPIPE). Each op waits
// at most `timeout_ms` for the child; then the child is killed and the op fails by name.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hexagon/dsp_protocol.h"
#include "hexagon/transport.h"

namespace tandem::hexagon {

class QemuTransport : public Transport {
 public:
  // argv: the command that runs the op server, e.g. {"qemu-hexagon-static", "build-hexagon/tandem-hexagon-dsp"}.
  // Starts it and checks its protocol version (Hello); throws HexagonError when it cannot.
  explicit QemuTransport(std::vector<std::string> argv, int timeout_ms = 60000);
  ~QemuTransport() override;
  QemuTransport(const QemuTransport&) = delete;
  QemuTransport& operator=(const QemuTransport&) = delete;

  uint32_t load_matrix(GgmlType type, int rows, int cols, const void* gguf_rows) override;
  void matmul(uint32_t matrix, const void* q8_0_columns, int n_columns, float* out) override;
  void release(uint32_t matrix) override;

  // One request and its reply as raw bytes, for the tests of refusals: returns the reply's
  // payload, throws HexagonError with the op server's text on a refusal.
  std::vector<uint8_t> call(const RequestHeader& req, const void* payload, uint32_t* handle = nullptr);

 private:
  void send_all(const char* op, const void* p, size_t n);
  void recv_all(const char* op, void* p, size_t n);
  [[noreturn]] void fail(const char* op, const std::string& why);
  void stop();

  int fd_ = -1;
  int pid_ = -1;
  int timeout_ms_;
  std::map<uint32_t, std::pair<int, int>> shapes_;  // handle -> rows, cols
};

}  // namespace tandem::hexagon
