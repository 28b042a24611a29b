// Cases from public bug reports on pipeline / gradient-accumulation trainers,
// plus the pre-flight refusals.
//  - Gradient accumulation must not rescale gradients per microbatch (the
//    summed microbatch gradients equal the full-batch gradient, not m x it or
//    1/m of it).
//  - A batch split into unequal microbatches weights each microbatch's mean
//    loss by its size (a plain mean of microbatch means is wrong).
//  - Zero-bubble split backward keeps no activation or stash alive after the
//    step, and the bytes held between I and W match the plan's wstash.
//  - A sent message is freed when its send completes, not at the end of the
//    step (peak memory above the plan's prediction).
//  - A deadlocking plan, a plan for another P, and ranks holding different
//    plans are refused before any compute, naming the problem.
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "executor/runtime/cpu_allocator.h"
#include "executor/runtime/preflight.h"
#include "schedules/registry.h"
#include "tests/executor/executor_test_util.h"

namespace pw::exec::testing {
namespace {

PlanSpec Spec(const std::string& schedule, int p, int m, std::vector<int> sizes = {}) {
  PlanSpec spec;
  spec.schedule = schedule;
  spec.pp_size = p;
  spec.num_microbatches = m;
  spec.model = TinyModel(4);
  spec.seq_length = 8;
  spec.micro_batch_size = 2;
  spec.microbatch_sizes = std::move(sizes);
  spec.bytes_per_element = 8;
  return spec;
}

TEST(BugReportsTest, GradientAccumulationDoesNotRescalePerMicrobatch) {
  PlanSpec spec = Spec("1f1b", 2, 4);
  auto plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<TokenBatch> batches = {RandomBatch(8, 8, 1)};
  auto runs = RunLoopback(*plan, 2, batches, Fp64Options());
  ReferenceRun ref = RunReference(*plan->model, batches, Fp64Options());
  std::vector<NamedValues> grads;
  for (auto& r : runs) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    grads.insert(grads.end(), r.grads_after_first.begin(), r.grads_after_first.end());
  }
  Diff d = WorstDiff(grads, ref.grads_after_first);
  EXPECT_LE(d.rel, 1e-10) << Describe(d);
  // A per-microbatch rescaling bug would show as a factor m (or 1/m) here.
  double got = 0, want = 0;
  for (size_t i = 0; i < grads.size(); ++i)
    for (size_t j = 0; j < grads[i].values.size(); ++j) got += grads[i].values[j] * grads[i].values[j];
  for (const auto& g : ref.grads_after_first)
    for (double x : g.values) want += x * x;
  EXPECT_NEAR(std::sqrt(got / want), 1.0, 1e-10) << "gradient norm ratio pipeline / full batch";
}

TEST(BugReportsTest, UnequalMicrobatchesAreWeightedBySize) {
  // 8 rows into microbatches of 3, 3 and 2.
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1"}) {
    PlanSpec spec = Spec(schedule, 2, 3, {3, 3, 2});
    auto plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << schedule << ": " << plan.status().ToString();
    std::vector<TokenBatch> batches = {RandomBatch(8, 8, 5)};
    auto runs = RunLoopback(*plan, 2, batches, Fp64Options());
    ReferenceRun ref = RunReference(*plan->model, batches, Fp64Options());
    std::vector<NamedValues> grads;
    for (auto& r : runs) {
      ASSERT_TRUE(r.status.ok()) << schedule << ": " << r.status.ToString();
      grads.insert(grads.end(), r.grads_after_first.begin(), r.grads_after_first.end());
    }
    EXPECT_NEAR(runs[0].reports[0].loss, ref.first_loss, 1e-10 * ref.first_loss) << schedule;
    Diff d = WorstDiff(grads, ref.grads_after_first);
    EXPECT_LE(d.rel, 1e-10) << schedule << ": " << Describe(d);
  }
}

// Runs two steps on `world` loopback ranks and measures the CPU bytes the
// process holds after step 1 and after step 2 (all ranks quiescent).
TEST(BugReportsTest, SplitBackwardLeavesNothingAliveAndStashMatchesPlan) {
  InstallTrackingCpuAllocator();
  // Every registered split-backward family, and 1F1B (B) as the control.
  std::vector<std::string> schedules;
  for (const std::string& name : ScheduleNames())
    if (FindSchedule(name)->split_backward) schedules.push_back(name);
  ASSERT_FALSE(schedules.empty());
  schedules.push_back("1f1b");
  for (const std::string& schedule : schedules) {
    PlanSpec spec = Spec(schedule, 2, 4);
    auto plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << schedule << ": " << plan.status().ToString();
    auto hub = std::make_shared<LoopbackHub>(2, 60.0);
    std::vector<Status> status(2);
    std::vector<int64_t> bytes_after(2, 0);
    std::vector<std::vector<StashReport>> stash(2);
    std::vector<int> live(2, -1);
    TokenBatch b0 = RandomBatch(8, 8, 11), b1 = RandomBatch(8, 8, 12);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        LoopbackCommunicator comm(hub, r);
        auto engine = Engine::Create(*plan, comm, Fp64Options());
        if (!engine.ok()) {
          status[r] = engine.status();
          return;
        }
        for (int step = 0; step < 2; ++step) {
          auto rep = (*engine)->Step(step == 0 ? b0 : b1);
          if (!rep.ok()) {
            status[r] = rep.status();
            return;
          }
          if (step == 0) stash[r] = (*engine)->Stash();
          status[r] = comm.Barrier();  // every rank done with the step
          if (r == 0) bytes_after[step] = TrackedCpuBytes();
          if (status[r].ok()) status[r] = comm.Barrier();
        }
        live[r] = (*engine)->LiveGraphsAfterStep();
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < 2; ++r)
      ASSERT_TRUE(status[r].ok()) << schedule << " rank " << r << ": " << status[r].ToString();
    // Step 1 allocates gradients and optimizer state; step 2 must end where it began.
    EXPECT_EQ(bytes_after[1], bytes_after[0])
        << schedule << ": live CPU bytes after step 2 differ from after step 1 (activation or stash leaked)";
    for (int r = 0; r < 2; ++r) EXPECT_EQ(live[r], 0) << schedule << " rank " << r << ": autograd graphs alive";
    const bool split = FindSchedule(schedule)->split_backward;
    for (int r = 0; r < 2; ++r) {
      for (const StashReport& s : stash[r]) {
        if (!split) {
          EXPECT_EQ(s.measured_bytes, 0) << schedule << ": B must not defer weight gradients";
          continue;
        }
        const double ratio = static_cast<double>(s.measured_bytes) / static_cast<double>(s.predicted_bytes);
        std::printf("[ wstash   ] %-8s stage %d: measured %lld B, plan %lld B, ratio %.4f\n", schedule.c_str(), s.stage,
                    static_cast<long long>(s.measured_bytes), static_cast<long long>(s.predicted_bytes), ratio);
        EXPECT_NEAR(ratio, 1.0, 0.10) << schedule << " stage " << s.stage << ": bytes held between I and W";
      }
    }
    std::printf("[ live     ] %-8s bytes after step 1 %lld, after step 2 %lld\n", schedule.c_str(),
                static_cast<long long>(bytes_after[0]), static_cast<long long>(bytes_after[1]));
  }
}

// Two threads meet here (a reusable two-party barrier).
class Rendezvous {
 public:
  void Arrive() {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t gen = generation_;
    if (++arrived_ == 2) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != gen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t generation_ = 0;
};

// A sent activation / input gradient is freed once its send completed, not
// held until the end of the step (the plan's memory model has no message
// buffers). 1F1B P=2 m=8, fp64, loopback (sends complete at post): before
// each action a rank holds exactly the messages sent since its last compute
// (at most one, 2 x 8 x 16 x 8 B = 2048 B), where holding every sent message
// to the end of the step reached 8. And in the steady state the process's
// live CPU bytes are the same each cycle, measured with both ranks stopped at
// the same point (rank 0 before 0Bk, rank 1 before 1SEND_Bk, k = 1..6):
// holding messages grows them by 4096 B per microbatch (rank 0's activation,
// rank 1's input gradient).
TEST(BugReportsTest, SentMessagesAreFreedWhenTheirSendCompletes) {
  InstallTrackingCpuAllocator();
  PlanSpec spec = Spec("1f1b", 2, 8);
  auto plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  constexpr int64_t kMessageBytes = 2 * 8 * 16 * 8;  // b x T x C x fp64
  auto hub = std::make_shared<LoopbackHub>(2, 60.0);
  std::vector<Status> status(2);
  std::vector<int> max_held(2, -1), mismatches(2, 0), held_after(2, -1);
  std::vector<int64_t> max_held_bytes(2, -1);
  std::vector<std::string> first_mismatch(2);
  std::vector<int64_t> cycle_bytes;  // live CPU bytes at the k-th meeting, step 2
  Rendezvous meet;
  TokenBatch b0 = RandomBatch(16, 8, 21), b1 = RandomBatch(16, 8, 22);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      auto engine = Engine::Create(*plan, comm, Fp64Options());
      if (!engine.ok()) {
        status[r] = engine.status();
        return;
      }
      const std::vector<Action>& list = plan->ranks[r];
      for (int step = 0; step < 2; ++step) {
        StepHooks hooks;
        hooks.before_action = [&](int index) {
          // Sends since the last compute (not yet tested: Test runs after computes).
          int want = 0;
          for (int j = index - 1; j >= 0 && IsComm(list[j].type); --j)
            want += list[j].type == ActionType::kSendF || list[j].type == ActionType::kSendB;
          const int held = (*engine)->HeldMessages();
          max_held[r] = std::max(max_held[r], held);
          max_held_bytes[r] = std::max(max_held_bytes[r], (*engine)->HeldMessageBytes());
          if (held != want && mismatches[r]++ == 0)
            first_mismatch[r] = "before " + list[index].ToString() + ": holds " + std::to_string(held) +
                                " messages, want " + std::to_string(want);
          if (step != 1) return;
          const std::string a = list[index].ToString();
          for (int k = 1; k <= 6; ++k) {
            if (a != (r == 0 ? "0B" : "1SEND_B") + std::to_string(k)) continue;
            meet.Arrive();  // both ranks stopped
            if (r == 0) cycle_bytes.push_back(TrackedCpuBytes());
            meet.Arrive();
          }
        };
        auto rep = (*engine)->Step(step == 0 ? b0 : b1, /*apply_optimizer=*/true, &hooks);
        if (!rep.ok()) {
          status[r] = rep.status();
          return;
        }
      }
      held_after[r] = (*engine)->HeldMessages();
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].ToString();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(mismatches[r], 0) << "rank " << r << ": " << first_mismatch[r];
    EXPECT_EQ(max_held[r], 1) << "rank " << r << ": most sent messages held at once";
    EXPECT_EQ(max_held_bytes[r], kMessageBytes) << "rank " << r;
    EXPECT_EQ(held_after[r], 0) << "rank " << r;
  }
  ASSERT_EQ(cycle_bytes.size(), 6u);
  for (size_t k = 1; k < cycle_bytes.size(); ++k)
    EXPECT_EQ(cycle_bytes[k] - cycle_bytes[0], 0)
        << "live CPU bytes grew from microbatch 1 to microbatch " << k + 1
        << " (held messages: " << (cycle_bytes[k] - cycle_bytes[0]) / (2 * kMessageBytes) << " per rank)";
  std::printf("[ messages ] 1f1b P=2 m=8: live CPU bytes at microbatch 1..6 of step 2:");
  for (int64_t x : cycle_bytes) std::printf(" %lld", static_cast<long long>(x));
  std::printf("\n");
}

// Creates engines on `world` loopback ranks; returns each rank's status.
std::vector<Status> CreateOnRanks(const std::vector<Plan>& plans, int world) {
  auto hub = std::make_shared<LoopbackHub>(world, 20.0);
  std::vector<Status> out(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      out[r] = Engine::Create(plans[static_cast<size_t>(r) % plans.size()], comm, Fp64Options()).status();
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(PreflightTest, RefusesDeadlockingPlan) {
  auto plan = BuildPlan(Spec("gpipe", 2, 1));
  ASSERT_TRUE(plan.ok());
  // Rank 0 sends microbatch 0's activation only after its own backward of
  // microbatch 0, which needs rank 1's gradient, which needs that activation.
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
  std::vector<Status> st = CreateOnRanks({*plan}, 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(st[r].ok());
    EXPECT_NE(st[r].message().find("deadlock"), std::string::npos) << st[r].ToString();
    EXPECT_NE(st[r].message().find("nothing was computed"), std::string::npos) << st[r].ToString();
  }
}

TEST(PreflightTest, RefusesPlanForAnotherP) {
  auto plan = BuildPlan(Spec("1f1b", 3, 3));
  ASSERT_TRUE(plan.ok());
  std::vector<Status> st = CreateOnRanks({*plan}, 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(st[r].ok());
    EXPECT_NE(st[r].message().find("pp_size=3"), std::string::npos) << st[r].ToString();
    EXPECT_NE(st[r].message().find("-np 2"), std::string::npos) << st[r].ToString();
  }
}

TEST(PreflightTest, RefusesRanksWithDifferentPlans) {
  auto a = BuildPlan(Spec("1f1b", 2, 2));
  auto b = BuildPlan(Spec("1f1b", 2, 4));
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<Status> st = CreateOnRanks({*a, *b}, 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(st[r].ok());
    EXPECT_NE(st[r].message().find("plan hash mismatch"), std::string::npos) << st[r].ToString();
  }
}

TEST(PreflightTest, RefusesLayerRangesThatDoNotCoverTheModel) {
  auto plan = BuildPlan(Spec("1f1b", 2, 2));
  ASSERT_TRUE(plan.ok());
  // An edited model section: the reader finds the layer list is not the
  // model's; a plan built in memory with the edit is stopped by pre-flight.
  nlohmann::json doc = nlohmann::json::parse(PlanToJson(*plan));
  doc["model"]["num_layers"] = 5;
  auto edited = ParsePlan(doc.dump(), "edited.json");
  ASSERT_FALSE(edited.ok());
  EXPECT_NE(edited.status().message().find("edited.json: layers: has 6 entries, but the model has 7 layers"),
            std::string::npos)
      << edited.status().ToString();
  plan->model->num_layers = 5;  // 7 layers, the stages cover 6
  std::vector<Status> st = CreateOnRanks({*plan}, 2);
  EXPECT_NE(st[0].message().find("the model has 7 layers"), std::string::npos) << st[0].ToString();
}

}  // namespace
}  // namespace pw::exec::testing
