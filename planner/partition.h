// The partitioner: contiguous layers -> S stages, minimising the slowest
// stage (the pipeline's steady-state period), subject to a per-stage
// feasibility test (memory). Exact: dynamic programming over (stage, end
// layer) (the classic linear-partition recurrence, as in Narayanan et al.
// 2019 PipeDream §3.1 / DAPPLE's planner, here with a feasibility predicate),
// O(S * L^2) with pruning. Deterministic tie-breaks (the same inputs give the
// same split, so plans are byte-identical):
//   1. minimal bottleneck B* = min over splits of max_s t_s;
//   2. among splits with max_s t_s <= B* (1 + 1e-9): minimal sum_s t_s^2 (the
//      most even split, so a remainder is spread, never piled on one stage);
//   3. among those (equal within 1e-12 relative): earlier stages take the
//      extra layers (30 equal layers on 4 stages -> [8, 8, 7, 7]).
// Never an empty stage, never a dropped layer.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/layer_costs.h"
#include "planner/cost_model.h"

namespace pw {

// May layers [begin, end) form stage `stage`? (e.g. its memory fits.)
using StageFits = std::function<bool(int stage, int begin, int end)>;

// Fixed first/last stage boundaries, resolved from the user's
// --first-stage-num-layers / --last-stage-num-layers.
struct StageOverrides {
  std::optional<int> first_stage_end;   // stage 0 is [0, first_stage_end)
  std::optional<int> last_stage_begin;  // stage S-1 is [last_stage_begin, L)
};

// Resolves the flags against the layer kinds of `table`: the counts are of
// decoder layers ("block", or "layer" in a cost file), as Megatron's
// --decoder-first/last-pipeline-num-layers; the embedding rides with the
// first stage and the head with the last. Returns InvalidArgument naming the
// flag(s) when a count is < 1, when S < 2, or when the counts do not add up
// (first + last > decoder layers, or too few left for the S - 2 middle
// stages, or with S == 2 first + last != decoder layers).
StatusOr<StageOverrides> ResolveStageOverrides(const LayerCostTable& table, int num_stages,
                                               std::optional<int> first_stage_num_layers,
                                               std::optional<int> last_stage_num_layers);

struct Partition {
  Boundaries boundaries;              // size S + 1
  std::vector<double> stage_seconds;  // size S: the per-stage time used (F + I + W sums)
  double bottleneck_s = 0.0;          // max of stage_seconds
};

// Splits layers with times `layer_seconds` (size L) into `num_stages`
// stages. `fits` (may be empty = always) filters stages; `overrides` fixes
// the first/last boundaries. Returns InvalidArgument if num_stages < 1 or >
// L (naming the counts), Infeasible if no split passes `fits`.
StatusOr<Partition> PartitionLayers(const std::vector<double>& layer_seconds, int num_stages,
                                    const StageFits& fits = {}, const StageOverrides& overrides = {});

// Per-layer F + I + W seconds of `table` (what PartitionLayers balances).
std::vector<double> LayerSeconds(const LayerCostTable& table);

// "[0,9) [9,17) ..." and layer counts "9,8,...": for messages and tables.
std::string FormatBoundaries(const Boundaries& b);
std::string FormatStageSizes(const Boundaries& b);

}  // namespace pw
