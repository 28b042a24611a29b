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
#include "executor/comm/communicator.h"
#include "models/spec/model_config.h"

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

// Tensor parallelism (plan tp_size t > 1; docs/DATA_PARALLEL.md "Tensor
// parallelism"): checkpoints hold full tensors whatever t wrote them, cut by
// models/spec/tensor_parallel.h's layout table (TensorParallelLayoutOf):
// saving gathers each split parameter's (and its AdamW moments') t shards
// over the group (GatherFullLayers); reading slices each full tensor for the
// reader's TP rank (SliceForTpRank; vocab-parallel tables padded with zero
// rows to PaddedVocab). t = 1 (the default): nothing is cut or gathered.
struct TensorParallelShards {
  const ModelConfig* model = nullptr;  // the layout table's model (required when size > 1)
  Communicator* comm = nullptr;        // the TP group (size t, rank = TP rank): only to save
  int rank = 0, size = 1;              // this rank's TP rank and the group size t
};

// One parameter as a checkpoint's layer file holds it: full tensors.
struct FullParameter {
  std::string name;                   // "block.3.q_proj.weight"
  torch::Tensor value;                // CPU, full shape
  torch::Tensor exp_avg, exp_avg_sq;  // CPU, shaped like value; undefined: no AdamW state
  int64_t step = 0;                   // AdamW steps of the moments
};
struct FullLayer {
  std::string layer;  // "embedding", "block.3", "head"
  std::vector<FullParameter> params;
};

// The AdamW state of one parameter: moments shaped like it (undefined: no
// state yet) and the step count.
struct ParamMoments {
  torch::Tensor exp_avg, exp_avg_sq;
  int64_t step = 0;
};
// Where a rank's parameters' whole moments come from (a replicated AdamW:
// OptimizerMoments; ZeRO-1: JoinShardMoments over the data-parallel group).
using MomentsOf = std::function<StatusOr<ParamMoments>(const torch::Tensor& p)>;
MomentsOf OptimizerMoments(torch::optim::AdamW& optimizer);

// ZeRO-1: the whole moments of `p` (shaped like p) from the slices the D
// ranks of the data-parallel group `dp` hold (`slice_of`, e.g.
// DataParallelSync::ShardMoments): one all-reduce sum of the disjoint
// slices (with the step count and the number of slices) over `dp`; no slice
// on any rank: no state. Collective over `dp`: every member calls it for the
// same parameters in the same order. Errors: the communicator's (CommError),
// ComputeError from LibTorch.
StatusOr<ParamMoments> JoinShardMoments(Communicator& dp, const torch::Tensor& p, const MomentSliceOf& slice_of);

// The full tensors of `layers` (this rank's TP shards): for every
// parameter, its value and, when `moments_of` is given, its moments; split
// parameters (and their moments) gathered over tp.comm (one all-gather
// each, GatherTpShards: full shapes, vocab padding dropped), replicated ones
// copied. All calls to `moments_of` come first (in layer and parameter
// order: it may be a collective over another group), then the gathers.
// Collective over tp.comm when tp.size > 1 (every TP rank, same layers).
// Errors: NotFound from the layout table for an unknown name; the
// communicator's; ComputeError from LibTorch.
StatusOr<std::vector<FullLayer>> GatherFullLayers(const std::vector<LayerTensors>& layers, const MomentsOf& moments_of,
                                                  const TensorParallelShards& tp);

// Writes step_dir/<layer>.safetensors for every layer of `layers` (temp +
// rename), the same files SaveLayerFiles writes: parameters, and the moments
// (":exp_avg", ":exp_avg_sq", "<name>:step") of those that have them.
// Errors: ComputeError naming the file.
StatusOr<std::vector<CheckpointFile>> SaveFullLayerFiles(const std::string& step_dir,
                                                         const std::vector<FullLayer>& layers);

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
// Changes nothing. Tensor parallelism (`tp` with size t > 1): the
// parameters are TP shards; each tensor in the files is checked against the
// full shape (the shard's, with the split dimension t times as long, or
// vocab_size rows) and then sliced for tp.rank (SliceForTpRank), moments
// likewise, so value / exp_avg / exp_avg_sq come back shaped like the shard.
// Errors: NotFound / InvalidArgument naming the file and tensor (expected
// vs found).
StatusOr<std::vector<LoadedParameter>> ReadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                                                      const std::vector<LayerTensors>& layers, bool optimizer_state,
                                                      const TensorParallelShards& tp = {});

// ReadLayerFiles, then copies the values into the parameters (on their
// device) and, when `optimizer` is given, sets its AdamW state (a parameter
// without state in the checkpoint gets none). Nothing changes on an error.
Status LoadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                      const std::vector<LayerTensors>& layers, torch::optim::AdamW* optimizer,
                      const TensorParallelShards& tp = {});

// The full shape of a parameter whose TP shard has `shard_shape` under
// `model`'s layout of `name` over tp.size ranks (the shard's own shape when
// t = 1 or the parameter is replicated). Errors: TensorParallelLayoutOf's.
StatusOr<std::vector<int64_t>> FullShapeOf(const std::string& name, const std::vector<int64_t>& shard_shape,
                                           const TensorParallelShards& tp);
// Rank tp.rank's shard of the full tensor `full` of parameter `name`
// (SliceForTpRank; `full` itself when t = 1). Errors: the layout table's;
// InvalidArgument when `full`'s shape does not fit the layout.
StatusOr<torch::Tensor> SliceFullForTp(const std::string& name, const torch::Tensor& full,
                                       const TensorParallelShards& tp);

// ZeRO-1: writes step_dir/<layer>.adamw_shard_<shard>_of_<shards>.safetensors
// for every layer of `layers` (temp + rename; a file even when no parameter
// of the layer has elements in the shard, so that a reader can tell a
// missing file from an empty slice). Returns the manifest entries (shard
// set). Errors: ComputeError naming the file.
StatusOr<std::vector<CheckpointFile>> SaveShardFiles(const std::string& step_dir,
                                                     const std::vector<LayerTensors>& layers, int shard, int shards,
                                                     const MomentSliceOf& slice_of);

}  // namespace pw::exec
