#include "executor/runtime/torch_backend.h"

#include <set>

namespace pw::exec {

// ---------------------------------------------------------------- store ---

void WeightGradStore::Begin(int stage, int microbatch, bool deferring) {
  current_ = {stage, microbatch};
  deferring_ = deferring;
  if (deferring) pending_[current_];  // an I with no GEMM (embedding only) still counts as run
}

void WeightGradStore::End() {
  if (deferring_) {
    const int64_t bytes = UniqueBytes(pending_[current_]);
    bytes_after_i_[current_] = bytes;
    int64_t& peak = peak_per_stage_[current_.first];
    peak = std::max(peak, bytes);
  }
  deferring_ = false;
  current_ = {-1, -1};
}

void WeightGradStore::Push(models::DeferredGemm gemm) { pending_[current_].push_back(std::move(gemm)); }

Status WeightGradStore::Flush(int stage, int microbatch) {
  auto it = pending_.find({stage, microbatch});
  if (it == pending_.end())
    return Status::Internal("W of stage " + std::to_string(stage) + " microbatch " + std::to_string(microbatch) +
                            " before its I (nothing deferred)");
  for (const models::DeferredGemm& g : it->second) models::ApplyDeferredGrad(g);
  pending_.erase(it);
  return Status::Ok();
}

int64_t WeightGradStore::UniqueBytes(const std::vector<models::DeferredGemm>& gemms) {
  std::set<const void*> seen;
  int64_t bytes = 0;
  for (const auto& g : gemms) {
    for (const torch::Tensor* t : {&g.input, &g.grad_output}) {
      const void* key = t->storage().data();
      if (seen.insert(key).second) bytes += static_cast<int64_t>(t->storage().nbytes());
    }
  }
  return bytes;
}

int64_t WeightGradStore::HeldBytes() const {
  int64_t total = 0;
  for (const auto& [key, gemms] : pending_) total += UniqueBytes(gemms);
  return total;
}

void WeightGradStore::ResetStats() {
  peak_per_stage_.clear();
  bytes_after_i_.clear();
}

// -------------------------------------------------------------- backend ---

TorchStageBackend::TorchStageBackend(const Program& program, int rank, const ModelConfig& config, ReplicaBatch shape,
                                     torch::Dtype dtype, std::map<int, models::GptStage> stages, torch::Device device,
                                     bool device_messages)
    : program_(program),
      rank_(rank),
      config_(config),
      shape_(std::move(shape)),
      dtype_(dtype),
      device_(device),
      device_messages_(device_messages),
      stages_(std::move(stages)) {
  for (auto& [s, module] : stages_) {
    module->SetSink(&store_);
    const models::TensorParallelContext& tp = module->tensor_parallel();
    if (tp.sequence_parallel) seq_shards_ = tp.size();
  }
}

std::vector<int64_t> TorchStageBackend::MessageShape(int microbatch) const {
  // Sequence parallel: the activations between stages are this rank's
  // sequence shard (Korthikanti et al. 2022 §4.2.2; the plan's message bytes
  // are s b h e / t).
  return {shape_.microbatch_sizes[microbatch], shape_.seq_length / seq_shards_, config_.hidden};
}

std::string TorchStageBackend::Where(const char* what, int stage, int microbatch) const {
  return std::string(what) + " of stage " + std::to_string(stage) + " microbatch " + std::to_string(microbatch);
}

Status TorchStageBackend::Forward(int stage, int mb) {
  auto module_it = stages_.find(stage);
  if (module_it == stages_.end()) return Status::Internal("stage " + std::to_string(stage) + " is not on this rank");
  if (batch_ == nullptr) return Status::Internal("no batch set");
  const int64_t rows = shape_.microbatch_sizes[mb], T = shape_.seq_length, off = shape_.row_offsets[mb];
  MicrobatchState& st = state_[{stage, mb}];
  try {
    if (stage == 0) {
      // Only the first stage reads inputs: tokens (b, T) int64.
      st.input = torch::from_blob(const_cast<int64_t*>(batch_->inputs.data()) + off * T, {rows, T},
                                  torch::TensorOptions().dtype(torch::kLong))
                     .clone()
                     .to(device_);
    } else if (program_.stage_to_rank[stage - 1] == rank_) {
      auto prev = state_.find({stage - 1, mb});
      if (prev == state_.end() || !prev->second.output.defined())
        return Status::Internal(Where("F", stage, mb) + " before F of stage " + std::to_string(stage - 1));
      st.input = prev->second.output.detach().requires_grad_(true);  // (b, T, C), local hand-over
    } else {
      if (!st.recv_input.defined()) return Status::Internal(Where("F", stage, mb) + " has no received input");
      st.input = st.recv_input.to(device_).requires_grad_(true);  // (b, T, C), host -> device if CUDA
      st.recv_input = torch::Tensor();
    }
    torch::Tensor out = module_it->second->forward(st.input);  // (b, T, C) or logits (b, T, V)
    if (module_it->second->has_head()) {
      // Only the last stage reads targets. The microbatch's mean loss is
      // weighted by its share of the batch, so the sum over microbatches is
      // the batch mean and gradients accumulate without rescaling.
      torch::Tensor targets = torch::from_blob(const_cast<int64_t*>(batch_->targets.data()) + off * T, {rows, T},
                                               torch::TensorOptions().dtype(torch::kLong))
                                  .clone()
                                  .to(device_);  // (b, T)
      out =
          module_it->second->Loss(out, targets) * (static_cast<double>(rows) / static_cast<double>(shape_.rows));  // ()
      // Accumulated on the device in float64 (exactly what summing
      // item<double>() on the host gave) without a host sync.
      torch::Tensor weighted = out.detach().to(torch::kDouble, /*non_blocking=*/false, /*copy=*/true);  // ()
      if (loss_sum_.defined())
        loss_sum_.add_(weighted);
      else
        loss_sum_ = weighted;
    }
    st.output = out;
    graphs_.push_back(models::torch_compat::MakeWeak(out.grad_fn()));
  } catch (const c10::Error& e) {
    return Status::ComputeError(Where("F", stage, mb) + ": " + e.what_without_backtrace());
  }
  return Status::Ok();
}

Status TorchStageBackend::Backward(int stage, int mb, bool input_only) {
  const char* what = input_only ? "I" : "B";
  auto it = state_.find({stage, mb});
  if (it == state_.end() || !it->second.output.defined())
    return Status::Internal(Where(what, stage, mb) + " before its F");
  MicrobatchState& st = it->second;
  const int last_stage = program_.num_stages - 1;
  torch::Tensor grad;  // gradient of st.output: (b, T, C), or undefined for the loss
  MicrobatchState* next_local = nullptr;
  if (stage != last_stage) {
    if (program_.stage_to_rank[stage + 1] == rank_) {
      auto nx = state_.find({stage + 1, mb});
      if (nx == state_.end() || !nx->second.input_grad.defined())
        return Status::Internal(Where(what, stage, mb) + " before I/B of stage " + std::to_string(stage + 1));
      next_local = &nx->second;
      grad = nx->second.input_grad;
    } else {
      if (!st.recv_grad.defined()) return Status::Internal(Where(what, stage, mb) + " has no received gradient");
      grad = st.recv_grad.to(device_);  // host -> device if CUDA
    }
  }
  try {
    store_.Begin(stage, mb, input_only);
    if (grad.defined())
      torch::autograd::backward({st.output}, {grad}, /*retain_graph=*/false, /*create_graph=*/false);
    else
      torch::autograd::backward({st.output}, {}, /*retain_graph=*/false, /*create_graph=*/false);
    store_.End();
  } catch (const c10::Error& e) {
    store_.End();
    return Status::ComputeError(Where(what, stage, mb) + ": " + e.what_without_backtrace());
  }
  if (stage > 0) {
    st.input_grad = st.input.grad();  // (b, T, C)
    if (!st.input_grad.defined()) return Status::Internal(Where(what, stage, mb) + " produced no input gradient");
  }
  // The activations of this (stage, mb) are no longer needed.
  st.output = torch::Tensor();
  st.input = torch::Tensor();
  st.recv_grad = torch::Tensor();
  if (next_local != nullptr) next_local->input_grad = torch::Tensor();
  return Status::Ok();
}

Status TorchStageBackend::BackwardWeight(int stage, int mb) {
  try {
    return store_.Flush(stage, mb);
  } catch (const c10::Error& e) {
    return Status::ComputeError(Where("W", stage, mb) + ": " + e.what_without_backtrace());
  }
}

StatusOr<MessageBuffer> TorchStageBackend::SendBuffer(ActionType type, int stage, int mb) {
  auto it = state_.find({stage, mb});
  const bool forward = type == ActionType::kSendF;
  if (it == state_.end())
    return Status::Internal(Where(forward ? "SEND_F" : "SEND_B", stage, mb) + " before its producer");
  MicrobatchState& st = it->second;
  torch::Tensor src = forward ? st.output : st.input_grad;
  if (!src.defined())
    return Status::Internal(Where(forward ? "SEND_F" : "SEND_B", stage, mb) + " before " + (forward ? "F" : "I/B"));
  // Shapes are fixed by the plan (frozen metadata); check every message.
  if (src.sizes().vec() != MessageShape(mb) || src.scalar_type() != dtype_)
    return Status::Internal(Where(forward ? "SEND_F" : "SEND_B", stage, mb) + ": tensor shape " +
                            c10::str(src.sizes()) + " differs from the plan's " + c10::str(MessageShape(mb)));
  // Device buffer for NCCL; else device -> host if CUDA (MPI-staged). With
  // NCCL the comm stream waits on the compute stream before sending, and the
  // tensor lives until SendCompleted (the comm stream is done with it) or
  // EndStep.
  torch::Tensor& send = forward ? st.send_forward : st.send_backward;
  send = device_messages_ ? src.detach().contiguous() : src.detach().to(torch::kCPU).contiguous();
  if (!forward) st.input_grad = torch::Tensor();  // the send holds it now
  return MessageBuffer{send.data_ptr(), static_cast<int64_t>(send.numel() * send.element_size())};
}

void TorchStageBackend::SendCompleted(ActionType type, int stage, int mb) {
  auto it = state_.find({stage, mb});
  if (it == state_.end()) return;
  (type == ActionType::kSendF ? it->second.send_forward : it->second.send_backward) = torch::Tensor();
}

int TorchStageBackend::HeldMessages() const {
  int n = 0;
  for (const auto& [key, st] : state_)
    for (const torch::Tensor* t : {&st.send_forward, &st.send_backward}) n += t->defined() ? 1 : 0;
  return n;
}

int64_t TorchStageBackend::HeldMessageBytes() const {
  int64_t bytes = 0;
  for (const auto& [key, st] : state_)
    for (const torch::Tensor* t : {&st.send_forward, &st.send_backward})
      if (t->defined()) bytes += static_cast<int64_t>(t->numel() * t->element_size());
  return bytes;
}

double TorchStageBackend::StepLoss() const { return loss_sum_.defined() ? loss_sum_.item<double>() : 0.0; }

StatusOr<MessageBuffer> TorchStageBackend::RecvBuffer(ActionType type, int stage, int mb) {
  MicrobatchState& st = state_[{stage, mb}];
  // Host buffer (b, T, C); pinned when compute is on a GPU, for fast copies.
  torch::Tensor buf =
      device_messages_
          ? torch::empty(MessageShape(mb), torch::TensorOptions().dtype(dtype_).device(device_))
          : torch::empty(MessageShape(mb), torch::TensorOptions().dtype(dtype_).pinned_memory(device_.is_cuda()));
  if (type == ActionType::kRecvF)
    st.recv_input = buf;
  else
    st.recv_grad = buf;
  return MessageBuffer{buf.data_ptr(), static_cast<int64_t>(buf.numel() * buf.element_size())};
}

Status TorchStageBackend::EndStep() {
  if (!store_.Empty())
    return Status::Internal("rank " + std::to_string(rank_) + ": " + std::to_string(store_.HeldBytes()) +
                            " bytes of deferred weight gradients left at the end of the step (I without W)");
  state_.clear();
  live_graphs_after_step_ = 0;
  for (const auto& g : graphs_) live_graphs_after_step_ += models::torch_compat::GraphExpired(g) ? 0 : 1;
  graphs_.clear();
  return Status::Ok();
}

}  // namespace pw::exec
