// Data-parallel gradient synchronisation of one rank's stages over its
// data-parallel group (the ranks that hold the same pipeline rank in every
// replica; docs/DATA_PARALLEL.md), and ZeRO-1's sharded AdamW.
// LibTorch: included only by torch translation units (engine.cc).
//
// Plain data parallelism (Megatron's default, PyTorch DDP's buckets):
//   REDUCE_GRAD(stage)  copies the stage's gradients into one flat buffer and
//                       starts a non-blocking sum all-reduce per bucket of at
//                       most `bucket_bytes` (25 MiB, DDP's default
//                       bucket_cap_mb), in parameter order;
//   Finish()            waits for every bucket, divides by D and writes the
//                       mean back into each parameter's .grad: every replica
//                       then holds the gradient of the global batch's mean
//                       loss, and steps its own (replicated) AdamW.
// ZeRO-1 (training.distributed_optimizer; Rajbhandari et al. 2020, stage 1;
// Megatron's --use-distributed-optimizer):
//   REDUCE_GRAD(stage)  starts one reduce-scatter of the stage's flat
//                       gradients (padded to a multiple of D): data-parallel
//                       rank d receives the sum of elements [d*S, (d+1)*S);
//   Finish()            waits, divides its shard by D;
//   Zero1Step()         AdamW on the shard only (its moments are the only
//                       optimizer state this rank keeps: 1/D of them), then
//                       an all-gather of the updated shards into every
//                       replica's parameters.
// AdamW is element-wise, so the sharded update equals the replicated one
// element for element.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "executor/checkpoint/checkpoint_io.h"
#include "executor/comm/communicator.h"
#include "executor/runtime/types.h"

namespace pw::exec {

class DataParallelSync {
 public:
  // `dp`: this rank's data-parallel group (size D >= 2; must outlive this
  // object). `params_by_stage`: this rank's stages' parameters in a fixed
  // order (the same on every member of the group). Collective buffers live on
  // `buffer_device` (the CPU for MPI, the GPU for NCCL); `bucket_bytes` caps a
  // plain all-reduce (>= one element). `zero1`: shard AdamW (options' lr,
  // betas, eps, weight decay).
  DataParallelSync(Communicator& dp, std::map<int, std::vector<torch::Tensor>> params_by_stage,
                   const EngineOptions& options, bool zero1, torch::Device buffer_device,
                   int64_t bucket_bytes = int64_t{25} << 20);

  // REDUCE_GRAD of `stage`: starts its non-blocking collectives (above).
  // Errors: Internal for a stage this rank does not hold or one already
  // started this step; the communicator's CommError.
  Status Start(int stage);
  // Waits for every collective started this step (in start order) and
  // writes the averaged gradients (plain) or shard gradients (ZeRO-1).
  // Returns the seconds this call blocked (the all-reduce's exposed time).
  // Errors: Internal if a stage of this rank was not started this step (the
  // plan lacks its REDUCE_GRAD); the communicator's (watchdog included).
  StatusOr<double> Finish();
  // Tests the collectives in flight (never blocks): with MPI each test
  // drives Open MPI's progress of the non-blocking collectives, and records
  // the moment a stage's last request is seen complete. Errors: the
  // communicator's.
  Status Progress();
  // The reductions of the last Finish (start order): posted and completed
  // (as first observed), in seconds from `origin`.
  std::vector<ReduceSpan> Spans(std::chrono::steady_clock::time_point origin) const;
  // Sum of squares (float64) of the gradients this rank owns after Finish:
  // plain, every gradient of its stages (the same on every replica); ZeRO-1,
  // its shards only (sum them over the whole world for the global norm).
  // The elements of the parameters in `skip` (a tied head's replica,
  // counted once through the token table; with tensor parallelism the
  // replicated parameters on TP ranks other than 0) are left out.
  double OwnedGradSumSquares(const std::vector<torch::Tensor>& skip = {}) const;
  // ZeRO-1 with a tied head, after Finish and after the pipeline's tied
  // gradient sum (Engine): all-reduces `p`'s local gradient (table + head
  // uses of this replica) over the group, divides by D, and writes the
  // elements of this rank's shard into the shard gradient (replacing what
  // the reduce-scatter left there, which lacked the other use). Collective
  // over the group, in the same order on every member. Errors: Internal for
  // a parameter this rank does not hold; the communicator's.
  Status ReplaceShardGradWithMean(const torch::Tensor& p);
  // ZeRO-1: the slice of `p`'s AdamW moments this rank's shard holds
  // (checkpoint_io.h MomentSlice), nullopt when none (see MomentSliceOf).
  std::optional<MomentSlice> ShardMoments(const torch::Tensor& p) const;
  // ZeRO-1: sets every stage's shard AdamW state from whole moments read
  // from a checkpoint (ReadLayerFiles: any dp, ZeRO-1 or not): the elements
  // of this rank's shard, zero padding. A stage whose parameters all lack
  // state gets none. Errors: InvalidArgument when a stage's parameters have
  // different step counts or only some have state (naming two of them).
  Status LoadShardMoments(const std::vector<LoadedParameter>& loaded);
  // Multiplies the owned gradients (as above) by `coef` (clipping).
  void ScaleOwnedGrads(double coef);
  // ZeRO-1 only: refreshes the shards from the current parameters, steps
  // AdamW on them, all-gathers the updated shards and copies them into the
  // parameters. Collective over the data-parallel group.
  Status Zero1Step();
  void SetLearningRate(double lr);
  bool zero1() const { return zero1_; }
  // Elements of AdamW state per moment this rank holds (ZeRO-1: its shards;
  // plain: 0, the engine's optimizer holds them).
  int64_t ShardNumel() const;

 private:
  struct StageBuffers {
    std::vector<torch::Tensor> params;
    int64_t numel = 0;               // sum of the parameters' elements
    int64_t padded = 0;              // ZeRO-1: numel rounded up to a multiple of D
    torch::Tensor flat;              // (numel or padded) gradients on buffer_device
    torch::Tensor shard;             // ZeRO-1: (padded / D) reduced gradient shard
    torch::Tensor shard_param;       // ZeRO-1: (padded / D) leaf parameter shard, on the parameters' device
    torch::Tensor gathered;          // ZeRO-1: (padded) all-gathered parameters
    std::vector<RequestId> pending;  // not yet seen complete
    bool started = false;
    std::chrono::steady_clock::time_point posted, done;  // this step's reduction
  };
  ElementType Type() const;
  // The stage buffers holding `p` and p's first element in the stage's flat
  // order; nullptr when this rank does not hold it.
  const StageBuffers* Locate(const torch::Tensor& p, int64_t* offset) const;
  Communicator& dp_;
  std::map<int, StageBuffers> stages_;
  std::vector<int> start_order_;
  std::vector<int> last_order_;  // start_order_ of the last Finish (Spans)
  bool zero1_ = false;
  torch::Device buffer_device_;
  torch::Device param_device_;
  int64_t bucket_elems_ = 1;
  torch::Dtype dtype_;
  std::unique_ptr<torch::optim::AdamW> shard_optimizer_;
};

}  // namespace pw::exec
