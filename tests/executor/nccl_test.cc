// NcclCommunicator: always compiled and linked where CUDA + NCCL exist; the
// GPU checks skip on machines without a CUDA device (CI here), and run on the
// GPU machine through launch/device-check.sh.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "executor/comm/loopback_communicator.h"
#include "executor/comm/nccl_communicator.h"

namespace pw::exec {
namespace {

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

}  // namespace
}  // namespace pw::exec
