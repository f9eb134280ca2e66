// cpp-httplib as the router and response writer, fed one already framed request at a time.
//
// Debian's cpp-httplib 0.11.4 reads requests itself with a thread per connection, per-read
// timeouts only and no framing checks (issue 51: slow clients starve the pool, chunked bodies skip
// the body limit, conflicting Content-Length headers are served). The transport (http/transport/transport.h)
// now owns the sockets and frames every request strictly (http/transport/request_framing.h); this class keeps
// what the library does well — routing by method and path, the handlers' Request/Response, the
// pre-routing / error / exception hooks, writing answers whole or as chunked streams — by calling
// its protected Server::process_request on a stream that serves the canonical request text (the
// head with an exact Content-Length, then the body) from memory and writes to a ResponseSink. The
// library never reads a socket, so none of its reading code decides a request's framing.
#pragma once

#include <httplib.h>

#include <string>

namespace tandem::http {

// Where an answer goes: the connection's socket (the transport), or a string (fuzz target, tests).
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // Writes all n bytes or fails (peer gone, write deadline passed).
  virtual bool write(const char* data, size_t n) = 0;
  virtual bool writable() const = 0;
  // The connection's socket, for noticing a hang-up (connection_watch.h); -1: none.
  virtual int fd() const { return -1; }
};

struct Peer {
  std::string remote_addr;  // "127.0.0.1", "::1", "unix"
  int remote_port = 0;
  std::string local_addr;
  int local_port = 0;
};

class Router : public httplib::Server {
 public:
  Router();
  // Reads the request from head + body, routes it, writes the answer to out. close_after: the
  // answer says "Connection: close". Returns false when the connection must not carry another
  // request (close_after, or writing the answer failed).
  bool serve(const std::string& head, const std::string& body, ResponseSink& out, const Peer& peer, bool close_after);
  // Streaming answers (chunked content providers) stop at their next chunk once this is set.
  void set_shutting_down();
};

// The socket of the request this thread is serving (-1 outside Router::serve or in memory).
int current_connection_fd();

}  // namespace tandem::http
