// The cost model: turns a model (HF config) + device + training shape into
// per-layer seconds and bytes (models/spec/layer_costs.h), and a split of the
// layers into stages into the per-stage costs the schedules core simulates
// (schedules/costs.h).
#pragma once

#include <vector>

#include "models/spec/device.h"
#include "models/spec/footprint.h"
#include "models/spec/layer_costs.h"
#include "models/spec/model_config.h"
#include "base/costs.h"
#include "base/status.h"

namespace pw {

// Per-layer costs of `model` on `device` under `shape`, one entry per layer
// of BuildLayerList (embedding, blocks, head). Seconds: FLOPs (footprint.h)
// / (peak_flops * efficiency), plus for the embedding its HBM traffic /
// (memory bandwidth * efficiency) (a roofline: it has no GEMMs but is not
// free). Bytes: footprint.h. `comm` is the device's link.
LayerCostTable BuildLayerCosts(const ModelConfig& model, const DeviceSpec& device, const TrainingShape& shape);

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
