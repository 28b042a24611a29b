// The executor's per-rank engine: builds this rank's stages from a plan,
// runs one training step at a time through the interpreter, and steps AdamW;
// saves and loads its layers' checkpoints and Hugging Face weights. Its value
// types (options, step reports) are in types.h.
//
// Torch-free header (pimpl): the CLI and the tests include it without
// compiling LibTorch; the implementation is engine.cc.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/comm/communicator.h"
#include "executor/data/data.h"
#include "executor/runtime/interpreter.h"
#include "executor/runtime/types.h"
#include "plan/plan.h"

namespace pw::exec {

class Engine {
 public:
  // Collective over `comm` (every rank of the job: tp_size x pp_size x
  // dp_size). Agrees on the plan hash with every rank (AgreeOnPlan), runs
  // PreflightCheck (world size, validation, model and training fields); with
  // dp_size > 1 or tp_size > 1 splits `comm` into this rank's pipeline,
  // data-parallel and (tp_size > 1) tensor-parallel communicators
  // (Communicator::Split; world rank g = pipeline rank * dp_size * tp_size +
  // dp rank * tp_size + tp rank), then builds this rank's stages (with
  // tp_size > 1 its tensor-parallel shards, GptStage::ShardTensorParallel)
  // and optimizer (ZeRO-1's shards over the data-parallel group of its
  // (pipeline, tensor-parallel) rank when the plan says
  // training.distributed_optimizer). InvalidArgument naming the
  // communicator and --comm mpi when tp_size > 1 and it cannot split
  // (loopback, tcp).
  // Errors: those of AgreeOnPlan / PreflightCheck (nothing computed yet);
  // ComputeError if LibTorch fails to build a stage.
  static StatusOr<std::unique_ptr<Engine>> Create(const Plan& plan, Communicator& comm, const EngineOptions& options);
  ~Engine();

  // One step on `batch`: this replica's rows of the global batch (the ranks
  // of one replica pass the same batch; only the first stage's rank reads
  // inputs, only the last stage's rank reads targets). With dp_size > 1 the
  // REDUCE_GRAD actions start the gradient reduction, waited for before
  // the optimizer step; clipping uses the norm over the whole grid.
  // Zeroes gradients, runs the rank's actions, steps AdamW if
  // `apply_optimizer`, then gathers loss and timings. Collective.
  // Errors: InvalidArgument if the batch shape differs from the plan's
  // training fields; interpreter errors (rank, step, action, grid).
  // `hooks` (optional): span recording, the wait board, fault injection.
  StatusOr<StepReport> Step(const TokenBatch& batch, bool apply_optimizer = true, const StepHooks* hooks = nullptr);

  // This rank's parameters / gradients (undefined gradients as zeros); with
  // tp_size > 1 its tensor-parallel shards (vocab-parallel ones with their
  // zero padding rows; GatheredParameters for whole tensors).
  std::vector<NamedValues> Parameters() const;
  std::vector<NamedValues> Gradients() const;
  std::vector<StashReport> Stash() const;
  // This rank's stages, in stage order, with their parameter counts.
  std::vector<StageParameterBytes> StageParameters() const;
  // Autograd graphs of the last step still alive after it (0 when sound).
  int LiveGraphsAfterStep() const;
  // Sent message tensors this rank still holds (sends whose completion was
  // not observed yet), and their bytes. Readable during a step from the
  // rank's own thread (StepHooks::before_action); 0 between steps.
  int HeldMessages() const;
  int64_t HeldMessageBytes() const;
  // Sets the AdamW learning rate of the following steps (a schedule).
  void SetLearningRate(double lr);
  // This rank's AdamW state, per parameter that has one: "<name>:exp_avg",
  // "<name>:exp_avg_sq" (shaped like the parameter) and "<name>:step" (one
  // value), in parameter order. Empty before the first optimizer step.
  std::vector<NamedValues> OptimizerState() const;
  // (name, HashHex) of each of this rank's parameters and AdamW state
  // tensors (names as OptimizerState's; the step count hashed as int64):
  // Fnv1a64Words (base/hash.h) of the raw bytes in the run's dtype, one tensor at a time
  // (no copy of the whole model).
  std::vector<std::pair<std::string, std::string>> TensorDigests() const;
  // Writes this rank's files into `step_dir` (executor/checkpoint/checkpoint.h; each
  // file temp + rename) and returns their manifest entries: on data-parallel
  // rank 0 the layer files of its stages (parameters, + AdamW state without
  // ZeRO-1); with ZeRO-1, on every rank, its optimizer shard files of those
  // layers. Tensor parallel (tp_size > 1): full tensors, the TP shards
  // gathered over the TP group (with ZeRO-1 the moments joined over the DP
  // group first, into the layer files: no shard files); TP rank 0 of DP
  // rank 0 writes; collective over those groups. Otherwise local;
  // WriteCheckpoint is the collective.
  // Errors: ComputeError naming the rank and file.
  StatusOr<std::vector<CheckpointFile>> SaveCheckpoint(const std::string& step_dir) const;
  // Collective over the world: a complete checkpoint after `steps_done`
  // optimizer steps in `step_dir` (created): world rank 0 first removes an
  // old manifest.json there, every rank writes its files (SaveCheckpoint),
  // then world rank 0 writes manifest.json
  // last (the model, dtype, seed, batch shape and data position; the plan is
  // recorded for information). Returns the bytes of all layer files. Errors:
  // any rank's, agreed (AgreeOnStatus) so every rank returns it.
  StatusOr<int64_t> WriteCheckpoint(const std::string& step_dir, int steps_done);
  // Loads the layers of this rank's stages from `step_dir` (described by
  // `manifest`, ReadManifest) into the parameters and the AdamW state, bit
  // for bit, whatever plan, dp size or optimizer sharding wrote it (ZeRO-1
  // shards are joined and re-sliced for this run: ReadLayerFiles; with
  // tp_size > 1 each full tensor is cut for this TP rank). Local (the caller agrees on the
  // outcome). Errors: those of LoadLayerFiles (checkpoint_io.h): a missing,
  // truncated or corrupt file, a missing or mis-shaped tensor, each naming
  // the file, before any parameter changes.
  Status LoadCheckpoint(const std::string& step_dir, const CheckpointManifest& manifest);
  // Replaces this rank's parameters by those of the Hugging Face directory
  // `dir` (config.json + model.safetensors or shards, hf_io.h): checks that
  // dir/config.json normalises to the plan's model (CheckSameModel), then
  // reads only this rank's stages' tensors by HF name (with tp_size > 1 cut
  // for this TP rank: LoadHfParameters) (F32/F16/BF16/F64
  // converted into the run's dtype; exact except F64 into float32). The
  // optimizer state is left fresh. Collective: the outcome is agreed across
  // ranks (AgreeOnStatus), so every rank fails together before any step.
  // Errors: NotFound naming a missing config.json or weights file;
  // InvalidArgument naming the file and field (another model) or tensor
  // (missing, wrong shape, malformed file; safetensors.h).
  Status InitFromHf(const std::string& dir);

  const Plan& plan() const;
  // Pipeline rank (the index into plan.ranks), data-parallel rank and size,
  // and rank in the communicator Create was given (the world):
  // world_rank = rank * dp_size + dp_rank with tp_size 1
  // (docs/DATA_PARALLEL.md).
  int rank() const;
  int dp_rank() const;
  int dp_size() const;
  int world_rank() const;
  // Tensor-parallel rank and size (plan tp_size; 0 and 1 without TP):
  // world_rank = rank * dp_size * tp_size + dp_rank * tp_size + tp_rank.
  int tp_rank() const;
  int tp_size() const;
  // This rank's parameters as whole tensors: the shards of split ones
  // gathered over the tensor-parallel group (GatherTpShards: full shapes,
  // padding rows dropped), replicated ones as held. Collective over the TP
  // group (every TP rank calls it). With tp_size 1: Parameters().
  // Errors: ComputeError naming the rank if a collective fails.
  StatusOr<std::vector<NamedValues>> GatheredParameters() const;
  // Tensor-parallel collectives this rank has run since Create (0 without
  // TP): read from StepHooks::before_action, the difference between two
  // actions is what the earlier one ran (tests check that W runs none).
  int64_t TensorParallelCollectives() const;
  // The communicator of this rank's pipeline replica (the world's when
  // dp_size is 1); lives as long as the engine.
  Communicator& pipeline_comm() const;
  // True when AdamW is sharded over the data-parallel group (ZeRO-1).
  bool distributed_optimizer() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::exec
