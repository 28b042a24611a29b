#include "executor/comm/communicator_factory.h"

#include <gtest/gtest.h>

#include <string>

namespace pw::exec {
namespace {

TEST(CommunicatorFactory, KnowsEveryKindAndWhichAreBuilt) {
  EXPECT_EQ(CommunicatorKinds(), (std::vector<std::string>{"mpi", "nccl", "tcp"}));
  EXPECT_TRUE(CommunicatorAvailable("mpi"));
  EXPECT_TRUE(CommunicatorAvailable("tcp"));
  EXPECT_FALSE(CommunicatorAvailable("gloo"));
  EXPECT_TRUE(CheckCommunicatorKind("mpi", "--comm").ok());
  EXPECT_TRUE(CheckCommunicatorKind("tcp", "--comm").ok());
}

TEST(CommunicatorFactory, UnknownKindNamesTheFlagAndTheKnownKinds) {
  Status st = CheckCommunicatorKind("gloo", "--comm");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--comm gloo: unknown communicator (known: mpi, nccl, tcp)"), std::string::npos)
      << st.message();
  CommunicatorSpec spec;
  spec.kind = "gloo";
  EXPECT_EQ(MakeCommunicator(spec).status().code(), StatusCode::kInvalidArgument);
}

TEST(CommunicatorFactory, NcclIsRefusedClearlyWhereNotCompiledIn) {
  Status st = CheckCommunicatorKind("nccl", "--comm");
  if (CommunicatorAvailable("nccl")) {
    EXPECT_TRUE(st.ok()) << st.ToString();
  } else {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("--comm nccl: this pipewright was built without NCCL"), std::string::npos)
        << st.message();
  }
}

TEST(CommunicatorFactory, TcpKindReachesTheTcpCommunicator) {
  // A rank outside the world is refused by TcpCommunicator::Create before
  // any socket is opened.
  CommunicatorSpec spec;
  spec.kind = "tcp";
  spec.rank = 3;
  spec.world_size = 2;
  StatusOr<std::unique_ptr<CommunicatorHandle>> comm = MakeCommunicator(spec);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(comm.status().message().find("RANK 3 is outside WORLD_SIZE 2"), std::string::npos)
      << comm.status().message();
}

}  // namespace
}  // namespace pw::exec
