#include "http/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace tandem::http {

namespace {

bool endpoint_matches(const sockaddr_storage& ss, const std::string& addr, int port) {
  char buf[INET6_ADDRSTRLEN] = {};
  int p = -1;
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
    p = ntohs(a.sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf);
    p = ntohs(a.sin6_port);
  } else {
    return false;
  }
  if (p != port) return false;
  // httplib writes addresses with getnameinfo(NI_NUMERICHOST); IPv4-mapped IPv6 may differ in form.
  const std::string s(buf);
  return s == addr || (s.size() > 7 && s.rfind("::ffff:", 0) == 0 && s.substr(7) == addr) ||
         (addr.size() > 7 && addr.rfind("::ffff:", 0) == 0 && addr.substr(7) == s);
}

}  // namespace

ConnectionWatch ConnectionWatch::find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                      int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return {};
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return {};
  int found = -1;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (endpoint_matches(local, local_addr, local_port) && endpoint_matches(peer, remote_addr, remote_port)) {
      found = fd;
      break;
    }
  }
  closedir(dir);
  return found >= 0 ? ConnectionWatch(found) : ConnectionWatch();
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
