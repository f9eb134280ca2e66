// Noticing that an HTTP client went away while its request is still being served.
//
// cpp-httplib 0.11 gives handlers no access to the socket, and a socket whose peer has closed
// still reads as writable, so neither a non-streaming handler nor a content provider would learn
// of a disconnect before generation ends. The watch finds the connection's socket among the
// process's descriptors by its two endpoints (Request::local_addr/port, remote_addr/port) while
// the handler holds it open, and asks the kernel whether the peer has hung up (POLLRDHUP).
#pragma once

#include <string>

namespace tandem::http {

class ConnectionWatch {
 public:
  ConnectionWatch() = default;  // watches nothing: never closed
  // Finds the socket; an unknown connection gives a watch that never reports closed.
  static ConnectionWatch find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                              int remote_port);

  bool valid() const { return fd_ >= 0; }
  // True once the peer has closed or reset the connection (no wait).
  bool peer_closed() const;

 private:
  explicit ConnectionWatch(int fd) : fd_(fd) {}
  int fd_ = -1;  // not owned
};

}  // namespace tandem::http
