#include "http/transport/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tandem::http {

namespace {

constexpr int kLingerMs = 1000;               // reading (and dropping) after a refusal, at most
constexpr size_t kLingerBytes = size_t(1) << 20;
constexpr size_t kReadChunk = 64u << 10;
constexpr int kReadsPerWake = 16;             // 1 MiB per connection per wake-up: the others get their turn
constexpr int kTickMs = 100;                  // deadline resolution

std::string errno_text() { return std::strerror(errno); }

void address_text(const sockaddr_storage& ss, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
    port = ntohs(a.sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf);
    port = ntohs(a.sin6_port);
  }
  ip = buf;
  if (ip.rfind("::ffff:", 0) == 0 && ip.find('.') != std::string::npos) ip = ip.substr(7);  // IPv4-mapped
}

// Writes an answer from a worker: the socket is non-blocking (the loop's), so a full send buffer
// is waited for with poll, at most write_timeout_ms per write.
class SocketSink final : public ResponseSink {
 public:
  SocketSink(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}
  bool write(const char* data, size_t n) override {
    size_t off = 0;
    while (off < n) {
      const ssize_t w = ::send(fd_, data + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_, POLLOUT, 0};
        const int r = ::poll(&p, 1, timeout_ms_);
        if (r <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
        continue;
      }
      return false;
    }
    return true;
  }
  bool writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, timeout_ms_) > 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
  }
  int fd() const override { return fd_; }

 private:
  int fd_;
  int timeout_ms_;
};

}  // namespace

std::string simple_response(int status, const std::string& json_body, bool close) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
  out += "Content-Type: application/json; charset=utf-8\r\n";
  out += "Content-Length: " + std::to_string(json_body.size()) + "\r\n";
  out += close ? "Connection: close\r\n\r\n" : "\r\n";
  out += json_body;
  return out;
}

struct Transport::Conn {
  enum class Phase { Idle, Reading, Busy, Closing };
  int fd = -1;
  Peer peer;
  RequestFramer framer;
  std::string pending;         // bytes past a complete request (pipelined), fed when it is answered
  size_t charged = 0;          // bytes charged to the budget
  Phase phase = Phase::Idle;
  Clock::time_point deadline;  // Idle: the keep-alive deadline; Reading: the request's; Closing: the linger's
  Clock::time_point since;     // Reading: the request's first byte; Idle: the end of the last answer
  bool sent_continue = false;
  bool keep = false;           // set by the worker: another request may follow
  size_t lingered = 0;
  explicit Conn(FramingLimits l) : framer(l) {}
};

Transport::Transport(TransportConfig cfg, Handler handler) : cfg_(std::move(cfg)), handler_(std::move(handler)) {
  if (cfg_.workers < 1) cfg_.workers = 1;
  if (cfg_.max_connections < 1) cfg_.max_connections = 1;
  if (!cfg_.error_body)
    cfg_.error_body = [](int status, const std::string& message) {
      std::string m;
      for (const char c : message) m += (c == '"' || c == '\\') ? '\'' : (static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
      return "{\"error\":{\"code\":" + std::to_string(status) + ",\"message\":\"" + m + "\"}}";
    };
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error("transport: epoll/eventfd: " + errno_text());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

Transport::~Transport() {
  stop();
  for (const int fd : listen_fds_) ::close(fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

int Transport::listen_tcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); e != 0)
    throw std::runtime_error("cannot resolve listen address " + host + ": " + gai_strerror(e));
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) break;
    why = errno_text();
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) throw std::runtime_error("cannot bind to " + host + ":" + service + ": " + why);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  std::string ip;
  int bound = port;
  address_text(ss, ip, bound);
  listen_fds_.push_back(fd);
  listen_unix_.push_back(false);
  return bound;
}

void Transport::listen_unix(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path)
    throw std::runtime_error("--socket: the path must have 1 to " + std::to_string(sizeof a.sun_path - 1) + " bytes");
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    // A socket left by an earlier run is replaced; anything else is somebody's file.
    if (!S_ISSOCK(st.st_mode)) throw std::runtime_error("--socket: " + path + " exists and is not a socket");
    ::unlink(path.c_str());
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("--socket: " + errno_text());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1024) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw std::runtime_error("--socket: cannot listen on " + path + ": " + why);
  }
  ::chmod(path.c_str(), 0660);  // the owner and its group (Android: the app's uid), not every user
  listen_fds_.push_back(fd);
  listen_unix_.push_back(true);
  unix_path_ = path;
}

void Transport::start() {
  if (started_) return;
  started_ = true;
  for (size_t i = 0; i < listen_fds_.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fds_[i];
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fds_[i], &ev);
  }
  for (int i = 0; i < cfg_.workers; ++i) workers_.emplace_back([this] { worker(); });
  loop_thread_ = std::thread([this] { loop(); });
}

void Transport::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Transport::stop() {
  if (!started_ || stopping_.exchange(true)) {
    if (loop_thread_.joinable()) loop_thread_.join();
    return;
  }
  wake();
  if (loop_thread_.joinable()) loop_thread_.join();
  {
    std::lock_guard lk(mu_);
    workers_stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  for (auto& [fd, c] : conns_) ::close(fd);
  conns_.clear();
  stats_.connections_open = 0;
  if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
}

void Transport::loop() {
  std::vector<epoll_event> events(256);
  auto next_sweep = Clock::now();
  bool closed_listeners = false;
  for (;;) {
    if (stopping_ && !closed_listeners) {
      for (const int fd : listen_fds_) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      closed_listeners = true;
      // Every connection not running a request goes now; the busy ones when their worker is done.
      std::vector<int> idle;
      for (auto& [fd, c] : conns_)
        if (c->phase != Conn::Phase::Busy) idle.push_back(fd);
      for (const int fd : idle) close_conn(fd);
    }
    if (stopping_ && conns_.empty()) {
      std::lock_guard lk(mu_);
      if (ready_.empty()) return;
    }
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), kTickMs);
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof v) > 0) {
        }
        continue;
      }
      bool is_listener = false;
      for (size_t l = 0; l < listen_fds_.size(); ++l)
        if (listen_fds_[l] == fd) {
          is_listener = true;
          if (!stopping_) accept_from(fd, listen_unix_[l]);
        }
      if (is_listener) continue;
      const auto it = conns_.find(fd);
      if (it == conns_.end()) continue;
      on_readable(*it->second);
    }
    take_back_finished();
    const auto now = Clock::now();
    if (now >= next_sweep) {
      sweep(now);
      next_sweep = now + std::chrono::milliseconds(kTickMs);
    }
  }
}

bool Transport::make_room() {
  // The connection that has waited longest without a request running: an idle keep-alive first,
  // else the request that has been arriving the longest (the slowest client).
  Conn* victim = nullptr;
  for (auto& [fd, c] : conns_) {
    if (c->phase == Conn::Phase::Busy) continue;
    const auto rank = [](const Conn& x) { return x.phase == Conn::Phase::Closing ? 0 : x.phase == Conn::Phase::Idle ? 1 : 2; };
    if (!victim || rank(*c) < rank(*victim) || (rank(*c) == rank(*victim) && c->since < victim->since)) victim = c.get();
  }
  if (!victim) return false;
  if (victim->phase == Conn::Phase::Reading) {
    ++stats_.slow_dropped;
    refuse(*victim, 503, "dropped to make room for another connection (--max-connections " +
                             std::to_string(cfg_.max_connections) + "): this request was the slowest to arrive");
    if (conns_.count(victim->fd) && victim->phase == Conn::Phase::Closing) close_conn(victim->fd);
  } else {
    close_conn(victim->fd);
  }
  return true;
}

void Transport::accept_from(int listen_fd, bool is_unix) {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: the listener would wake the loop at once, forever. Stop listening
        // until the next tick (the backlog keeps the clients meanwhile).
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd, nullptr);
        paused_listeners_.push_back(listen_fd);
      }
      return;  // EAGAIN: all taken
    }
    ++stats_.connections_accepted;
    if (static_cast<int>(conns_.size()) >= cfg_.max_connections && !make_room()) {
      ++stats_.connections_refused;
      const std::string r = simple_response(503, cfg_.error_body(503, "too many connections: all " +
                                                                      std::to_string(cfg_.max_connections) +
                                                                      " are running requests (--max-connections)"),
                                            true);
      [[maybe_unused]] const ssize_t w = ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>(cfg_.limits);
    c->fd = fd;
    if (is_unix) {
      c->peer.remote_addr = "unix";
      c->peer.local_addr = "unix";
    } else {
      int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      address_text(ss, c->peer.remote_addr, c->peer.remote_port);
      sockaddr_storage ls{};
      socklen_t ll = sizeof ls;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ls), &ll) == 0) address_text(ls, c->peer.local_addr, c->peer.local_port);
    }
    c->since = Clock::now();
    c->deadline = c->since + std::chrono::milliseconds(cfg_.idle_timeout_ms);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    conns_.emplace(fd, std::move(c));
    stats_.connections_open = static_cast<int64_t>(conns_.size());
  }
}

void Transport::on_readable(Conn& c) {
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerWake; ++i) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_conn(c.fd);  // the client closed (or reset): whatever it had sent is dropped
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (c.phase == Conn::Phase::Closing) {
      c.lingered += static_cast<size_t>(n);
      if (c.lingered > kLingerBytes) {
        close_conn(c.fd);
        return;
      }
      continue;
    }
    const int fd = c.fd;
    feed(c, std::string_view(buf, static_cast<size_t>(n)));
    // feed() may have closed it, or handed it to a worker.
    const auto it = conns_.find(fd);
    if (it == conns_.end() || it->second->phase == Conn::Phase::Busy) return;
  }
}

bool Transport::charge(Conn& c) {
  const size_t held = c.framer.held_bytes() + c.pending.size();
  if (held <= c.charged) return true;
  const auto delta = static_cast<int64_t>(held - c.charged);
  const int64_t now = stats_.buffered_bytes.fetch_add(delta) + delta;
  c.charged = held;
  if (static_cast<size_t>(now) > cfg_.max_buffered_bytes) return false;
  int64_t peak = stats_.buffered_peak.load();
  while (now > peak && !stats_.buffered_peak.compare_exchange_weak(peak, now)) {
  }
  return true;
}

void Transport::release(Conn& c) {
  stats_.buffered_bytes -= static_cast<int64_t>(c.charged);
  c.charged = 0;
}

void Transport::feed(Conn& c, std::string_view data) {
  while (!data.empty()) {
    if (c.phase == Conn::Phase::Idle) {
      c.phase = Conn::Phase::Reading;
      c.since = Clock::now();
      c.deadline = c.since + std::chrono::milliseconds(cfg_.request_timeout_ms);
    }
    const size_t used = c.framer.feed(data);
    data.remove_prefix(used);
    if (c.framer.state() == RequestFramer::State::Error) {
      ++stats_.framing_refused;
      refuse(c, c.framer.error().status, c.framer.error().message);
      return;
    }
    if (c.framer.state() == RequestFramer::State::Done) c.pending.assign(data.data(), data.size());
    if (!charge(c)) {
      ++stats_.budget_refused;
      refuse(c, 503, "the server holds too many request bytes now (--max-buffered-mib " +
                         std::to_string(cfg_.max_buffered_bytes >> 20) + "): retry later");
      return;
    }
    if (c.framer.state() == RequestFramer::State::Done) {
      dispatch(c);
      return;
    }
    if (c.framer.head_complete() && c.framer.request().expect_continue && !c.sent_continue) {
      // The head passed every check (size, framing): the client may send the body.
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] const ssize_t w = ::send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      c.sent_continue = true;
    }
  }
}

void Transport::dispatch(Conn& c) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);  // the worker owns the socket until it is done
  c.phase = Conn::Phase::Busy;
  ++stats_.requests;
  {
    std::lock_guard lk(mu_);
    ready_.push_back(&c);
  }
  work_cv_.notify_one();
}

void Transport::worker() {
  for (;;) {
    Conn* c = nullptr;
    {
      std::unique_lock lk(mu_);
      work_cv_.wait(lk, [&] { return workers_stop_ || !ready_.empty(); });
      if (ready_.empty()) return;
      c = ready_.front();
      ready_.pop_front();
    }
    SocketSink sink(c->fd, cfg_.write_timeout_ms);
    bool keep = false;
    try {
      keep = handler_(c->framer.request(), sink, c->peer) && c->framer.request().keep_alive;
    } catch (...) {
      keep = false;  // the handler answers its own errors; anything left closes the connection
    }
    c->keep = keep && !stopping_;
    {
      std::lock_guard lk(mu_);
      finished_.push_back(c);
    }
    wake();
  }
}

void Transport::take_back_finished() {
  std::deque<Conn*> done;
  {
    std::lock_guard lk(mu_);
    done.swap(finished_);
  }
  for (Conn* c : done) {
    release(*c);
    c->framer.reset();  // frees the request's body
    c->sent_continue = false;
    if (!c->keep) {
      close_conn(c->fd);
      continue;
    }
    c->phase = Conn::Phase::Idle;
    c->since = Clock::now();
    c->deadline = c->since + std::chrono::milliseconds(cfg_.idle_timeout_ms);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
    if (!c->pending.empty()) {
      std::string pipelined;
      pipelined.swap(c->pending);
      feed(*c, pipelined);
    }
  }
}

void Transport::refuse(Conn& c, int status, const std::string& message) {
  const std::string r = simple_response(status, cfg_.error_body(status, message), true);
  // The answer is small and the socket's send buffer empty (the previous answer was written
  // whole): one non-blocking send delivers it.
  [[maybe_unused]] const ssize_t w = ::send(c.fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  linger_close(c);
}

void Transport::linger_close(Conn& c) {
  // Closing a socket with unread input makes the kernel send a reset, which can destroy the answer
  // before the client reads it: stop writing, then read and drop what still comes for a moment.
  ::shutdown(c.fd, SHUT_WR);
  release(c);
  c.framer.reset();
  c.pending.clear();
  c.pending.shrink_to_fit();
  c.phase = Conn::Phase::Closing;
  c.since = Clock::now();
  c.deadline = c.since + std::chrono::milliseconds(kLingerMs);
}

void Transport::close_conn(int fd) {
  const auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  release(*it->second);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  conns_.erase(it);
  stats_.connections_open = static_cast<int64_t>(conns_.size());
}

void Transport::sweep(Clock::time_point now) {
  for (const int fd : paused_listeners_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (!stopping_) ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  paused_listeners_.clear();
  std::vector<int> expired;
  for (auto& [fd, c] : conns_)
    if (c->phase != Conn::Phase::Busy && now >= c->deadline) expired.push_back(fd);
  for (const int fd : expired) {
    Conn& c = *conns_.at(fd);
    if (c.phase == Conn::Phase::Reading) {
      ++stats_.slow_dropped;
      refuse(c, 408, "the request's head and body did not arrive within " + std::to_string(cfg_.request_timeout_ms) +
                         " ms (--request-timeout-s)");
    } else {
      close_conn(fd);  // idle past the keep-alive time, or done lingering
    }
  }
}

}  // namespace tandem::http
