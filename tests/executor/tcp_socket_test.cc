// The TCP byte stream (executor/comm/tcp_socket.h) on real loopback sockets:
// a message larger than the kernel's socket buffers survives a round trip,
// and a refused connect, a missed accept and an unknown host name their
// cause. Well under a second.
#include "executor/comm/tcp_socket.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace pw::exec::tcp {
namespace {

// A listener on 127.0.0.1, a free port; `at` receives its address.
int LoopbackListener(Endpoint* at) {
  StatusOr<Endpoint> any = Resolve("127.0.0.1", 0);
  EXPECT_TRUE(any.ok()) << any.status().ToString();
  StatusOr<int> listener = Listen(*any, "a test port");
  EXPECT_TRUE(listener.ok()) << listener.status().ToString();
  StatusOr<Endpoint> bound = LocalEndpoint(*listener);
  EXPECT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_NE(bound->port, 0);
  *at = *bound;
  return *listener;
}

// 32 MiB out and back (an echo peer in a thread): many partial sends and
// receives, every byte in order.
TEST(TcpSocket, LargeMessageRoundTrip) {
  Endpoint at;
  const int listener = LoopbackListener(&at);
  const int64_t bytes = int64_t{32} << 20;
  std::thread echo([&] {
    StatusOr<int> fd = Accept(listener, "the test port", 10.0);
    ASSERT_TRUE(fd.ok()) << fd.status().ToString();
    std::vector<char> buf(static_cast<size_t>(bytes));
    EXPECT_TRUE(ReadAll(*fd, buf.data(), bytes));
    EXPECT_TRUE(WriteAll(*fd, buf.data(), bytes));
    Close(*fd);
  });
  StatusOr<int> fd = Connect(at, 10.0, "the echo peer");
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  std::vector<char> out(static_cast<size_t>(bytes)), back(static_cast<size_t>(bytes), 0);
  for (int64_t i = 0; i < bytes; ++i) out[static_cast<size_t>(i)] = static_cast<char>(i * 2654435761u >> 13);
  // Written from a second thread: both directions are in flight at once, as
  // a 32 MiB write would otherwise fill both kernels' buffers and stall.
  std::thread writer([&] { EXPECT_TRUE(WriteAll(*fd, out.data(), bytes)); });
  EXPECT_TRUE(ReadAll(*fd, back.data(), bytes));
  writer.join();
  echo.join();
  EXPECT_TRUE(out == back);
  // The peer closed: the stream reports the loss instead of blocking.
  char one = 0;
  EXPECT_FALSE(ReadAll(*fd, &one, 1));
  Close(*fd);
  Close(listener);
}

// Nobody listens on the port: Connect gives up after its timeout, naming
// the peer and the system error.
TEST(TcpSocket, RefusedConnectNamesPeerAndCause) {
  Endpoint at;
  Close(LoopbackListener(&at));  // the port is free again, nobody listens
  StatusOr<int> fd = Connect(at, 0.2, "rank 3");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kCommError);
  const std::string m = fd.status().message();
  EXPECT_NE(m.find("connect to rank 3: Connection refused"), std::string::npos) << m;
  EXPECT_NE(m.find("gave up after 0 s"), std::string::npos) << m;
}

// A listener nobody connects to: Accept returns after its timeout.
TEST(TcpSocket, AcceptTimesOut) {
  Endpoint at;
  const int listener = LoopbackListener(&at);
  StatusOr<int> fd = Accept(listener, "the master port", 0.1);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("no peer connected to the master port within"), std::string::npos)
      << fd.status().ToString();
  Close(listener);
}

TEST(TcpSocket, UnknownHostIsRefused) {
  StatusOr<Endpoint> e = Resolve("no-such-host.invalid", 29500);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("no-such-host.invalid: cannot resolve"), std::string::npos)
      << e.status().ToString();
}

}  // namespace
}  // namespace pw::exec::tcp
