// Measured vs simulated, end to end: runs each plan (written by
// `pipewright plan --profile`) on real ranks under mpirun and compares with
// the plan's own prediction (the simulator on the profile's costs).
//
//   mpirun -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1
//     pipeline_bench --data text.txt --steps 10 --warmup-steps 3
//                    [--trace-dir DIR] PLAN.json [PLAN.json ...]
//
// Per plan, rank 0 prints one row (formulas in bench/README.md):
//   replay       the simulator on this run's own measured durations (mean F,
//                I, W, B per stage over the timed steps) and the profile's comm
//                model: isolates the simulator (order, waits, comm) from the
//                profile's per-layer costs and from load drift between
//                profiling and running;  replay/meas
//   step meas.   median over timed steps of the measured makespan: barrier ->
//                last action (and its sends) done, max over ranks
//                (Engine StepReport::makespan_s; optimizer excluded, as in
//                the simulation)
//   step sim.    plan predicted.makespan_s;  ratio = sim / meas
//   busy m/p     measured sum over ranks of F/B/I/W seconds per step / the
//                plan's predicted sum: how far the run's compute drifted from
//                the profile (load, cache, concurrency), apart from any
//                scheduling or comm effect
//   bubble       measured 1 - sum busy / (P * makespan) vs predicted
//   peak act.    per rank: measured max over steps of (peak live CPU bytes
//                during the step - live bytes at its start), with a
//                peak-tracking allocator, vs predicted peak - static bytes
//   overhead     per rank: last compute end - busy - receive wait (wall time
//                the rank neither computes nor waits: interpreter, posting,
//                timing), as % of the makespan and per action
// Plans run interleaved (step k of every plan, then step k+1), so load drift
// hits all schedules alike. Every row checks itself: the loss is finite and
// every step completed (`wrong` column). --trace-dir writes the last step's measured trace
// (schedules/trace_format.h) per plan, for `pipewright show`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "executor/comm/mpi_communicator.h"
#include "executor/data/data.h"
#include "executor/runtime/cpu_allocator.h"
#include "executor/runtime/engine.h"
#include "executor/runtime/measured_trace.h"
#include "plan/plan.h"
#include "plan/replica_batch.h"
#include "schedules/simulate.h"
#include "tests/testing/test_plans.h"

namespace pw::exec {
namespace {

struct BenchConfig {
  std::vector<std::string> plans;
  std::string data;
  int steps = 10;
  int warmup_steps = 3;
  std::string trace_dir;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Row {
  std::string schedule;
  int v = 1, m = 0;
  double meas_s = 0, sim_s = 0, meas_bubble = 0, sim_bubble = 0, step_with_opt_s = 0, replay_s = 0, busy_ratio = 0;
  std::vector<double> meas_peak, sim_peak, overhead_pct, overhead_per_action_us;
  int wrong = 0;
};

// One plan's engine and its measurements. Plans run interleaved: step k of
// every plan, then step k+1 of every plan, so a slow spell of the machine
// (other processes, frequency changes) hits every schedule alike instead of
// whichever one was running then.
class PlanRun {
 public:
  static StatusOr<std::unique_ptr<PlanRun>> Create(const BenchConfig& cfg, const std::string& path,
                                                   Communicator& comm) {
    auto run = std::unique_ptr<PlanRun>(new PlanRun(cfg, comm));
    PW_ASSIGN_OR_RETURN(run->plan_, ReadPlanFile(path));
    PW_ASSIGN_OR_RETURN(run->shape_, ReadReplicaBatch(run->plan_));
    PW_ASSIGN_OR_RETURN(TextDataset data, TextDataset::Open(cfg.data, run->shape_.seq_length, 1));
    run->data_ = std::make_unique<TextDataset>(std::move(data));
    EngineOptions eo;
    eo.intra_op_threads = 1;
    eo.lr = 1e-3;
    PW_ASSIGN_OR_RETURN(run->engine_, Engine::Create(run->plan_, comm, eo));
    run->program_ = PlanProgram(run->plan_);
    run->dur_.assign(static_cast<size_t>(run->plan_.num_stages) * 8, 0.0);
    run->hooks_.record_spans = true;
    return run;
  }

  // Runs step `step` (the first cfg.warmup_steps are not recorded).
  Status Step(int step) {
    TokenBatch batch = data_->Batch(step, shape_.rows);
    const int64_t start = TrackedCpuBytes();
    ResetTrackedCpuPeak();
    PW_ASSIGN_OR_RETURN(StepReport r, engine_->Step(batch, true, &hooks_));
    const int64_t peak = TrackedCpuPeakBytes() - start;
    if (!std::isfinite(r.loss)) wrong_ = 1;
    if (step < cfg_.warmup_steps) return Status::Ok();
    makespans_.push_back(r.actions_end_s);
    busies_.push_back(r.busy_s);
    bubbles_.push_back(r.bubble_ratio);
    steps_opt_.push_back(r.step_s);
    my_peak_ = std::max(my_peak_, static_cast<double>(peak));
    // Overhead of this rank: within [0, last compute end], the time that is
    // neither compute nor a blocked receive.
    double busy = 0, last_end = 0;
    const auto& acts = program_.ranks[comm_.rank()];
    for (size_t k = 0; k < r.spans.size() && k < acts.size(); ++k) {
      if (!IsCompute(acts[k].type)) continue;
      busy += r.spans[k].end_s - r.spans[k].start_s;
      const size_t at = static_cast<size_t>(acts[k].stage) * 8 + 2 * Slot(acts[k].type);
      dur_[at] += r.spans[k].end_s - r.spans[k].start_s;
      dur_[at + 1] += 1;
      last_end = std::max(last_end, r.spans[k].end_s);
    }
    const double over = std::max(0.0, last_end - busy - r.wait_s);
    overheads_.push_back(over / r.actions_end_s);
    per_action_.push_back(over / static_cast<double>(acts.size()));
    last_spans_ = r.spans;
    return Status::Ok();
  }

  // Collective: gathers every rank's figures into the plan's row.
  StatusOr<Row> Finish() {
    const int P = plan_.pp_size, S = plan_.num_stages;
    Row row;
    row.schedule = plan_.schedule;
    row.v = S / P;
    row.m = plan_.num_microbatches;
    row.sim_s = plan_.predicted.makespan_s;
    row.sim_bubble = plan_.predicted.bubble_ratio;
    row.wrong = wrong_;
    for (int r = 0; r < P; ++r) {
      int64_t stat = 0;
      for (const PlanStage& s : plan_.stages)
        if (s.rank == r) stat += s.memory.static_bytes;
      row.sim_peak.push_back(static_cast<double>(plan_.predicted.per_rank[r].peak_memory_bytes - stat));
    }
    if (!cfg_.trace_dir.empty())
      PW_RETURN_IF_ERROR(WriteMeasuredTrace(plan_, last_spans_, comm_,
                                            cfg_.trace_dir + "/" + plan_.schedule + ".trace.json",
                                            "pipeline_bench " + plan_.schedule + " (measured, last step)"));
    PW_ASSIGN_OR_RETURN(auto all, AllGatherDoubles(comm_, {my_peak_, Median(overheads_), Median(per_action_),
                                                           static_cast<double>(row.wrong)}));
    // Replay: every rank's measured durations into the plan's costs.
    PW_ASSIGN_OR_RETURN(auto all_dur, AllGatherDoubles(comm_, dur_));
    StageCosts replay = PlanCosts(plan_);
    for (int st = 0; st < S; ++st) {
      double mean[4] = {-1, -1, -1, -1};
      for (int t = 0; t < 4; ++t) {
        double sum = 0, n = 0;
        for (const auto& v : all_dur) {
          sum += v[static_cast<size_t>(st) * 8 + 2 * t];
          n += v[static_cast<size_t>(st) * 8 + 2 * t + 1];
        }
        if (n > 0) mean[t] = sum / n;
      }
      if (mean[0] >= 0) replay.stages[st].f = mean[0];
      if (mean[1] >= 0) replay.stages[st].i = mean[1];
      if (mean[2] >= 0) replay.stages[st].w = mean[2];
      if (mean[3] >= 0) replay.stages[st].b = mean[3];
    }
    PW_ASSIGN_OR_RETURN(SimResult rs, Simulate(program_, replay));
    row.replay_s = rs.makespan_s;
    row.meas_s = Median(makespans_);
    double predicted_busy = 0;
    for (const auto& pr : plan_.predicted.per_rank) predicted_busy += pr.busy_s;
    row.busy_ratio = predicted_busy > 0 ? Median(busies_) / predicted_busy : 0.0;
    row.meas_bubble = Median(bubbles_);
    row.step_with_opt_s = Median(steps_opt_);
    for (const auto& v : all) {
      row.meas_peak.push_back(v[0]);
      row.overhead_pct.push_back(100 * v[1]);
      row.overhead_per_action_us.push_back(1e6 * v[2]);
      row.wrong = std::max(row.wrong, static_cast<int>(v[3]));
    }
    return row;
  }

 private:
  PlanRun(const BenchConfig& cfg, Communicator& comm) : cfg_(cfg), comm_(comm) {}
  static int Slot(ActionType t) {
    return t == ActionType::kF ? 0 : t == ActionType::kI ? 1 : t == ActionType::kW ? 2 : 3;
  }

  const BenchConfig& cfg_;
  Communicator& comm_;
  Plan plan_;
  ReplicaBatch shape_;
  std::unique_ptr<TextDataset> data_;
  std::unique_ptr<Engine> engine_;  // after plan_: the engine may refer to it
  Program program_;
  StepHooks hooks_;
  // Sum and count of measured durations per (stage, type F/I/W/B).
  std::vector<double> dur_;
  std::vector<double> makespans_, bubbles_, steps_opt_, overheads_, per_action_, busies_;
  std::vector<ActionSpan> last_spans_;
  double my_peak_ = 0;
  int wrong_ = 0;
};

std::string PerRank(const std::vector<double>& v, const char* fmt) {
  std::string out;
  char buf[64];
  for (size_t r = 0; r < v.size(); ++r) {
    std::snprintf(buf, sizeof buf, fmt, v[r]);
    out += (r ? " / " : "") + std::string(buf);
  }
  return out;
}

int Main(int argc, char** argv) {
  BenchConfig cfg;
  CLI::App app{"pipeline_bench: measured vs simulated step time, bubble and peak activation memory"};
  app.add_option("plans", cfg.plans, "plan files (pipewright plan --profile ...)")->required();
  app.add_option("--data", cfg.data, "training text (bytes are tokens)")->required();
  app.add_option("--steps", cfg.steps, "timed steps per plan")->capture_default_str();
  app.add_option("--warmup-steps", cfg.warmup_steps, "untimed steps first (allocator, caches)")->capture_default_str();
  app.add_option("--trace-dir", cfg.trace_dir, "write <schedule>.trace.json of the last step here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  InstallTrackingCpuAllocator();  // before any tensor exists
  auto env = MpiEnvironment::Init(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "pipeline_bench: %s\n", env.status().ToString().c_str());
    return 1;
  }
  int rc = 0;
  {
    auto comm = MpiCommunicator::Create();
    if (!comm.ok()) {
      std::fprintf(stderr, "pipeline_bench: %s\n", comm.status().ToString().c_str());
      return 1;
    }
    const bool printer = (*comm)->rank() == 0;
    if (printer) {
      const char* omp = std::getenv("OMP_NUM_THREADS");
      const char* blas = std::getenv("OPENBLAS_NUM_THREADS");
      std::printf(
          "setup: %d ranks (mpirun), 1 LibTorch intra-op thread per rank, OMP_NUM_THREADS=%s, "
          "OPENBLAS_NUM_THREADS=%s, CPU float32, %d warm-up + %d timed steps per plan, plans interleaved step by step "
          "(medians)\n",
          (*comm)->size(), omp ? omp : "unset", blas ? blas : "unset", cfg.warmup_steps, cfg.steps);
      std::printf(
          "| schedule | v | m | step meas. (ms) | step sim. (ms) | sim/meas | replay sim. (ms) | replay/meas | busy "
          "m/p | "
          "bubble meas. | bubble sim. | "
          "peak act. meas. per rank (MiB) | peak act. sim. (MiB) | meas/sim | overhead %% of step | "
          "overhead per action (us) | step incl. optimizer (ms) | wrong |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
      std::fflush(stdout);
    }
    auto fail = [&](const std::string& what, const Status& st) {
      std::fprintf(stderr, "pipeline_bench: rank %d: %s: %s\n", (*comm)->rank(), what.c_str(), st.ToString().c_str());
      MpiEnvironment::AbortJob(1);
      return 1;
    };
    std::vector<std::unique_ptr<PlanRun>> runs;
    for (const std::string& path : cfg.plans) {
      auto run = PlanRun::Create(cfg, path, **comm);
      if (!run.ok()) return fail(path, run.status());
      runs.push_back(std::move(*run));
    }
    for (int step = 0; step < cfg.warmup_steps + cfg.steps; ++step)
      for (size_t k = 0; k < runs.size(); ++k) {
        Status st = runs[k]->Step(step);
        if (!st.ok()) return fail(cfg.plans[k], st);
      }
    for (size_t k = 0; k < runs.size(); ++k) {
      auto row = runs[k]->Finish();
      if (!row.ok()) return fail(cfg.plans[k], row.status());
      if (printer) {
        std::vector<double> mib_meas, mib_sim, ratio;
        for (size_t r = 0; r < row->meas_peak.size(); ++r) {
          mib_meas.push_back(row->meas_peak[r] / 1048576.0);
          mib_sim.push_back(row->sim_peak[r] / 1048576.0);
          ratio.push_back(row->sim_peak[r] > 0 ? row->meas_peak[r] / row->sim_peak[r] : 0.0);
        }
        std::printf(
            "| %s | %d | %d | %.2f | %.2f | %.3f | %.2f | %.3f | %.3f | %.3f | %.3f | %s | %s | %s | %s | %s | %.2f | "
            "%d |\n",
            row->schedule.c_str(), row->v, row->m, 1e3 * row->meas_s, 1e3 * row->sim_s, row->sim_s / row->meas_s,
            1e3 * row->replay_s, row->replay_s / row->meas_s, row->busy_ratio, row->meas_bubble, row->sim_bubble,
            PerRank(mib_meas, "%.2f").c_str(), PerRank(mib_sim, "%.2f").c_str(), PerRank(ratio, "%.2f").c_str(),
            PerRank(row->overhead_pct, "%.2f").c_str(), PerRank(row->overhead_per_action_us, "%.1f").c_str(),
            1e3 * row->step_with_opt_s, row->wrong);
        std::fflush(stdout);
      }
      rc = std::max(rc, row->wrong);
    }
  }
  return rc;
}

}  // namespace
}  // namespace pw::exec

int main(int argc, char** argv) { return pw::exec::Main(argc, argv); }
