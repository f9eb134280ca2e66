#include "http/routes/connection_watch.h"

#include <poll.h>

#include "http/transport/router.h"

namespace tandem::http {

ConnectionWatch ConnectionWatch::current() {
  const int fd = current_connection_fd();
  return fd >= 0 ? ConnectionWatch(fd) : ConnectionWatch();
}

bool ConnectionWatch::peer_closed() const {
  if (fd_ < 0) return false;
  pollfd p{};
  p.fd = fd_;
  p.events = POLLRDHUP;
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace tandem::http
