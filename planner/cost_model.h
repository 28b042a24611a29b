// The cost model: turns a model (HF config) + device + training shape into
// per-layer seconds and bytes (models/spec/layer_costs.h), and a split of the
// layers into stages into the per-stage costs the schedules core simulates
// (schedules/costs.h).
#pragma once

#include <vector>

#include "base/costs.h"
#include "base/status.h"
#include "models/spec/device.h"
#include "models/spec/footprint.h"
#include "models/spec/layer_costs.h"
#include "models/spec/model_config.h"
#include "models/spec/profile_samples.h"

namespace pw {

// Per-layer costs of `model` on `device` under `shape`, one entry per layer
// of BuildLayerList (embedding, blocks, head). Seconds: FLOPs (footprint.h)
// / (peak_flops * efficiency), plus for the embedding its HBM traffic /
// (memory bandwidth * efficiency) (a roofline: it has no GEMMs but is not
// free). Bytes: footprint.h. `comm` is the device's link.
// Tensor parallelism (shape.tp_size = t > 1): every cost is per TP rank
// (footprint.h), and F, I and W each add their layer's TP collectives
// (TensorParallelSeconds on TensorParallelLink), run after the compute
// (no overlap assumed).
LayerCostTable BuildLayerCosts(const ModelConfig& model, const DeviceSpec& device, const TrainingShape& shape);

// The link a tensor-parallel group of t adjacent ranks (the plan's rank
// order puts TP innermost, docs/PLAN_FORMAT.md) runs its rings on: the
// intra-node link when t ranks fit a node (DeviceSpec::DataParallelLink's
// rule), else the inter-node one.
CommModel TensorParallelLink(const DeviceSpec& device, int tp_size);

// Seconds of `collectives` over a ring of t ranks on `link`, one after the
// other (planner/data_parallel.h: all-reduce 2(t-1)/t n / bw + latency,
// reduce-scatter and all-gather (t-1)/t n / bw + latency; Patarasuk & Yuan
// 2009). 0 for t = 1. When `measured` (a profile's fits, `pipewright
// profile` under mpirun -np t) has the collective's kind at t ranks, its
// measured latency + bytes / bandwidth of the whole collective instead of
// the ring on `link`.
double TensorParallelSeconds(const std::vector<Collective>& collectives, int tp_size, const CommModel& link,
                             const std::vector<CollectiveFit>& measured = {});

// The layer costs of a measured profile (`whole`: ProfileLayerCosts, whole
// layers on one rank) planned at shape.tp_size = t > 1. Each layer's F, I,
// W and B are scaled by its footprint's per-TP-rank FLOPs over its
// whole-layer FLOPs (footprint.h at t and at 1; the memory traffic where a
// quantity has no FLOPs, as the embedding's F), its activation, wstash,
// static, output and transient bytes by the footprint's ratios of the same,
// and its TP collectives added to F, I and W as BuildLayerCosts adds them
// (TensorParallelSeconds on `measured`, or on `link` for a kind the profile
// has no fit of at t ranks). Errors: InvalidArgument when `whole` is not
// `model`'s layer list, or a collective kind has neither a measured fit at
// t ranks nor a `link`.
StatusOr<LayerCostTable> TensorParallelProfileCosts(const LayerCostTable& whole, const ModelConfig& model,
                                                    const TrainingShape& shape,
                                                    const std::vector<CollectiveFit>& measured,
                                                    const std::optional<CommModel>& link);

// A contiguous split of the layer list: stage s holds layers
// [boundaries[s], boundaries[s+1]); boundaries.front() == 0,
// boundaries.back() == number of layers, strictly increasing.
using Boundaries = std::vector<int>;

// Sums of one stage's layers [begin, end): F/I/W seconds (and B when every
// layer has a measured B, else B = I + W) and memory
// (static, activation, wstash add up; send_forward = output bytes of the last
// layer; send_backward = output bytes of the layer before `begin`, the
// stage's input; transient = the largest of its layers).
struct StageSum {
  StageCost cost;
  StageMemory memory;
  int64_t transient_bytes = 0;
};
StageSum SumStage(const LayerCostTable& table, int begin, int end);

// Per-stage costs for the simulator and generators: one StageCost and
// StageMemory per stage of `boundaries`, and `comm`.
// REQUIRES: boundaries is a valid split of table.layers.
StageCosts BuildStageCosts(const LayerCostTable& table, const Boundaries& boundaries, const CommModel& comm);

}  // namespace pw
