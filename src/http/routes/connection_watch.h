// Noticing that an HTTP client went away while its request is still being served.
//
// A socket whose peer has closed still reads as writable, so neither a non-streaming handler nor a
// content provider would learn of a disconnect before generation ends. The watch takes the socket
// of the request the calling thread serves (http/transport/router.h: current_connection_fd(), set while the
// router runs a request from the transport) and asks the kernel whether the peer has hung up
// (POLLRDHUP). The transport does not read a connection while a worker serves it, so the socket is
// the handler's to poll until the answer is written.
#pragma once

namespace tandem::http {

class ConnectionWatch {
 public:
  ConnectionWatch() = default;  // watches nothing: never closed
  // The connection of the request this thread serves; outside a socket (serve_bytes) a watch that
  // never reports closed.
  static ConnectionWatch current();

  bool valid() const { return fd_ >= 0; }
  // True once the peer has closed or reset the connection (no wait).
  bool peer_closed() const;

 private:
  explicit ConnectionWatch(int fd) : fd_(fd) {}
  int fd_ = -1;  // not owned
};

}  // namespace tandem::http
