// Schedules-core throughput: generate + lower + validate + simulate.
// The headline case is Interleaved 1F1B at P = 64, v = 2, m = 1024 (about
// 400k actions after lowering); the sweep over m shows linear growth
// (actions/s stays flat). Each iteration checks its own result (valid plan,
// makespan equal to the closed form 3m + 3(P-1)/v with per-stage cost 1/v),
// and reports a `wrong` counter that must stay 0.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>

#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace pw {
namespace {

void BM_GenerateLowerValidateSimulate(benchmark::State& state) {
  const int P = static_cast<int>(state.range(0));
  const int v = static_cast<int>(state.range(1));
  const int m = static_cast<int>(state.range(2));
  ScheduleRequest req;
  req.schedule = v == 1 ? "1f1b" : "interleaved-1f1b";
  req.pp_size = P;
  req.num_microbatches = m;
  req.virtual_stages = v;
  StageCost cost;
  cost.f = cost.i = cost.w = 1.0 / v;
  req.costs = UniformCosts(P * v, cost);
  size_t actions = 0;
  int wrong = 0;
  for (auto _ : state) {
    auto run = RunPipeline(req);
    double want = 3.0 * m + 3.0 * (P - 1) / v;
    if (!run.ok() || std::abs(run->sim.makespan_s - want) > 1e-6 * want) ++wrong;
    if (run.ok()) actions = run->lowered.NumActions();
    benchmark::DoNotOptimize(run);
  }
  state.counters["actions"] = static_cast<double>(actions);
  state.counters["actions_per_s"] =
      benchmark::Counter(static_cast<double>(actions) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["wrong"] = wrong;
}

BENCHMARK(BM_GenerateLowerValidateSimulate)
    ->ArgNames({"P", "v", "m"})
    ->Args({64, 2, 1024})
    ->Args({64, 2, 64})
    ->Args({64, 2, 128})
    ->Args({64, 2, 256})
    ->Args({64, 2, 512})
    ->Args({8, 1, 1024})
    ->Args({16, 4, 1024})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// Generation alone of each family added after the first release, at P = 32,
// m = 256, v = 2 (the families' default placement), unit costs: the target
// is < 0.5 s each. Each iteration checks the order (ValidateComputeOrder);
// `wrong` must stay 0, and `over_0_5s` counts the generations (wall clock)
// that missed the target.
void BM_GenerateFamily(benchmark::State& state, const char* family) {
  ScheduleRequest req;
  req.schedule = family;
  req.pp_size = 32;
  req.num_microbatches = 256;
  req.virtual_stages = 2;
  int wrong = 0, over = 0;
  size_t actions = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto prog = GenerateSchedule(req);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= 0.5) ++over;
    if (!prog.ok() || !ValidateComputeOrder(*prog).ok()) ++wrong;
    if (prog.ok()) actions = prog->NumActions();
    benchmark::DoNotOptimize(prog);
  }
  state.counters["actions"] = static_cast<double>(actions);
  state.counters["wrong"] = wrong;
  state.counters["over_0_5s"] = over;
}
BENCHMARK_CAPTURE(BM_GenerateFamily, zb_v, "zb-v")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_GenerateFamily, v_half, "v-half")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_GenerateFamily, v_min, "v-min")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_GenerateFamily, v_auto, "v-auto")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_GenerateFamily, interleaved_zb, "interleaved-zb")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_GenerateFamily, dualpipev, "dualpipev")->Unit(benchmark::kMillisecond)->Iterations(3);

// Simulation alone (the planner's inner loop): one lowered program, many runs.
void BM_SimulateOnly(benchmark::State& state) {
  const int P = static_cast<int>(state.range(0)), v = 2, m = static_cast<int>(state.range(1));
  ScheduleRequest req;
  req.schedule = "interleaved-1f1b";
  req.pp_size = P;
  req.num_microbatches = m;
  req.virtual_stages = v;
  req.costs = UniformCosts(P * v);
  auto run = RunPipeline(req);
  const Program& lowered = run->lowered;
  for (auto _ : state) benchmark::DoNotOptimize(Simulate(lowered, req.costs));
  state.counters["actions_per_s"] =
      benchmark::Counter(static_cast<double>(lowered.NumActions()) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateOnly)->ArgNames({"P", "m"})->Args({64, 1024})->Args({64, 256})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pw

BENCHMARK_MAIN();
