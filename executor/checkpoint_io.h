// LibTorch side of the per-layer checkpoints (layout: executor/checkpoint.h):
// writes and reads a step directory's layer files for the parameters (and
// AdamW state) of some layers. Used by Engine::SaveCheckpoint /
// LoadCheckpoint (a rank's stages), the sampler and export (every layer in
// one process). Includes <torch/torch.h>: never include it from a torch-free
// header.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "executor/checkpoint.h"

namespace pw::exec {

// The parameters of one layer of the layer list, by their stage names
// ("block.3.q_proj.weight"): what one layer file holds.
struct LayerTensors {
  std::string layer;  // "embedding", "block.3", "head"
  std::vector<std::pair<std::string, torch::Tensor>> params;
};

// Splits `params` (names "<layer>.<rest>") by the layers of `layers`, in
// that order. A parameter of no listed layer is dropped.
std::vector<LayerTensors> GroupByLayer(const std::vector<std::string>& layers,
                                       const std::vector<std::pair<std::string, torch::Tensor>>& params);

// The AdamW state of parameter `p`, or nullptr before its first step.
const torch::optim::AdamWParamState* FindAdamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p);

// Writes step_dir/<layer>.safetensors for every layer of `layers` (each file
// atomically: temp + rename): the parameters in their dtype (F32 or F64), and
// when `optimizer` is given the AdamW state of each parameter that has one
// (exp_avg, exp_avg_sq, step). Returns the manifest entries (size, digest).
// Errors: ComputeError naming the file.
StatusOr<std::vector<CheckpointFile>> SaveLayerFiles(const std::string& step_dir,
                                                     const std::vector<LayerTensors>& layers,
                                                     torch::optim::AdamW* optimizer);

// Reads the layer files of `layers` from `step_dir` into the parameters (on
// their device) and, when `optimizer` is given, its AdamW state (a parameter
// without state in the file gets none). Everything is checked before any
// parameter changes: each file against the manifest (VerifyCheckpointFile:
// missing, truncated, corrupt), its header (safetensors), and every tensor
// (present, shape, dtype = the parameter's). Errors: NotFound /
// InvalidArgument naming the file and tensor (expected vs found).
Status LoadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                      const std::vector<LayerTensors>& layers, torch::optim::AdamW* optimizer);

}  // namespace pw::exec
