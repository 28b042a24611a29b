// Data parallel x pipeline, measured vs simulated: dp x pp ranks under
// mpirun train a GPT with each schedule and compare the step time and the
// gradient all-reduce's exposed time with the simulator (schedules/simulate.h)
// replaying the same step:
//
//   mpirun -np 4 --oversubscribe dp_bench --dp 2 --pp 2 --data text.txt
//          --schedules 1f1b,zb-h1 --steps 10 --warmup-steps 3
//
// Per schedule rank 0 prints one row (bench/README.md):
//   measured   medians over the timed steps of Engine::Step's figures: the
//              step (barrier -> optimizer done, max over all ranks), the
//              makespan (barrier -> last action done) and the all-reduce's
//              exposed time (StepReport::reduce_wait_s: the longest a rank
//              blocked on the reduction after its last action)
//   all-reduce alone  median seconds of the all-reduce of each stage's
//              gradient (in the executor's buckets) over its data-parallel group, measured
//              before training with every group reducing at once; and the
//              ring model 2(D-1)/D x bytes / bandwidth + 2(D-1) x latency
//              with the link numbers of the bench's test device
//   simulated  the simulator on the plan's lists (REDUCE_GRAD included) with
//              this run's measured mean F/I/W/B per stage and the measured
//              all-reduce per stage: makespan = step without the optimizer;
//              exposed = max over ranks of (last REDUCE_GRAD end - last other
//              action end), clamped at 0
//   skew       median over the timed steps of the largest spread, within a
//              data-parallel group, of the moment its ranks posted their last
//              REDUCE_GRAD (seconds from the step's barrier): the simulator
//              replays identical replicas, so a rank that arrives first and
//              waits for its slower peer is exposure it cannot see;
//              (sim + skew)/meas tests that decomposition: the median over
//              the timed steps of (simulated exposed + that step's skew) /
//              that step's measured exposed time
// The plans come from the planner (tests/testing/test_plans.h, fixed test CPU
// device) so that only the replayed durations carry this machine's speed.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "executor/comm/mpi_communicator.h"
#include "executor/data/data.h"
#include "executor/runtime/engine.h"
#include "plan/plan.h"
#include "plan/replica_batch.h"
#include "planner/data_parallel.h"
#include "schedules/simulate.h"
#include "tests/testing/test_plans.h"

namespace pw::exec {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int Slot(ActionType t) { return t == ActionType::kF ? 0 : t == ActionType::kI ? 1 : t == ActionType::kW ? 2 : 3; }

struct Config {
  int dp = 2, pp = 2, m = 8, b = 2, seq = 128, n_layer = 4, n_embd = 256, steps = 10, warmup = 3;
  std::string schedules = "1f1b,zb-h1", data;
  bool no_progress = false;  // EngineOptions::dp_progress = false
};

// Seconds of one all-reduce of `count` float32 elements over `group`, cut
// into the executor's buckets (planner/data_parallel.h
// kDataParallelBucketBytes: every bucket posted, then all waited, as
// executor/runtime/data_parallel.cc does), median of `reps`, after a barrier so that
// every group reduces at once, as in a step. (One call of the whole count
// took up to 2x longer than the same bytes in buckets with Open MPI's
// shared-memory all-reduce here, which made the replay over-predict.)
StatusOr<double> TimeAllReduce(Communicator& world, Communicator& group, int64_t count, int reps) {
  std::vector<float> buf(static_cast<size_t>(count), 1.0f);
  const int64_t bucket = std::max<int64_t>(1, kDataParallelBucketBytes / static_cast<int64_t>(sizeof(float)));
  std::vector<double> times;
  for (int k = 0; k < reps + 2; ++k) {
    PW_RETURN_IF_ERROR(world.Barrier());
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<RequestId> ids;
    for (int64_t first = 0; first < count; first += bucket) {
      PW_ASSIGN_OR_RETURN(RequestId id, group.IallReduceSum(buf.data() + first, std::min(bucket, count - first),
                                                            ElementType::kFloat32));
      ids.push_back(id);
    }
    for (RequestId id : ids) PW_RETURN_IF_ERROR(group.Wait(id));
    if (k >= 2) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return Median(times);
}

Status RunSchedule(const Config& cfg, const std::string& schedule, Communicator& world, Communicator& dp_group) {
  const bool printer = world.rank() == 0;
  PlanSpec spec;
  spec.schedule = schedule;
  spec.pp_size = cfg.pp;
  spec.dp_size = cfg.dp;
  spec.num_microbatches = cfg.m;
  spec.micro_batch_size = cfg.b;
  spec.seq_length = cfg.seq;
  spec.model = {
      {"n_layer", cfg.n_layer}, {"n_embd", cfg.n_embd}, {"n_head", 8}, {"n_positions", cfg.seq}, {"vocab_size", 256}};
  PW_ASSIGN_OR_RETURN(Plan plan, BuildPlan(spec));
  PW_ASSIGN_OR_RETURN(ReplicaBatch shape, ReadReplicaBatch(plan));
  PW_ASSIGN_OR_RETURN(TextDataset data, TextDataset::Open(cfg.data, shape.seq_length, 1));
  EngineOptions eo;
  eo.intra_op_threads = 1;
  eo.lr = 1e-3;
  eo.dp_progress = !cfg.no_progress;
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(plan, world, eo));
  const Program program = PlanProgram(plan);
  const int S = plan.num_stages;
  // The all-reduce of each of this rank's stages alone.
  std::vector<double> reduce_alone(static_cast<size_t>(S), 0.0), stage_bytes(static_cast<size_t>(S), 0.0);
  for (const StageParameterBytes& sp : engine->StageParameters()) {
    PW_ASSIGN_OR_RETURN(double secs, TimeAllReduce(world, dp_group, sp.numel, 10));
    reduce_alone[sp.stage] = secs;
    stage_bytes[sp.stage] = static_cast<double>(sp.bytes);
  }
  // Every rank holds the same number of stages in these plans, so the
  // barriers inside TimeAllReduce pair up across ranks.
  PW_ASSIGN_OR_RETURN(auto all_alone, AllGatherDoubles(world, reduce_alone));
  PW_ASSIGN_OR_RETURN(auto all_bytes, AllGatherDoubles(world, stage_bytes));
  StepHooks hooks;
  hooks.record_spans = true;
  std::vector<double> steps, makespans, exposed;
  std::vector<double> dur(static_cast<size_t>(S) * 8, 0.0);
  // Per stage: the in-step reduction (posted at REDUCE_GRAD -> completion
  // first observed), summed over the timed steps, and the seconds from the
  // rank's last action to that completion.
  std::vector<double> in_step(static_cast<size_t>(S) * 2, 0.0);
  // Per timed step: when this rank posted its last REDUCE_GRAD (seconds from
  // the step's barrier). The spread of that moment over a data-parallel
  // group is the replicas' skew: the first to arrive waits for the last.
  std::vector<double> last_post;
  const int rank = engine->rank();
  for (int step = 0; step < cfg.warmup + cfg.steps; ++step) {
    TokenBatch global = data.Batch(step, shape.rows * cfg.dp);
    TokenBatch mine;
    mine.rows = shape.rows;
    mine.seq = global.seq;
    const size_t first = static_cast<size_t>(engine->dp_rank()) * shape.rows * global.seq;
    const size_t n = static_cast<size_t>(shape.rows) * global.seq;
    mine.inputs.assign(global.inputs.begin() + first, global.inputs.begin() + first + n);
    mine.targets.assign(global.targets.begin() + first, global.targets.begin() + first + n);
    PW_ASSIGN_OR_RETURN(StepReport r, engine->Step(mine, true, &hooks));
    if (!std::isfinite(r.loss)) return Status::ComputeError("non-finite loss");
    if (step < cfg.warmup) continue;
    steps.push_back(r.step_s);
    makespans.push_back(r.actions_end_s);
    exposed.push_back(r.reduce_wait_s);
    double post = 0;
    for (const ReduceSpan& rs : r.reduce_spans) post = std::max(post, rs.start_s);
    last_post.push_back(post);
    for (const ReduceSpan& rs : r.reduce_spans) {
      in_step[static_cast<size_t>(rs.stage) * 2] += rs.end_s - rs.start_s;
      in_step[static_cast<size_t>(rs.stage) * 2 + 1] += 1;
    }
    const auto& acts = program.ranks[rank];
    for (size_t k = 0; k < r.spans.size() && k < acts.size(); ++k) {
      if (!IsCompute(acts[k].type)) continue;
      const size_t at = static_cast<size_t>(acts[k].stage) * 8 + 2 * Slot(acts[k].type);
      dur[at] += r.spans[k].end_s - r.spans[k].start_s;
      dur[at + 1] += 1;
    }
  }
  PW_ASSIGN_OR_RETURN(auto all_dur, AllGatherDoubles(world, dur));
  PW_ASSIGN_OR_RETURN(auto all_in_step, AllGatherDoubles(world, in_step));
  PW_ASSIGN_OR_RETURN(auto all_post, AllGatherDoubles(world, last_post));
  // Median over steps of the largest skew of any data-parallel group (world
  // ranks g with the same g / dp).
  std::vector<double> skews;
  for (size_t k = 0; k < last_post.size(); ++k) {
    double worst = 0;
    for (size_t g0 = 0; g0 < all_post.size(); g0 += static_cast<size_t>(cfg.dp)) {
      double lo = INFINITY, hi = -INFINITY;
      for (size_t g = g0; g < g0 + static_cast<size_t>(cfg.dp); ++g) {
        lo = std::min(lo, all_post[g][k]);
        hi = std::max(hi, all_post[g][k]);
      }
      worst = std::max(worst, hi - lo);
    }
    skews.push_back(worst);
  }
  const double skew = Median(skews);
  // Replay: measured compute durations (mean over every replica's rank of
  // the stage) and the all-reduce measured alone (max over the group).
  StageCosts costs = PlanCosts(plan);
  std::string ring;
  const double bw = plan.comm.bandwidth_bytes_per_s, lat = plan.comm.latency_s;
  for (int st = 0; st < S; ++st) {
    double mean[4] = {-1, -1, -1, -1};
    for (int t = 0; t < 4; ++t) {
      double sum = 0, cnt = 0;
      for (const auto& v : all_dur) {
        sum += v[static_cast<size_t>(st) * 8 + 2 * t];
        cnt += v[static_cast<size_t>(st) * 8 + 2 * t + 1];
      }
      if (cnt > 0) mean[t] = sum / cnt;
    }
    if (mean[0] >= 0) costs.stages[st].f = mean[0];
    if (mean[1] >= 0) costs.stages[st].i = mean[1];
    if (mean[2] >= 0) costs.stages[st].w = mean[2];
    if (mean[3] >= 0) costs.stages[st].b = mean[3];
    double alone = 0, bytes = 0;
    for (size_t g = 0; g < all_alone.size(); ++g) {
      alone = std::max(alone, all_alone[g][st]);
      bytes = std::max(bytes, all_bytes[g][st]);
    }
    costs.stages[st].reduce_grad = alone;
    const double D = cfg.dp;
    double in_sum = 0, in_cnt = 0;
    for (const auto& v : all_in_step) {
      in_sum += v[static_cast<size_t>(st) * 2];
      in_cnt += v[static_cast<size_t>(st) * 2 + 1];
    }
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s%.2f/%.2f/%.2f", st ? " " : "", 1e3 * alone,
                  1e3 * (2 * (D - 1) / D * bytes / bw + 2 * (D - 1) * lat), in_cnt > 0 ? 1e3 * in_sum / in_cnt : 0.0);
    ring += buf;
  }
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(program, costs));
  double sim_exposed = 0;
  for (int r = 0; r < program.pp_size; ++r) {
    double reduce_end = 0, other_end = 0;
    for (size_t k = 0; k < program.ranks[r].size(); ++k) {
      const double end = sim.timing[r][k].end;
      if (program.ranks[r][k].type == ActionType::kReduceGrad)
        reduce_end = std::max(reduce_end, end);
      else
        other_end = std::max(other_end, end);
    }
    sim_exposed = std::max(sim_exposed, std::max(0.0, reduce_end - other_end));
  }
  if (printer) {
    const double meas_make = Median(makespans), meas_exp = Median(exposed);
    // Step by step (the skew and the wait of the same step), then the median.
    std::vector<double> ratios;
    for (size_t k = 0; k < exposed.size() && k < skews.size(); ++k)
      if (exposed[k] > 0) ratios.push_back((sim_exposed + skews[k]) / exposed[k]);
    const double per_step_ratio = Median(ratios);
    // The measured makespan ends at the last action; the simulated one at the
    // last reduction too: compare like with like (makespan + exposed).
    const double meas_total = meas_make + meas_exp;
    std::printf("| %s | %d x %d | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f | %.2f | %.3f | %s |\n",
                schedule.c_str(), cfg.dp, cfg.pp, 1e3 * Median(steps), 1e3 * meas_make, 1e3 * meas_exp,
                1e3 * meas_total, sim.makespan_s / meas_total, 1e3 * sim.makespan_s, 1e3 * sim_exposed,
                meas_exp > 0 ? sim_exposed / meas_exp : 0.0, 1e3 * skew, per_step_ratio, ring.c_str());
    std::fflush(stdout);
  }
  return Status::Ok();
}

int Main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"dp_bench: data parallel x pipeline, measured vs simulated step and exposed all-reduce"};
  app.add_option("--data", cfg.data, "training text (bytes are tokens)")->required();
  app.add_option("--dp", cfg.dp, "data-parallel replicas")->capture_default_str();
  app.add_option("--pp", cfg.pp, "pipeline ranks")->capture_default_str();
  app.add_option("--num-microbatches", cfg.m, "microbatches per replica")->capture_default_str();
  app.add_option("--micro-batch-size", cfg.b, "rows per microbatch")->capture_default_str();
  app.add_option("--seq-length", cfg.seq, "tokens per row")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--n-layer", cfg.n_layer, "GPT blocks")->capture_default_str();
  app.add_option("--n-embd", cfg.n_embd, "GPT width")->capture_default_str();
  app.add_option("--schedules", cfg.schedules, "comma-separated schedules")->capture_default_str();
  app.add_option("--steps", cfg.steps, "timed steps")->capture_default_str();
  app.add_option("--warmup-steps", cfg.warmup, "untimed steps first")->capture_default_str();
  app.add_flag("--no-progress", cfg.no_progress,
               "do not test the reductions in flight after each compute action (EngineOptions::dp_progress)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto env = MpiEnvironment::Init(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "dp_bench: %s\n", env.status().ToString().c_str());
    return 1;
  }
  {
    auto world = MpiCommunicator::Create();
    if (!world.ok()) {
      std::fprintf(stderr, "dp_bench: %s\n", world.status().ToString().c_str());
      return 1;
    }
    const int g = (*world)->rank();
    // The data-parallel group of this rank (the same split as the engine's).
    auto dp_group = (*world)->Split(g / cfg.dp, g % cfg.dp, "data-parallel");
    if (!dp_group.ok()) {
      std::fprintf(stderr, "dp_bench: %s\n", dp_group.status().ToString().c_str());
      return 1;
    }
    if (g == 0) {
      std::printf(
          "setup: dp %d x pp %d = %d ranks on %ld cores (mpirun%s), 1 thread per rank, CPU float32, GPT "
          "%d blocks x %d wide, m=%d x b=%d x %d tokens per replica, %d warm-up + %d timed steps (medians), "
          "reductions %s\n",
          cfg.dp, cfg.pp, (*world)->size(), sysconf(_SC_NPROCESSORS_ONLN),
          (*world)->size() > sysconf(_SC_NPROCESSORS_ONLN) ? ", oversubscribed: ranks share cores" : "", cfg.n_layer,
          cfg.n_embd, cfg.m, cfg.b, cfg.seq, cfg.warmup, cfg.steps,
          cfg.no_progress ? "progressed only inside other MPI calls (--no-progress)"
                          : "tested after every compute action (progress)");
      std::printf(
          "| schedule | dp x pp | step meas. (ms) | makespan meas. (ms) | all-reduce exposed meas. (ms) | "
          "makespan + exposed meas. (ms) | sim/meas | makespan sim. (ms) | exposed sim. (ms) | sim/meas | "
          "replica skew meas. (ms) | (sim + skew)/meas | "
          "all-reduce per stage: alone measured / ring model / in-step posted->done mean (ms) |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      std::fflush(stdout);
    }
    std::stringstream list(cfg.schedules);
    std::string s;
    while (std::getline(list, s, ',')) {
      Status st = RunSchedule(cfg, s, **world, **dp_group);
      if (!st.ok()) {
        std::fprintf(stderr, "dp_bench: rank %d: %s: %s\n", g, s.c_str(), st.ToString().c_str());
        MpiEnvironment::AbortJob(1);
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace pw::exec

int main(int argc, char** argv) { return pw::exec::Main(argc, argv); }
