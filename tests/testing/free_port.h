// A loopback TCP port for a test's rendezvous (header-only, no link
// dependency): the TCP communicator's and the NCCL bootstrap's tests.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace pw::testing {

// A port in 10000-29999, below Linux's ephemeral range (32768-60999), so
// that the outgoing connections of this or a concurrent test (whose local
// ports the kernel picks from that range) cannot take it between this check
// and the master's bind; different per process and per call, and checked to
// be bindable now. 0 if 200 candidates were all taken.
inline int FreePort() {
  static int calls = 0;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = 10000 + static_cast<int>((static_cast<long>(::getpid()) * 97 + (calls++) * 211) % 20000);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    if (ok) return port;
  }
  return 0;
}

}  // namespace pw::testing
