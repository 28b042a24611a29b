// TCP sockets: a byte stream between two processes (IPv4, blocking file
// descriptors). Name resolution, listening, connecting with retries while
// the peer is not up yet, accepting with a timeout, and reads / writes that
// move every byte or report the stream lost. The protocols on top (the TCP
// communicator's rendezvous and framing, tcp_communicator.cc) live with
// their users. Torch-free, POSIX only.
//
// A socket is a plain file descriptor owned by the caller, who ends it with
// Close (after Shutdown when other threads may still block on it). Every
// StatusOr<int> below is such a descriptor; its errors are CommError naming
// `who` (the far end, in words the user knows: "rank 0 at 10.0.0.1:29500")
// and the system error.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace pw::exec::tcp {

// An IPv4 address and port, both in network byte order: the form they take
// in sockaddr_in and on the wire (the rendezvous sends it as 8 raw bytes).
struct Endpoint {
  uint32_t ip = 0;
  uint16_t port = 0;
};

// `host` (a dotted IPv4 address or a name getaddrinfo resolves) and `port`
// (0-65535; 0 = any free port, for Listen). Errors: CommError "<host>:
// cannot resolve".
StatusOr<Endpoint> Resolve(const std::string& host, int port);

// A socket listening on `at` (SO_REUSEADDR, backlog 256); port 0 takes a
// free port (LocalEndpoint tells which). Errors: CommError "listen on <who>:
// <system error>" (the address is in use, or not this host's).
StatusOr<int> Listen(const Endpoint& at, const std::string& who);

// Connects to `to`, retrying every 50 ms for up to `timeout_s` seconds (the
// peer may not listen yet). TCP_NODELAY is set: messages go out unbatched.
// Errors: CommError "connect to <who>: <last system error> (gave up after
// <timeout_s> s)".
StatusOr<int> Connect(const Endpoint& to, double timeout_s, const std::string& who);

// Accepts one connection on `listener`, waiting at most `timeout_s` seconds
// (<= 0: no limit), so that a peer that never starts cannot hang the caller.
// TCP_NODELAY is set. Errors: CommError "no peer connected to <who> within
// <timeout_s> s (connect timeout) ..." or "accept on <who>: <system error>".
StatusOr<int> Accept(int listener, const std::string& who, double timeout_s);

// The address `fd` is bound to (after Listen on port 0: the port taken;
// after Connect: the interface that reaches the peer). Errors: CommError
// "getsockname: <system error>".
StatusOr<Endpoint> LocalEndpoint(int fd);

// Writes all `bytes` bytes of `data` (blocking, retried on EINTR, no
// SIGPIPE). False when the stream is lost (the peer closed it or a system
// error); how much was written is then unknown.
bool WriteAll(int fd, const void* data, int64_t bytes);

// Reads exactly `bytes` bytes into `data` (blocking, retried on EINTR).
// False when the stream ends or fails first (the peer closed it, Shutdown,
// a system error).
bool ReadAll(int fd, void* data, int64_t bytes);

// Ends both directions of `fd` without closing it: a thread blocked in
// ReadAll / WriteAll on it returns false. Safe on a lost stream.
void Shutdown(int fd);

// Closes `fd` (a no-op for a negative one).
void Close(int fd);

}  // namespace pw::exec::tcp
