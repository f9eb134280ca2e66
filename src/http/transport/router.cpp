#include "http/transport/router.h"

#include <algorithm>
#include <cstring>

namespace tandem::http {

namespace {

thread_local int t_connection_fd = -1;

// The canonical request (head, then body) as a read-only stream; answers go to the sink.
class FramedStream final : public httplib::Stream {
 public:
  FramedStream(const std::string& head, const std::string& body, ResponseSink& out, const Peer& peer)
      : head_(head), body_(body), out_(out), peer_(peer) {}

  bool is_readable() const override { return pos_ < head_.size() + body_.size(); }
  bool is_writable() const override { return out_.writable(); }
  ssize_t read(char* ptr, size_t size) override {
    size_t n = 0;
    if (pos_ < head_.size()) {
      n = std::min(size, head_.size() - pos_);
      std::memcpy(ptr, head_.data() + pos_, n);
    } else if (pos_ < head_.size() + body_.size()) {
      const size_t at = pos_ - head_.size();
      n = std::min(size, body_.size() - at);
      std::memcpy(ptr, body_.data() + at, n);
    }
    pos_ += n;
    return static_cast<ssize_t>(n);  // 0 at the end: the library sees end of stream, never waits
  }
  ssize_t write(const char* ptr, size_t size) override {
    return out_.write(ptr, size) ? static_cast<ssize_t>(size) : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_.remote_addr;
    port = peer_.remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_.local_addr;
    port = peer_.local_port;
  }
  // Only compared with FD_SETSIZE by a library built without CPPHTTPLIB_USE_POLL (Debian's uses
  // poll): never a descriptor the library may touch.
  socket_t socket() const override { return 0; }

 private:
  const std::string& head_;
  const std::string& body_;
  ResponseSink& out_;
  const Peer& peer_;
  size_t pos_ = 0;
};

}  // namespace

Router::Router() {
  // The library's streaming answers stop when its listening socket is gone
  // (Server::write_content_with_provider: svr_sock_ == INVALID_SOCKET). It never listens here:
  // a value other than INVALID_SOCKET means "running", and is never used as a descriptor.
  svr_sock_ = 0;
}

void Router::set_shutting_down() { svr_sock_ = INVALID_SOCKET; }

bool Router::serve(const std::string& head, const std::string& body, ResponseSink& out, const Peer& peer,
                   bool close_after) {
  FramedStream strm(head, body, out, peer);
  struct FdScope {
    explicit FdScope(int fd) { t_connection_fd = fd; }
    ~FdScope() { t_connection_fd = -1; }
  } scope(out.fd());
  // The framer decided keep-alive (http/transport/request_framing.h); the library's own verdict
  // (connection_closed) reads "Connection" case-sensitively and is not used.
  bool connection_closed = false;
  const bool ok = process_request(strm, close_after, connection_closed, nullptr);
  return ok && !close_after;
}

int current_connection_fd() { return t_connection_fd; }

}  // namespace tandem::http
