#include "tests/executor/mpi_test_main.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace pw::exec::testing {
MpiCommunicator* g_comm = nullptr;
}  // namespace pw::exec::testing

int main(int argc, char** argv) {
  auto env = pw::exec::MpiEnvironment::Init(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().ToString().c_str());
    return 1;
  }
  int rc = 0;
  {
    auto comm = pw::exec::MpiCommunicator::Create();
    if (!comm.ok()) {
      std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
      return 1;
    }
    // A failed rank must not leave the others waiting forever.
    if (pw::exec::testing::kMpiTestWatchdogS > 0) (*comm)->SetWatchdog(pw::exec::testing::kMpiTestWatchdogS);
    pw::exec::testing::g_comm = comm->get();
    ::testing::InitGoogleTest(&argc, argv);
    if ((*comm)->rank() != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
    }
    rc = RUN_ALL_TESTS();
  }
  return rc;
}
