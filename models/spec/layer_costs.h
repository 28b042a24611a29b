// Per-layer costs in seconds and bytes: what the planner partitions. Built
// from a HF config + device (planner/cost_model.h), or read from a layer-cost
// JSON file the user wrote, or from a measured profile (the executor's
// `profile` command writes the same format with "format": "pipewright-profile").
//
// File format (times in seconds per microbatch, sizes in bytes):
//   {"format": "pipewright-layer-costs", "version": 1,
//    "micro_batch_size": 1, "seq_length": 1024,          (optional, recorded)
//    "recompute": "none",                                (optional; the setting the costs were made with)
//    "comm": {"latency_s": 1e-5, "bandwidth_bytes_per_s": 2.5e10},  (optional)
//    "model": { ...HF config... },                       (optional; copied to plans)
//    "layers": [{"name": "embedding", "F": 0.001, "I": 0.0, "W": 0.002, "B": 0.002 (optional),
//                "OPTIMIZER": 1e-5 (optional: seconds per step of the optimizer step over the layer's parameters),
//                "activation_bytes": 0, "wstash_bytes": 0, "static_bytes": 0,
//                "output_bytes": 0, "transient_bytes": 0 (optional)}, ...]}
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/costs.h"
#include "base/status.h"

namespace pw {

struct LayerCost {
  std::string name;
  // "embedding", "block", "head", or "layer" (a cost-file layer of no known
  // kind). --first/--last-stage-num-layers count "block" and "layer" entries.
  std::string kind = "layer";
  double f = 0, i = 0, w = 0;    // seconds per microbatch
  int64_t activation_bytes = 0;  // docs/PLAN_FORMAT.md memory rule 7
  int64_t wstash_bytes = 0;
  int64_t static_bytes = 0;
  int64_t output_bytes = 0;     // forward message to the next layer
  int64_t transient_bytes = 0;  // live only while this layer's backward recomputes
  double b = -1;                // full backward, seconds (optional "B"); < 0 = not given: B = I + W
  // Optimizer step over the layer's parameters, seconds once per step
  // (optional "OPTIMIZER"; StageCost::optimizer sums it over a stage).
  double optimizer = 0;
};

struct LayerCostTable {
  std::vector<LayerCost> layers;
  std::optional<CommModel> comm;   // from the file, if given
  std::string recompute = "none";  // the recompute setting the costs include
  int64_t micro_batch_size = 0;    // 0 = not recorded
  int64_t seq_length = 0;
  nlohmann::json model;  // HF config object, or null
};

// Parses a layer-cost or profile document. InvalidArgument names the field
// ("costs.json: layers[3].F must be a number >= 0"); an empty layer list is
// refused.
StatusOr<LayerCostTable> ParseLayerCosts(const nlohmann::json& j, const std::string& source);
// Reads and parses a file. NotFound if it cannot be opened.
StatusOr<LayerCostTable> ReadLayerCostFile(const std::string& path);
// The table in the file format above (format "pipewright-layer-costs").
nlohmann::json LayerCostsToJson(const LayerCostTable& t);
// True if `j` looks like a layer-cost/profile document (has "layers" and a
// "format" of pipewright-layer-costs or pipewright-profile).
bool IsLayerCostDocument(const nlohmann::json& j);

}  // namespace pw
