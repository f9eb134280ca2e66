#include "hexagon/qemu_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace tandem::hexagon {
namespace {

const char* op_name(uint32_t op) {
  switch (static_cast<Op>(op)) {
    case Op::Hello: return "Hello";
    case Op::LoadMatrix: return "LoadMatrix";
    case Op::Matmul: return "Matmul";
    case Op::Release: return "Release";
    case Op::Exit: return "Exit";
  }
  return "unknown op";
}

uint32_t dsp_type(GgmlType t) {
  if (t != GgmlType::Q4_0 && t != GgmlType::Q8_0)
    throw HexagonError(std::string("hexagon: no HVX kernel for weight type ") + ggml_type_name(t) + " (Q4_0 and Q8_0 have one)");
  return static_cast<uint32_t>(t);
}

}  // namespace

QemuTransport::QemuTransport(std::vector<std::string> argv, int timeout_ms) : timeout_ms_(timeout_ms) {
  if (argv.empty()) throw HexagonError("hexagon: no op server command");
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw HexagonError(std::string("hexagon: socketpair: ") + std::strerror(errno));
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) {
    close(sv[0]);
    close(sv[1]);
    throw HexagonError(std::string("hexagon: fork: ") + std::strerror(errno));
  }
  if (pid_ == 0) {  // the child: the socket as its standard input and output
    dup2(sv[1], 0);
    dup2(sv[1], 1);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(sv[1]);
  fd_ = sv[0];
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
  RequestHeader hello;
  hello.op = static_cast<uint32_t>(Op::Hello);
  send_all("Hello", &hello, sizeof hello);
  ReplyHeader r;
  recv_all("Hello", &r, sizeof r);
  if (r.magic != kMagic || r.version != kProtocolVersion)
    fail("Hello", "the op server speaks protocol version " + std::to_string(r.version) + " (magic " +
                      std::to_string(r.magic) + "), the host " + std::to_string(kProtocolVersion));
}

QemuTransport::~QemuTransport() { stop(); }

void QemuTransport::stop() {
  if (fd_ >= 0) {
    RequestHeader bye;
    bye.op = static_cast<uint32_t>(Op::Exit);
    (void)!send(fd_, &bye, sizeof bye, MSG_NOSIGNAL);
    close(fd_);
    fd_ = -1;
  }
  if (pid_ > 0) {
    // A moment to exit on its own (end of input), then killed.
    for (int i = 0; i < 50 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(10000);
    if (waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
}

void QemuTransport::fail(const char* op, const std::string& why) {
  stop();
  throw HexagonError(std::string("hexagon: ") + op + ": " + why);
}

// Both directions wait in poll() against one deadline per call, so a child that stops reading
// (a full socket buffer) is caught as surely as one that stops writing.
void QemuTransport::send_all(const char* op, const void* p, size_t n) {
  if (fd_ < 0) fail(op, "the op server is not running");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t put = send(fd_, b, n, MSG_NOSIGNAL);
    if (put > 0) {
      b += put;
      n -= static_cast<size_t>(put);
      continue;
    }
    if (put < 0 && errno != EAGAIN && errno != EINTR) fail(op, "the op server exited before taking the request (" + std::string(std::strerror(errno)) + ")");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd pfd{fd_, POLLOUT, 0};
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) == 0)
      fail(op, "the op server took no input for " + std::to_string(timeout_ms_) + " ms (hung): killed");
  }
}

void QemuTransport::recv_all(const char* op, void* p, size_t n) {
  if (fd_ < 0) fail(op, "the op server is not running");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t got = recv(fd_, b, n, 0);
    if (got > 0) {
      b += got;
      n -= static_cast<size_t>(got);
      continue;
    }
    // A peer that exits with our request unread resets the connection instead of closing it.
    if (got == 0 || errno == ECONNRESET) fail(op, "the op server exited without answering");
    if (errno != EAGAIN && errno != EINTR) fail(op, "reading the reply: " + std::string(std::strerror(errno)));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd pfd{fd_, POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) == 0)
      fail(op, "no answer from the op server in " + std::to_string(timeout_ms_) + " ms (hung): killed");
  }
}

std::vector<uint8_t> QemuTransport::call(const RequestHeader& req, const void* payload, uint32_t* handle) {
  const char* op = op_name(req.op);
  send_all(op, &req, sizeof req);
  if (req.payload_bytes) send_all(op, payload, req.payload_bytes);
  ReplyHeader r;
  recv_all(op, &r, sizeof r);
  if (r.magic != kMagic || r.payload_bytes > kMaxPayloadBytes) fail(op, "a malformed reply (out of step)");
  std::vector<uint8_t> body(r.payload_bytes);
  if (!body.empty()) recv_all(op, body.data(), body.size());
  if (r.status != static_cast<uint32_t>(Status::Ok))
    throw HexagonError("hexagon: refused: " + std::string(body.begin(), body.end()));
  if (handle) *handle = r.handle;
  return body;
}

uint32_t QemuTransport::load_matrix(GgmlType type, int rows, int cols, const void* gguf_rows) {
  RequestHeader req;
  req.op = static_cast<uint32_t>(Op::LoadMatrix);
  req.type = dsp_type(type);
  req.rows = static_cast<uint32_t>(rows);
  req.cols = static_cast<uint32_t>(cols);
  req.payload_bytes = static_cast<uint32_t>(row_bytes(type, cols) * rows);
  uint32_t handle = 0;
  call(req, gguf_rows, &handle);
  shapes_[handle] = {rows, cols};
  return handle;
}

void QemuTransport::matmul(uint32_t matrix, const void* q8_0_columns, int n_columns, float* out) {
  const auto it = shapes_.find(matrix);
  if (it == shapes_.end()) throw HexagonError("hexagon: Matmul: handle " + std::to_string(matrix) + " is not a loaded matrix");
  const auto [rows, cols] = it->second;
  RequestHeader req;
  req.op = static_cast<uint32_t>(Op::Matmul);
  req.handle = matrix;
  req.n_columns = static_cast<uint32_t>(n_columns);
  req.payload_bytes = static_cast<uint32_t>(row_bytes(GgmlType::Q8_0, cols) * n_columns);
  const std::vector<uint8_t> body = call(req, q8_0_columns);
  if (body.size() != sizeof(float) * rows * n_columns)
    fail("Matmul", std::to_string(body.size()) + " bytes of result for " + std::to_string(n_columns) + " x " +
                       std::to_string(rows) + " floats");
  std::memcpy(out, body.data(), body.size());
}

void QemuTransport::release(uint32_t matrix) {
  RequestHeader req;
  req.op = static_cast<uint32_t>(Op::Release);
  req.handle = matrix;
  call(req, nullptr);
  shapes_.erase(matrix);
}

}  // namespace tandem::hexagon
