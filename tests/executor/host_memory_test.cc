// KeepFreedHostMemory (executor/runtime/host_memory.h): after one step-like round of
// large blocks, the next round reuses the same pages instead of faulting in
// fresh ones. Under glibc's default policy every round faults all its pages
// again (blocks above the mmap threshold are unmapped on free, and a heap top
// above the trim threshold is given back); PW_HOST_MEMORY=release shows it.
#include "executor/runtime/host_memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/sanitized.h"

namespace pw::exec {
namespace {

long MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Allocates `count` blocks of `bytes`, writes every page, frees them all
// (a GPipe step on one rank: activations grow, then all are freed).
void Round(int count, size_t bytes) {
  std::vector<char*> blocks;
  for (int k = 0; k < count; ++k) {
    char* p = static_cast<char*>(std::malloc(bytes));
    ASSERT_NE(p, nullptr);
    std::memset(p, k + 1, bytes);
    blocks.push_back(p);
  }
  for (char* p : blocks) std::free(p);
}

TEST(HostMemory, SecondRoundOfLargeBlocksFaultsNoFreshPages) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc: no mallopt controls";
#endif
  if (pw::testing::kSanitized) GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's: no mallopt page reuse";
  // PW_HOST_MEMORY=release keeps glibc's policy: the figure printed below is
  // then about two rounds' pages (checked by hand, not asserted: it is glibc's).
  const char* policy = std::getenv("PW_HOST_MEMORY");
  const bool release = policy != nullptr && std::strcmp(policy, "release") == 0;
  ASSERT_EQ(KeepFreedHostMemory(), !release);
  ASSERT_EQ(KeepFreedHostMemory(), !release);  // idempotent
  const int count = 24;
  const size_t bytes = size_t{4} << 20;  // 4 MiB: above glibc's default mmap threshold, below 32 MiB
  const long pages = static_cast<long>(count * bytes / 4096);
  Round(count, bytes);  // grows the heap once
  const long before = MinorFaults();
  Round(count, bytes);
  Round(count, bytes);
  const long faulted = MinorFaults() - before;
  std::printf("two rounds of %d x 4 MiB after the first: %ld minor faults (%ld pages per round)\n", count, faulted,
              pages);
  if (!release) {
    EXPECT_LT(faulted, pages / 10) << "freed memory was handed back and faulted in again";
  }
}

}  // namespace
}  // namespace pw::exec
