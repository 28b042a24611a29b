// Planner search benchmark: the full candidate search (every schedule family
// x v <= 4 x micro-batch sizes x recompute none/selective/full, each one
// partitioned, generated, validated, lowered and simulated) for Llama-2-70B
// at P = 16, s = 4096, global batch 128 per replica (D = 1, and D = 8 with
// the data-parallel reductions simulated: global batch 1024). Each run also checks its own result
// (a benchmark that only times is not trusted): counters report candidates,
// feasible ones and the chosen step time, and the run fails if the search errors.
#include <benchmark/benchmark.h>

#include "models/spec/device.h"
#include "models/spec/model_config.h"
#include "planner/planner.h"

namespace pw {
namespace {

void BM_Llama2_70B_P16(benchmark::State& state, const char* device, int dp_size) {
  PlannerModel model;
  auto cfg = LoadModelConfig("llama-2-70b");
  auto dev = LoadDeviceSpec(device);
  if (!cfg.ok() || !dev.ok()) {
    state.SkipWithError((cfg.ok() ? dev.status() : cfg.status()).ToString().c_str());
    return;
  }
  model.config = *cfg;
  model.device = *dev;
  PlannerOptions o;
  o.pp_size = 16;
  o.seq_length = 4096;
  o.dp_size = dp_size;
  o.global_batch_size = 128 * dp_size;
  o.max_virtual_stages = 4;
  o.find_min_pp = false;
  size_t candidates = 0, feasible = 0;
  double best = 0;
  for (auto _ : state) {
    auto r = EvaluateCandidates(model, o);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    candidates = r->candidates.size();
    feasible = 0;
    for (const Candidate& c : r->candidates) feasible += c.feasible;
    best = r->chosen >= 0 ? r->candidates[r->chosen].step_s : 0;
    benchmark::DoNotOptimize(r);
  }
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["feasible"] = static_cast<double>(feasible);
  state.counters["best_step_s"] = best;
}

BENCHMARK_CAPTURE(BM_Llama2_70B_P16, H100_80GB, "H100-80GB", 1)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Llama2_70B_P16, H200_141GB, "H200-141GB", 1)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Llama2_70B_P16, H200_141GB_dp8, "H200-141GB", 8)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace pw

BENCHMARK_MAIN();
