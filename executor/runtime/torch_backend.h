// LibTorch side of the executor: the deferred weight-gradient store and the
// StageBackend that runs F / B / I / W for the stages of one rank.
// Included only by torch translation units (torch_backend.cc, engine.cc).
// Dimension letters: b = rows of a microbatch, T = sequence length,
// C = n_embd, V = vocab_size.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "executor/data/data.h"
#include "executor/runtime/interpreter.h"
#include "models/torch/gpt.h"
#include "models/torch/torch_compat.h"
#include "plan/replica_batch.h"
#include "schedules/program.h"

namespace pw::exec {

// Holds, per (stage, microbatch), what I left for W -- (X, dY) of every GEMM,
// (token ids, dY) of the embedding -- and computes the weight gradients when
// W runs: dW += dY^T X (out, in), db += sum of dY over tokens (out); the
// embedding's scatter-add (models::ApplyDeferredGrad).
// Not thread-safe; one store per rank, used from the rank's thread only.
class WeightGradStore : public models::DeferredGradSink {
 public:
  // Brackets one backward call: `deferring` = this is an I (not a B).
  void Begin(int stage, int microbatch, bool deferring);
  void End();
  bool Deferring() const override { return deferring_; }
  void Push(models::DeferredGemm gemm) override;
  // Runs the deferred GEMMs of (stage, microbatch) and frees them.
  // Errors: Internal if I(stage, microbatch) did not run before.
  Status Flush(int stage, int microbatch);
  // Bytes (distinct storages) held now / held by one (stage, mb) after its I.
  int64_t HeldBytes() const;
  // Largest bytes held for a single (stage, microbatch), per stage, since the
  // last ResetStats.
  const std::map<int, int64_t>& PeakBytesPerStage() const { return peak_per_stage_; }
  // Bytes held for each (stage, microbatch) right after its I, this step.
  const std::map<std::pair<int, int>, int64_t>& BytesAfterI() const { return bytes_after_i_; }
  void ResetStats();
  bool Empty() const { return pending_.empty(); }

 private:
  static int64_t UniqueBytes(const std::vector<models::DeferredGemm>& gemms);
  bool deferring_ = false;
  std::pair<int, int> current_{-1, -1};
  std::map<std::pair<int, int>, std::vector<models::DeferredGemm>> pending_;
  std::map<int, int64_t> peak_per_stage_;
  std::map<std::pair<int, int>, int64_t> bytes_after_i_;
};

// Runs this rank's stages. Tensors of a (stage, microbatch) live from its F
// (or receive) until its I/B (activations) or W (stash), and a sent message
// until its send completed (SendCompleted; at the latest the end-of-step
// wait); EndStep drops everything per-step.
class TorchStageBackend : public StageBackend {
 public:
  // `stages`: this rank's stage modules by global stage index, already on
  // `device`. Compute runs on `device`; messages are host (CPU) buffers
  // (MPI-staged: device -> host before a send, host -> device when the
  // consumer runs; Debian's Open MPI is not CUDA-aware), which for a CPU
  // device costs nothing.
  TorchStageBackend(const Program& program, int rank, const ModelConfig& config, ReplicaBatch shape, torch::Dtype dtype,
                    std::map<int, models::GptStage> stages, torch::Device device = torch::Device(torch::kCPU),
                    bool device_messages = false);

  // Starts a step on `batch` (REQUIRES: outlives the step): resets the loss
  // sum and the stash statistics.
  void BeginStep(const TokenBatch* batch) {
    batch_ = batch;
    loss_sum_ = torch::Tensor();
    store_.ResetStats();
  }
  // Sum over this step's microbatches of the weighted loss, in nats/token
  // (last stage only; 0 on other ranks). Call after the step: the sum is
  // kept on the compute device during it, and this copies it to the host
  // (a device synchronisation on CUDA).
  double StepLoss() const;
  // Sent messages still held (a SEND whose completion was not observed yet),
  // and their bytes; 0 after EndStep.
  int HeldMessages() const;
  int64_t HeldMessageBytes() const;
  // Number of autograd graphs / activation tensors of the last step still
  // alive after EndStep (must be 0), and their bytes.
  int LiveGraphsAfterStep() const { return live_graphs_after_step_; }

  Status Forward(int stage, int microbatch) override;
  Status Backward(int stage, int microbatch, bool input_only) override;
  Status BackwardWeight(int stage, int microbatch) override;
  StatusOr<MessageBuffer> SendBuffer(ActionType type, int stage, int microbatch) override;
  // Drops the sent tensor. With device messages (NCCL) the communicator only
  // reports a send complete once the comm stream finished reading it, so the
  // caching allocator may hand the memory to the compute stream at once.
  void SendCompleted(ActionType type, int stage, int microbatch) override;
  StatusOr<MessageBuffer> RecvBuffer(ActionType type, int stage, int microbatch) override;
  Status EndStep() override;
  // REDUCE_GRAD: calls the function set by SetGradReduction (the engine's
  // DataParallelSync::Start), else the base class's refusal.
  Status ReduceGradients(int stage) override {
    return reduce_grad_ ? reduce_grad_(stage) : StageBackend::ReduceGradients(stage);
  }
  void SetGradReduction(std::function<Status(int stage)> fn) { reduce_grad_ = std::move(fn); }
  // Progress: calls the function set by SetProgress (the engine's
  // DataParallelSync::Progress), else nothing.
  Status Progress() override { return progress_ ? progress_() : Status::Ok(); }
  void SetProgress(std::function<Status()> fn) { progress_ = std::move(fn); }

  WeightGradStore& store() { return store_; }
  std::map<int, models::GptStage>& stages() { return stages_; }

 private:
  struct MicrobatchState {
    torch::Tensor input;       // stage 0: tokens (b, T) int64; else leaf (b, T, C)
    torch::Tensor output;      // (b, T, C), or the weighted loss () on the last stage; holds the graph
    torch::Tensor recv_input;  // RECV_F buffer (b, T, C)
    torch::Tensor recv_grad;   // RECV_B buffer (b, T, C)
    torch::Tensor input_grad;  // (b, T, C) after I/B (stage > 0)
    // Contiguous tensors being sent (b, T, C), each until its send completed:
    // SEND_F's and SEND_B's of one (stage, mb) may be in flight together.
    torch::Tensor send_forward, send_backward;
  };
  std::vector<int64_t> MessageShape(int microbatch) const;  // {b, T, C}, {b, T/t, C} with SP
  std::string Where(const char* what, int stage, int microbatch) const;

  const Program& program_;
  int rank_;
  ModelConfig config_;
  ReplicaBatch shape_;
  torch::Dtype dtype_;
  torch::Device device_;
  bool device_messages_;  // message buffers on device_ (NCCL), else host (MPI-staged)
  std::map<int, models::GptStage> stages_;
  int64_t seq_shards_ = 1;  // t when the stages run sequence-parallel (messages are (b, T/t, C))
  WeightGradStore store_;
  const TokenBatch* batch_ = nullptr;
  std::map<std::pair<int, int>, MicrobatchState> state_;
  std::vector<models::torch_compat::WeakGraphRef> graphs_;  // every F's graph, this step
  // float64 () on device_: sum of the detached weighted losses of this step
  // (undefined until the first one); no host sync inside the step.
  torch::Tensor loss_sum_;
  int live_graphs_after_step_ = 0;
  std::function<Status(int stage)> reduce_grad_;  // data-parallel runs only
  std::function<Status()> progress_;              // data-parallel runs only
};

}  // namespace pw::exec
