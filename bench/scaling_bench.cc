// Planner/simulator scaling: actions per CPU second of generate + lower +
// validate + simulate, and of Simulate alone, for P in {4..64},
// m in {8..1024}, v in {1, 2, 4} (1F1B for v = 1, Interleaved 1F1B else;
// per-stage costs 1/v so every rank does the same work). Prints a table and
// the growth exponent k of time ~ actions^k (least squares on logs; k = 1 is
// linear growth) and a least-squares fit time = a * actions + b
// (planner/profile_fit.h). Times are this thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID), so that other work on a shared machine does not
// enter the figures.
//
// Each row verifies itself (nccl-tests style `wrong`): the lowered program
// validates, the simulation runs, sum of busy time equals the work
// P * v * m * 3 / v exactly, and where the closed form applies (m >= P and
// m % P == 0) the makespan equals 3m + 3(P-1)/v.
//
// Usage: scaling_bench [--quick]     (--quick: P <= 16, m <= 128)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "planner/profile_fit.h"
#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace {

// This thread's CPU seconds.
double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Slope of log(time) against log(actions): the growth exponent k.
double GrowthExponent(const std::vector<std::pair<double, double>>& pts) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(pts.size());
  for (const auto& [a, t] : pts) {
    const double x = std::log(a), y = std::log(t);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

struct Row {
  int P, v, m;
  size_t actions = 0;
  double total_s = 0;  // median generate + lower + validate + simulate
  double sim_s = 0;    // median Simulate
  int wrong = 0;
};

Row Measure(int P, int v, int m) {
  Row row{P, v, m};
  pw::ScheduleRequest req;
  req.schedule = v == 1 ? "1f1b" : "interleaved-1f1b";
  req.pp_size = P;
  req.num_microbatches = m;
  req.virtual_stages = v;
  pw::StageCost cost;
  cost.f = cost.i = cost.w = 1.0 / v;
  req.costs = pw::UniformCosts(P * v, cost);
  std::vector<double> totals, sims;
  // One warm-up, then repetitions until 0.2 s or 5 runs (at least 2).
  double spent = 0;
  for (int k = 0; k < 6 && (k < 3 || spent < 0.2); ++k) {
    const double t0 = CpuNow();
    auto run = pw::RunPipeline(req);  // generate, validate, lower, validate, simulate
    const double t1 = CpuNow();
    if (!run.ok()) {
      std::fprintf(stderr, "P=%d v=%d m=%d: %s\n", P, v, m, run.status().ToString().c_str());
      row.wrong = 1;
      return row;
    }
    // The simulation alone, timed again on the lowered program.
    auto sim = pw::Simulate(run->lowered, req.costs);
    const double now = CpuNow(), sim_s = now - t1, total_s = t1 - t0;
    const pw::Status valid = pw::Status::Ok();
    if (k > 0) {
      totals.push_back(total_s);
      sims.push_back(sim_s);
      spent += total_s;
    }
    if (!valid.ok() || !sim.ok()) {
      row.wrong = 1;
      continue;
    }
    row.actions = run->lowered.NumActions();
    double busy = 0;
    for (const auto& r : sim->per_rank) busy += r.busy_s;
    const double work = 3.0 * P * m;  // P*v stages x m microbatches x (F + I + W) of 1/v each
    if (std::abs(busy - work) > 1e-9 * work) row.wrong = 1;
    const double closed = 3.0 * m + 3.0 * (P - 1) / v;
    if (m >= P && m % P == 0 && std::abs(sim->makespan_s - closed) > 1e-9 * closed) row.wrong = 1;
  }
  std::sort(totals.begin(), totals.end());
  std::sort(sims.begin(), sims.end());
  row.total_s = totals[totals.size() / 2];
  row.sim_s = sims[sims.size() / 2];
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::vector<int> Ps = {4, 8, 16, 32, 64}, ms = {8, 32, 128, 512, 1024};
  if (quick) {
    Ps = {4, 8, 16};
    ms = {8, 32, 128};
  }
  std::printf(
      "planner/simulator scaling: 1F1B (v=1) / Interleaved 1F1B (v>1), per-stage cost 1/v; one thread, "
      "thread CPU time, median of >= 2 runs after 1 warm-up\n");
  std::printf("%4s %2s %5s %10s %12s %14s %12s %14s %6s\n", "P", "v", "m", "actions", "total ms", "total act/s",
              "sim ms", "sim act/s", "wrong");
  std::vector<Row> rows;
  int wrong = 0;
  for (int v : {1, 2, 4})
    for (int P : Ps)
      for (int m : ms) {
        Row r = Measure(P, v, m);
        rows.push_back(r);
        wrong += r.wrong;
        std::printf("%4d %2d %5d %10zu %12.3f %14.3e %12.3f %14.3e %6d\n", P, v, m, r.actions, 1e3 * r.total_s,
                    r.actions / r.total_s, 1e3 * r.sim_s, r.actions / r.sim_s, r.wrong);
        std::fflush(stdout);
      }
  // Linear growth: fit time = a * actions + b over every row (the fit's
  // "bytes" feature is the generic x; relative residuals).
  std::vector<pw::FitPoint> total_pts, sim_pts;
  for (const Row& r : rows) {
    if (r.wrong || r.actions == 0) continue;
    total_pts.push_back({static_cast<int64_t>(r.actions), 1, r.total_s});
    sim_pts.push_back({static_cast<int64_t>(r.actions), 1, r.sim_s});
  }
  auto tf = pw::FitLeastSquares(total_pts, {"bytes", "one"});
  auto sf = pw::FitLeastSquares(sim_pts, {"bytes", "one"});
  for (int v : {0, 1, 2, 4}) {
    std::vector<std::pair<double, double>> tot, sim;
    for (const Row& r : rows)
      if (!r.wrong && r.actions > 0 && (v == 0 || r.v == v)) {
        tot.push_back({static_cast<double>(r.actions), r.total_s});
        sim.push_back({static_cast<double>(r.actions), r.sim_s});
      }
    std::printf("growth exponent k (time ~ actions^k), %s: total %.3f, simulate %.3f\n",
                v == 0 ? "all rows" : ("v=" + std::to_string(v)).c_str(), GrowthExponent(tot), GrowthExponent(sim));
  }
  if (tf.ok() && sf.ok()) {
    std::printf("\nlinear fit time = a*actions + b over %zu rows (relative least squares):\n", total_pts.size());
    std::printf("  total:    a = %.3e s/action (%.3e actions/s), b = %.3e s, rms rel err %.1f%%, max %.1f%%\n",
                tf->coefficients[0], 1.0 / tf->coefficients[0], tf->coefficients[1], 100 * tf->rel_rms_error,
                100 * tf->max_rel_error);
    std::printf("  simulate: a = %.3e s/action (%.3e actions/s), b = %.3e s, rms rel err %.1f%%, max %.1f%%\n",
                sf->coefficients[0], 1.0 / sf->coefficients[0], sf->coefficients[1], 100 * sf->rel_rms_error,
                100 * sf->max_rel_error);
  }
  std::printf("rows wrong: %d\n", wrong);
  return wrong == 0 ? 0 : 1;
}
