// NcclCommunicator: always compiled and linked where CUDA + NCCL exist; the
// GPU checks skip on machines without a CUDA device (CI here), and run on the
// GPU machine through launch/device-check.sh.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "executor/comm/communicator_factory.h"
#include "executor/comm/loopback_communicator.h"
#include "executor/comm/nccl_communicator.h"
#include "executor/comm/tcp_communicator.h"
#include "tests/testing/free_port.h"

namespace pw::exec {
namespace {

using ::pw::testing::FreePort;

TEST(Nccl, BuiltAndLinked) {
  // Creating on a machine without a device must fail with a clear error,
  // not crash: this runs everywhere.
  if (CudaDeviceAvailable()) GTEST_SKIP() << "has a GPU: see SelfSendRoundTrip";
  LoopbackCommunicator bootstrap(std::make_shared<LoopbackHub>(1), 0);
  auto nccl = NcclCommunicator::Create(bootstrap, 0);
  ASSERT_FALSE(nccl.ok());
  EXPECT_NE(nccl.status().message().find("rank 0"), std::string::npos) << nccl.status().message();
}

TEST(Nccl, SelfSendRoundTrip) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  LoopbackCommunicator bootstrap(std::make_shared<LoopbackHub>(1), 0);
  auto nccl = NcclCommunicator::Create(bootstrap, 0);
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  std::printf("%s\n", (*nccl)->Describe().c_str());
  const size_t n = 1 << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 977) * 0.5f;
  void *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(src, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_TRUE((*nccl)->GroupStart().ok());
  auto s = (*nccl)->Isend(0, Channel::kForward, src, n * sizeof(float));
  auto r = (*nccl)->Irecv(0, Channel::kForward, dst, n * sizeof(float));
  ASSERT_TRUE((*nccl)->GroupEnd().ok());
  ASSERT_TRUE(s.ok() && r.ok());
  ASSERT_TRUE((*nccl)->Wait(*s).ok());
  ASSERT_TRUE((*nccl)->Wait(*r).ok());
  ASSERT_TRUE((*nccl)->Synchronize().ok());
  std::vector<float> back(n);
  ASSERT_EQ(cudaMemcpy(back.data(), dst, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += back[i] != host[i];
  std::printf("NCCL self send of %zu bytes: #wrong %zu\n", n * sizeof(float), wrong);
  EXPECT_EQ(wrong, 0u);
  cudaFree(src);
  cudaFree(dst);
}

// Test(): an id of a still open group is unknown; after GroupEnd, polling
// Test alone (no Wait, no Synchronize) completes both operations, the data
// is there for a plain copy, and the consumed ids are unknown.
TEST(Nccl, TestCompletesWithoutWait) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no CUDA device";
  LoopbackCommunicator bootstrap(std::make_shared<LoopbackHub>(1), 0);
  auto nccl = NcclCommunicator::Create(bootstrap, 0);
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  const size_t n = 1 << 20;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 541) * 0.25f;
  void *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(src, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_TRUE((*nccl)->GroupStart().ok());
  auto s = (*nccl)->Isend(0, Channel::kForward, src, n * sizeof(float));
  auto r = (*nccl)->Irecv(0, Channel::kForward, dst, n * sizeof(float));
  ASSERT_TRUE(s.ok() && r.ok());
  EXPECT_EQ((*nccl)->Test(*s).status().code(), StatusCode::kInternal) << "group still open";
  ASSERT_TRUE((*nccl)->GroupEnd().ok());
  int polls = 0;
  for (RequestId id : {*s, *r}) {
    bool done = false;
    for (int k = 0; k < 2000000 && !done; ++k, ++polls) {
      StatusOr<bool> t = (*nccl)->Test(id);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      done = *t;
    }
    ASSERT_TRUE(done) << "request " << id << " not complete after 2e6 polls";
    EXPECT_EQ((*nccl)->Test(id).status().code(), StatusCode::kInternal) << "consumed";
  }
  std::vector<float> back(n);
  ASSERT_EQ(cudaMemcpy(back.data(), dst, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += back[i] != host[i];
  std::printf("NCCL self send by Test (%d polls): #wrong %zu\n", polls, wrong);
  EXPECT_EQ(wrong, 0u);
  cudaFree(src);
  cudaFree(dst);
}

// ---- NCCL bootstrapped through the TCP rendezvous (torchrun) ----

std::string Hex(const std::string& bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

// One rank of the bootstrap test, in its own process: the TCP rendezvous
// (world of `world`), then what NcclCommunicator::Create and ::Split do
// before ncclCommInitRank: the world's unique id, and the ids of the
// pipeline (color g % 2) and data-parallel (color g / 2) groups of a 2 x 2
// grid formed by TcpCommunicator::Split, plus a message inside each group.
// Writes "key value" lines to `out`; returns the process exit code.
int BootstrapRank(int rank, int world, int port, const std::string& out) {
  std::ofstream log(out);
  TcpOptions o;
  o.master_port = port;
  o.watchdog_s = 20;
  o.connect_timeout_s = 20;
  auto comm = TcpCommunicator::Create(rank, world, o);
  if (!comm.ok()) {
    log << "error " << comm.status().ToString() << "\n";
    return 1;
  }
  auto world_id = ShareNcclUniqueId(**comm);
  auto pipe = (*comm)->Split(rank % 2, rank / 2, "pipeline");
  auto dp = (*comm)->Split(rank / 2, rank % 2, "data-parallel");
  if (!world_id.ok() || !pipe.ok() || !dp.ok()) {
    log << "error "
        << (!world_id.ok() ? world_id.status()
            : !pipe.ok()   ? pipe.status()
                           : dp.status())
               .ToString()
        << "\n";
    return 1;
  }
  auto pipe_id = ShareNcclUniqueId(**pipe);
  auto dp_id = ShareNcclUniqueId(**dp);
  if (!pipe_id.ok() || !dp_id.ok()) {
    log << "error " << (!pipe_id.ok() ? pipe_id.status() : dp_id.status()).ToString() << "\n";
    return 1;
  }
  // A message to the group's other rank on the group's forward channel
  // (the world's forward channel carries another value at the same time).
  for (Communicator* g : {pipe->get(), dp->get()}) {
    const int peer = 1 - g->rank();
    int64_t mine = 1000 * rank + g->size(), theirs = -1, noise = -7, noise_in = 0;
    const int world_peer = rank ^ 1;
    auto s = g->Isend(peer, Channel::kForward, &mine, sizeof mine);
    auto w = (*comm)->Isend(world_peer, Channel::kForward, &noise, sizeof noise);
    auto r = g->Irecv(peer, Channel::kForward, &theirs, sizeof theirs);
    auto wr = (*comm)->Irecv(world_peer, Channel::kForward, &noise_in, sizeof noise_in);
    if (!s.ok() || !r.ok() || !w.ok() || !wr.ok() || !g->Wait(*s).ok() || !g->Wait(*r).ok() ||
        !(*comm)->Wait(*w).ok() || !(*comm)->Wait(*wr).ok()) {
      log << "error group message\n";
      return 1;
    }
    log << (g == pipe->get() ? "pipe_msg " : "dp_msg ") << theirs << "\n";
  }
  log << "group_ranks " << (*pipe)->rank() << " " << (*dp)->rank() << "\n";
  log << "world " << Hex(*world_id) << "\npipe " << Hex(*pipe_id) << "\ndp " << Hex(*dp_id) << "\n";
  return (*comm)->Barrier().ok() ? 0 : 1;
}

// Four processes meet at a real TCP rendezvous on the loopback, as torchrun's
// ranks do, and share NCCL unique ids (made by NCCL itself, which needs no
// GPU for that) for the world and for each group of a 2 x 2 grid: every
// member of a group holds the same id, different groups hold different ids,
// and the groups' messages do not mix with the world's.
TEST(NcclOverTcp, UniqueIdsReachEveryGroupThroughTheRendezvous) {
  const int world = 4, port = FreePort();
  ASSERT_NE(port, 0);
  char tmpl[] = "/tmp/pw-nccl-tcp-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(BootstrapRank(r, world, port, dir + "/rank" + std::to_string(r)));
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::map<std::string, std::string>> got(world);
  for (int r = 0; r < world; ++r) {
    std::ifstream in(dir + "/rank" + std::to_string(r));
    for (std::string key, value; in >> key && std::getline(in, value);) got[r][key] = value.substr(1);
    ASSERT_EQ(got[r].count("error"), 0u) << "rank " << r << ": " << got[r]["error"];
    ASSERT_EQ(got[r]["world"].size(), 256u) << "rank " << r << ": a 128-byte id";
  }
  std::filesystem::remove_all(dir);
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(got[r]["world"], got[0]["world"]) << "rank " << r;
    EXPECT_EQ(got[r]["pipe"], got[r % 2]["pipe"]) << "pipeline group of rank " << r;
    EXPECT_EQ(got[r]["dp"], got[(r / 2) * 2]["dp"]) << "data-parallel group of rank " << r;
    EXPECT_EQ(got[r]["group_ranks"], std::to_string(r / 2) + " " + std::to_string(r % 2)) << "rank " << r;
    // The pipeline peer is g ^ 2, the data-parallel peer g ^ 1; each sent
    // 1000 * its world rank + its group's size (2).
    EXPECT_EQ(got[r]["pipe_msg"], std::to_string(1000 * (r ^ 2) + 2)) << "rank " << r;
    EXPECT_EQ(got[r]["dp_msg"], std::to_string(1000 * (r ^ 1) + 2)) << "rank " << r;
  }
  std::set<std::string> ids = {got[0]["world"], got[0]["pipe"], got[1]["pipe"], got[0]["dp"], got[2]["dp"]};
  EXPECT_EQ(ids.size(), 5u) << "five communicators, five distinct ids";
  std::printf("NCCL unique ids over TCP: 4 processes, world + 2 pipeline + 2 data-parallel groups in %.2f s\n", secs);
}

// Where no GPU is visible, `--comm nccl` over the TCP rendezvous is refused
// before any rendezvous (a world of 2 whose peer never starts: reaching the
// rendezvous would wait for it), naming the CUDA error and the CPU way.
TEST(NcclOverTcp, RefusedClearlyWithoutAGpu) {
  if (CudaDeviceAvailable()) GTEST_SKIP() << "has a GPU: the torchrun NCCL run is device-check.sh's";
  CommunicatorSpec spec;
  spec.kind = "nccl";
  spec.bootstrap = "tcp";
  spec.rank = 0;
  spec.world_size = 2;
  spec.tcp.master_port = FreePort();
  spec.tcp.connect_timeout_s = 30;
  const auto t0 = std::chrono::steady_clock::now();
  auto comm = MakeCommunicator(spec);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  for (const char* want : {"--comm nccl: rank 0 sees no CUDA device", "cudaGetDeviceCount", "leave out --comm nccl"})
    EXPECT_NE(comm.status().message().find(want), std::string::npos) << comm.status().message();
  EXPECT_LT(secs, 5.0) << "refused before the rendezvous";
}

}  // namespace
}  // namespace pw::exec
