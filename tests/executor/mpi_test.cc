// Executor tests under real mpirun (one process per rank, MpiCommunicator):
//   mpirun --allow-run-as-root --oversubscribe -np P executor_mpi_test
// P = the world size. Every schedule family with that P, m in {1, P+1, 2P},
// fp64: loss and every gradient after one step and every parameter after 3
// AdamW steps equal a single-process run (each rank runs the reference
// itself and checks its own stages); rank 0 prints the worst tensor over all
// ranks. Also the pre-flight refusals of a deadlocking plan and a plan for
// another P.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "executor/comm/mpi_communicator.h"
#include "executor/runtime/preflight.h"
#include "plan/replica_batch.h"
#include "schedules/registry.h"
#include "tests/executor/executor_test_util.h"
#include "tests/executor/mpi_test_main.h"

namespace pw::exec::testing {

const double kMpiTestWatchdogS = 0;  // none (as before the shared main)

namespace {

constexpr double kTolerance = 1e-10;

struct Result {
  Status status;
  double loss = 0;
  Diff grads, params;
};

Result RunOne(const Plan& plan, const ModelConfig& model, const std::vector<TokenBatch>& batches) {
  Result out;
  EngineOptions options = Fp64Options();
  auto engine = Engine::Create(plan, *g_comm, options);
  if (!engine.ok()) {
    out.status = engine.status();
    return out;
  }
  ReferenceRun ref = RunReference(model, batches, options);
  if (!ref.status.ok()) {
    out.status = ref.status;
    return out;
  }
  for (size_t i = 0; i < batches.size(); ++i) {
    auto rep = (*engine)->Step(batches[i]);
    if (!rep.ok()) {
      out.status = rep.status();
      return out;
    }
    if (i == 0) {
      out.loss = rep->loss;
      out.grads = WorstDiff((*engine)->Gradients(), ref.grads_after_first);
      if (std::fabs(rep->loss - ref.first_loss) > kTolerance * std::fabs(ref.first_loss))
        out.status =
            Status::Internal("loss " + std::to_string(rep->loss) + " vs reference " + std::to_string(ref.first_loss));
    }
  }
  out.params = WorstDiff((*engine)->Parameters(), ref.params_after_last);
  return out;
}

class MpiEquivalenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiEquivalenceTest, MatchesSingleProcess) {
  const int P = g_comm->size();
  for (int m : {1, P + 1, 2 * P}) {
    PlanSpec spec;
    spec.schedule = GetParam();
    spec.pp_size = P;
    spec.num_microbatches = m;
    spec.model = TinyModel(8);
    spec.seq_length = 8;
    spec.micro_batch_size = 2;
    spec.bytes_per_element = 8;
    if (m == P + 1 && P > 1) {  // uneven rows: the last microbatch has 1 row
      spec.microbatch_sizes.assign(static_cast<size_t>(m), 2);
      spec.microbatch_sizes.back() = 1;
    }
    const std::string name = spec.schedule + " P=" + std::to_string(P) + " m=" + std::to_string(m);
    auto plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << name << ": cannot build the plan: " << plan.status().ToString();
    auto shape = ReadReplicaBatch(*plan);
    ASSERT_TRUE(shape.ok()) << shape.status().ToString();
    const int rows = shape->rows;
    std::vector<TokenBatch> batches;
    for (int i = 0; i < 3; ++i) batches.push_back(RandomBatch(rows, 8, 200 + i));
    Result res = RunOne(*plan, *plan->model, batches);
    // Gather every rank's worst differences to print the overall worst.
    auto all = AllGatherDoubles(*g_comm, {res.status.ok() ? 0.0 : 1.0, res.grads.rel, res.params.rel});
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    double worst_g = 0, worst_p = 0;
    int worst_rank = 0;
    for (size_t r = 0; r < all->size(); ++r) {
      if ((*all)[r][1] > worst_g) {
        worst_g = (*all)[r][1];
        worst_rank = static_cast<int>(r);
      }
      worst_p = std::max(worst_p, (*all)[r][2]);
    }
    if (g_comm->rank() == 0)
      std::printf("[ mpi      ] %-28s loss %.12f worst grad rel %.2e (rank %d) worst param rel %.2e\n", name.c_str(),
                  res.loss, worst_g, worst_rank, worst_p);
    EXPECT_TRUE(res.status.ok()) << name << " rank " << g_comm->rank() << ": " << res.status.ToString();
    EXPECT_LE(res.grads.rel, kTolerance) << name << " rank " << g_comm->rank()
                                         << ": gradients: " << Describe(res.grads);
    EXPECT_LE(res.params.rel, kTolerance)
        << name << " rank " << g_comm->rank() << ": parameters after 3 steps: " << Describe(res.params);
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, MpiEquivalenceTest, ::testing::ValuesIn(ScheduleNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// Polls Test(id) until it returns true or an error, for at most 30 s.
StatusOr<bool> TestUntilDone(Communicator& c, RequestId id) {
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    StatusOr<bool> done = c.Test(id);
    if (!done.ok() || *done) return done;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Test() on MPI around a ring: a receive is not complete before its sender
// posted (the sender posts only after a barrier that follows the first
// test); then a 1 MiB message (beyond the eager limit) and its send complete
// under Test alone, data intact; a consumed id is unknown; a receive posted
// with more bytes than sent is Wait's byte-count CommError.
TEST(MpiCommunicatorTest, TestCompletesLikeWait) {
  const int P = g_comm->size(), r = g_comm->rank();
  const int next = (r + 1) % P, prev = (r + P - 1) % P;
  const size_t n = (1 << 20) / sizeof(int32_t);
  std::vector<int32_t> out(n), in(n, -1);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(r * 1000003 + i);
  const int64_t bytes = static_cast<int64_t>(n * sizeof(int32_t));
  StatusOr<RequestId> recv = g_comm->Irecv(prev, Channel::kForward, in.data(), bytes);
  ASSERT_TRUE(recv.ok()) << recv.status().ToString();
  StatusOr<bool> first = g_comm->Test(*recv);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(*first) << "rank " << r << ": receive complete before rank " << prev << " sent";
  ASSERT_TRUE(g_comm->Barrier().ok());
  StatusOr<RequestId> send = g_comm->Isend(next, Channel::kForward, out.data(), bytes);
  ASSERT_TRUE(send.ok()) << send.status().ToString();
  for (RequestId id : {*recv, *send}) {
    StatusOr<bool> done = TestUntilDone(*g_comm, id);
    ASSERT_TRUE(done.ok()) << "rank " << r << ": " << done.status().ToString();
    EXPECT_TRUE(*done) << "rank " << r << ": request " << id << " not complete after 30 s of Test";
  }
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += in[i] != static_cast<int32_t>(prev * 1000003 + i);
  EXPECT_EQ(wrong, 0u) << "rank " << r << ": values differ from rank " << prev << "'s";
  EXPECT_EQ(g_comm->Test(*send).status().code(), StatusCode::kInternal);
  EXPECT_EQ(g_comm->Test(*recv).status().code(), StatusCode::kInternal);
  // 8 bytes sent into a 16-byte receive.
  int64_t small_out = r, small_in[2] = {-1, -1};
  StatusOr<RequestId> r2 = g_comm->Irecv(prev, Channel::kBackward, small_in, sizeof(small_in));
  StatusOr<RequestId> s2 = g_comm->Isend(next, Channel::kBackward, &small_out, sizeof(small_out));
  ASSERT_TRUE(r2.ok() && s2.ok());
  StatusOr<bool> bad = TestUntilDone(*g_comm, *r2);
  ASSERT_FALSE(bad.ok()) << "rank " << r;
  EXPECT_EQ(bad.status().code(), StatusCode::kCommError);
  EXPECT_NE(bad.status().message().find("receive from rank " + std::to_string(prev) + ": got 8 bytes, expected 16"),
            std::string::npos)
      << bad.status().ToString();
  EXPECT_TRUE(g_comm->Wait(*s2).ok());
  ASSERT_TRUE(g_comm->Barrier().ok());
}

PlanSpec SmallSpec(const std::string& schedule, int p, int m) {
  PlanSpec spec;
  spec.schedule = schedule;
  spec.pp_size = p;
  spec.num_microbatches = m;
  spec.model = TinyModel(6);
  spec.seq_length = 8;
  return spec;
}

TEST(MpiPreflightTest, RefusesPlanForAnotherP) {
  const int P = g_comm->size();
  auto plan = BuildPlan(SmallSpec("1f1b", P + 1, 4));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto engine = Engine::Create(*plan, *g_comm, Fp64Options());
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("pp_size=" + std::to_string(P + 1)), std::string::npos)
      << engine.status().ToString();
  EXPECT_NE(engine.status().message().find("-np " + std::to_string(P)), std::string::npos)
      << engine.status().ToString();
}

TEST(MpiPreflightTest, RefusesDeadlockingPlan) {
  const int P = g_comm->size();
  auto plan = BuildPlan(SmallSpec("gpipe", P, 1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto& r0 = plan->ranks[0];
  auto find = [&](const std::string& s) {
    for (size_t i = 0; i < r0.size(); ++i)
      if (r0[i].ToString() == s) return static_cast<long>(i);
    return -1L;
  };
  long send = find("0SEND_F0");
  ASSERT_GE(send, 0);
  Action a = r0[send];
  r0.erase(r0.begin() + send);
  r0.insert(r0.begin() + find("0B0") + 1, a);
  auto engine = Engine::Create(*plan, *g_comm, Fp64Options());
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("deadlock"), std::string::npos) << engine.status().ToString();
}

}  // namespace
}  // namespace pw::exec::testing
