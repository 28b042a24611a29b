// LibTorch side of the per-layer checkpoints (layout: executor/checkpoint/checkpoint.h):
// writes and reads a step directory's layer files for the parameters (and
// AdamW state) of some layers. Used by Engine::SaveCheckpoint /
// LoadCheckpoint (a rank's stages), the sampler and export (every layer in
// one process). Includes <torch/torch.h>: never include it from a torch-free
// header.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "executor/checkpoint/checkpoint.h"

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

// Sets (replaces) the AdamW state of `p`: moments shaped like `p`, on its
// device, and the step count. ClearAdamWState removes it (no step yet).
void SetAdamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p, const torch::Tensor& exp_avg,
                   const torch::Tensor& exp_avg_sq, int64_t step);
void ClearAdamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p);

// One parameter as a checkpoint holds it, read and checked, not yet applied.
struct LoadedParameter {
  std::string name;                   // "block.3.q_proj.weight"
  torch::Tensor param;                // the run's parameter it is for
  torch::Tensor value;                // CPU, shaped and typed like `param`
  torch::Tensor exp_avg, exp_avg_sq;  // CPU, shaped like `param`; undefined: no AdamW state
  int64_t step = 0;                   // AdamW steps of the moments
};

// Reads the parameters of `layers` from `step_dir` and, when
// `optimizer_state`, their whole AdamW moments: from the layer files, or
// with a ZeRO-1 checkpoint (manifest.optimizer_shards D > 1) joined from the
// D shard files of each layer (the slices must tile each parameter exactly,
// with one step count). Every file is checked against the manifest first
// (VerifyCheckpointFile: missing, truncated, corrupt), then its header
// (safetensors) and every tensor (present, shape, dtype = the parameter's).
// Changes nothing. Errors: NotFound / InvalidArgument naming the file and
// tensor (expected vs found).
StatusOr<std::vector<LoadedParameter>> ReadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                                                      const std::vector<LayerTensors>& layers, bool optimizer_state);

// ReadLayerFiles, then copies the values into the parameters (on their
// device) and, when `optimizer` is given, sets its AdamW state (a parameter
// without state in the checkpoint gets none). Nothing changes on an error.
Status LoadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                      const std::vector<LayerTensors>& layers, torch::optim::AdamW* optimizer);

// The part of one parameter's AdamW moments a ZeRO-1 shard holds: elements
// [offset, offset + n) of the flattened (row-major) moments, as 1-D tensors
// of n elements.
struct MomentSlice {
  int64_t offset = 0;
  torch::Tensor exp_avg, exp_avg_sq;
  int64_t step = 0;
};
// The slice of a parameter's moments this rank holds, or nullopt (none of
// its elements, or no step yet).
using MomentSliceOf = std::function<std::optional<MomentSlice>(const torch::Tensor& param)>;

// ZeRO-1: writes step_dir/<layer>.adamw_shard_<shard>_of_<shards>.safetensors
// for every layer of `layers` (temp + rename; a file even when no parameter
// of the layer has elements in the shard, so that a reader can tell a
// missing file from an empty slice). Returns the manifest entries (shard
// set). Errors: ComputeError naming the file.
StatusOr<std::vector<CheckpointFile>> SaveShardFiles(const std::string& step_dir,
                                                     const std::vector<LayerTensors>& layers, int shard, int shards,
                                                     const MomentSliceOf& slice_of);

}  // namespace pw::exec
