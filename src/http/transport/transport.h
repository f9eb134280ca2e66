// The server's connections (issue 51): one event loop thread reads every connection without
// blocking and frames its requests strictly (http/transport/request_framing.h); only complete requests go to
// a fixed pool of worker threads, which run the handler (routing, the engine, writing the answer).
//
// Why not cpp-httplib's own loop: it gives each connection a pool thread from accept on, with a
// per-read timeout only, so 80 clients dripping a header byte every 1.5 s held every thread and
// /health went unanswered (issue 51). Here a client that has not sent a whole request costs a
// socket and its buffered bytes, never a thread, and is bounded by:
//   - a total deadline for a request's head and body from its first byte (--request-timeout-s):
//     past it the client gets 408 and is dropped (tandem_http_slow_clients_dropped_total);
//   - an idle deadline between requests on a kept-alive connection (--keep-alive-s);
//   - a cap on connections (--max-connections): at the cap the idle connection, else the request
//     that has been arriving the longest, makes room for the new one (the slowest client loses,
//     counted as dropped); only when every connection is running a request is the new one refused
//     (503);
//   - a budget of request bytes held across all connections (--max-buffered-mib): a request whose
//     head and announced or received body would pass it gets 503 before its bytes are read.
// A refusal (framing error, timeout, budget) is answered with a JSON error and the connection is
// closed after a short lingering read, so that the client sees the answer rather than a reset.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/transport/request_framing.h"
#include "http/transport/router.h"

namespace tandem::http {

struct TransportConfig {
  int workers = 16;                  // threads that run complete requests
  int max_connections = 512;         // open connections (reading, idle or being served)
  int request_timeout_ms = 10000;    // a request's head + body, from its first byte
  int idle_timeout_ms = 5000;        // a kept-alive connection between requests
  int write_timeout_ms = 30000;      // one write of an answer (a client that stops reading)
  size_t max_buffered_bytes = size_t(256) << 20;  // request bytes held across all connections
  FramingLimits limits;
  // The JSON body of an answer the transport gives itself (framing errors, 408, 503).
  std::function<std::string(int status, const std::string& message)> error_body;
};

struct TransportStats {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_refused{0};    // over the cap with every connection busy: 503
  std::atomic<uint64_t> requests{0};               // complete requests handed to the workers
  std::atomic<uint64_t> framing_refused{0};        // malformed or over a framing limit: 4xx/5xx
  std::atomic<uint64_t> slow_dropped{0};           // request deadline passed, or evicted at the cap
  std::atomic<uint64_t> budget_refused{0};         // over --max-buffered-mib: 503
  std::atomic<int64_t> connections_open{0};
  std::atomic<int64_t> buffered_bytes{0};          // request bytes held now
  std::atomic<int64_t> buffered_peak{0};
};

// "HTTP/1.1 <status> <reason>" with a JSON body and Content-Length; close: "Connection: close".
std::string simple_response(int status, const std::string& json_body, bool close);

class Transport {
 public:
  // Runs on a worker with a complete request; writes the answer to sink. Returns whether the
  // connection may carry another request.
  using Handler = std::function<bool(FramedRequest& req, ResponseSink& sink, const Peer& peer)>;

  Transport(TransportConfig cfg, Handler handler);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Binds and listens (before start()). Returns the port (the chosen one for port 0). Throws
  // std::runtime_error when the address cannot be bound.
  int listen_tcp(const std::string& host, int port);
  // A Unix stream socket at path (mode 0660); a stale socket file there is replaced, any other
  // file is refused. Removed again by stop().
  void listen_unix(const std::string& path);

  void start();
  // Stops accepting, drops connections that are not running a request, waits for the workers to
  // finish the requests they run (the handlers see the server stopping), joins the threads.
  void stop();

  const TransportStats& stats() const { return stats_; }
  const TransportConfig& config() const { return cfg_; }

 private:
  struct Conn;
  using Clock = std::chrono::steady_clock;

  void loop();
  void worker();
  void accept_from(int listen_fd, bool is_unix);
  void on_readable(Conn& c);
  void feed(Conn& c, std::string_view data);
  void dispatch(Conn& c);
  void refuse(Conn& c, int status, const std::string& message);
  void linger_close(Conn& c);
  void close_conn(int fd);
  bool charge(Conn& c);
  void release(Conn& c);
  void take_back_finished();
  void sweep(Clock::time_point now);
  bool make_room();
  void wake();

  TransportConfig cfg_;
  Handler handler_;
  TransportStats stats_;
  std::vector<int> listen_fds_;
  std::vector<bool> listen_unix_;
  std::string unix_path_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread loop_thread_;
  std::vector<std::thread> workers_;
  bool started_ = false;

  // Loop thread only (a Busy connection's request and socket belong to its worker meanwhile).
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  std::vector<int> paused_listeners_;  // out of descriptors: listening again at the next tick

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::deque<Conn*> ready_;     // complete requests waiting for a worker
  std::deque<Conn*> finished_;  // served; back to the loop (keep-alive or close)
  bool workers_stop_ = false;
};

}  // namespace tandem::http
