#include "executor/comm/tcp_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace pw::exec::tcp {

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

sockaddr_in ToSockaddr(const Endpoint& e) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = e.ip;
  addr.sin_port = e.port;
  return addr;
}

void NoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

StatusOr<Endpoint> Resolve(const std::string& host, int port) {
  Endpoint e;
  e.port = htons(static_cast<uint16_t>(port));
  in_addr ip{};
  if (::inet_pton(AF_INET, host.c_str(), &ip) == 1) {
    e.ip = ip.s_addr;
    return e;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr)
    return Status::CommError(host + ": cannot resolve");
  e.ip = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr;
  ::freeaddrinfo(res);
  return e;
}

StatusOr<int> Listen(const Endpoint& at, const std::string& who) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::CommError(Errno("socket"));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const sockaddr_in addr = ToSockaddr(at);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 256) != 0) {
    Status st = Status::CommError(Errno("listen on " + who));
    ::close(fd);
    return st;
  }
  return fd;
}

StatusOr<int> Connect(const Endpoint& to, double timeout_s, const std::string& who) {
  const sockaddr_in addr = ToSockaddr(to);
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return Status::CommError(Errno("socket"));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
      NoDelay(fd);
      return fd;
    }
    const std::string err = Errno("connect to " + who);
    ::close(fd);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
      return Status::CommError(err + " (gave up after " + std::to_string(static_cast<int>(timeout_s)) + " s)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

StatusOr<int> Accept(int listener, const std::string& who, double timeout_s) {
  if (timeout_s > 0) {
    pollfd p{listener, POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return Status::CommError(Errno("poll on " + who));
    if (ready == 0)
      return Status::CommError("no peer connected to " + who + " within " + std::to_string(timeout_s) +
                               " s (connect timeout): a rank did not start or cannot reach this host");
  }
  int fd = ::accept(listener, nullptr, nullptr);
  if (fd < 0) return Status::CommError(Errno("accept on " + who));
  NoDelay(fd);
  return fd;
}

StatusOr<Endpoint> LocalEndpoint(int fd) {
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return Status::CommError(Errno("getsockname"));
  return Endpoint{local.sin_addr.s_addr, local.sin_port};
}

bool WriteAll(int fd, const void* data, int64_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, static_cast<size_t>(bytes), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= n;
  }
  return true;
}

bool ReadAll(int fd, void* data, int64_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, static_cast<size_t>(bytes), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= n;
  }
  return true;
}

void Shutdown(int fd) {
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

void Close(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace pw::exec::tcp
