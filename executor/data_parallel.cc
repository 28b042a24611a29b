#include "executor/data_parallel.h"

#include <algorithm>
#include <chrono>

#include "executor/torch_util.h"

namespace pw::exec {

DataParallelSync::DataParallelSync(Communicator& dp, std::map<int, std::vector<torch::Tensor>> params_by_stage,
                                   const EngineOptions& options, bool zero1, torch::Device buffer_device,
                                   int64_t bucket_bytes)
    : dp_(dp),
      zero1_(zero1),
      buffer_device_(buffer_device),
      param_device_(torch::kCPU),
      dtype_(DtypeOf(options)) {
  bucket_elems_ = std::max<int64_t>(1, bucket_bytes / ElementBytes(Type()));
  const int64_t D = dp_.size();
  std::vector<torch::Tensor> shards;
  for (auto& [stage, params] : params_by_stage) {
    StageBuffers b;
    b.params = std::move(params);
    for (const auto& p : b.params) {
      b.numel += p.numel();
      param_device_ = p.device();
    }
    b.padded = zero1_ ? (b.numel + D - 1) / D * D : b.numel;
    const auto on_buffer = torch::TensorOptions().dtype(dtype_).device(buffer_device_);
    b.flat = torch::zeros({b.padded}, on_buffer);
    if (zero1_) {
      b.shard = torch::zeros({b.padded / D}, on_buffer);
      b.gathered = torch::zeros({b.padded}, on_buffer);
      b.shard_param = torch::zeros({b.padded / D}, torch::TensorOptions().dtype(dtype_).device(param_device_))
                          .set_requires_grad(true);
      shards.push_back(b.shard_param);
    }
    stages_.emplace(stage, std::move(b));
  }
  if (zero1_) shard_optimizer_ = std::make_unique<torch::optim::AdamW>(MakeOptimizer(shards, options));
}

ElementType DataParallelSync::Type() const {
  return dtype_ == torch::kDouble ? ElementType::kFloat64 : ElementType::kFloat32;
}

Status DataParallelSync::Start(int stage) {
  auto it = stages_.find(stage);
  if (it == stages_.end())
    return Status::Internal("REDUCE_GRAD of stage " + std::to_string(stage) + ", which this rank does not hold");
  StageBuffers& b = it->second;
  if (b.started)
    return Status::Internal("REDUCE_GRAD of stage " + std::to_string(stage) + " twice in one step");
  try {
    torch::NoGradGuard no_grad;
    int64_t offset = 0;
    for (const auto& p : b.params) {
      torch::Tensor slot = b.flat.narrow(0, offset, p.numel());
      if (p.grad().defined())
        slot.copy_(p.grad().reshape({-1}));
      else
        slot.zero_();
      offset += p.numel();
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError("REDUCE_GRAD of stage " + std::to_string(stage) + ": flattening gradients: " +
                                e.what_without_backtrace());
  }
  b.started = true;
  start_order_.push_back(stage);
  if (zero1_) {
    PW_ASSIGN_OR_RETURN(RequestId id, dp_.IreduceScatterSum(b.flat.data_ptr(), b.shard.data_ptr(),
                                                            b.padded / dp_.size(), Type()));
    b.pending.push_back(id);
    return Status::Ok();
  }
  char* base = static_cast<char*>(b.flat.data_ptr());
  for (int64_t first = 0; first < b.numel; first += bucket_elems_) {
    const int64_t count = std::min(bucket_elems_, b.numel - first);
    PW_ASSIGN_OR_RETURN(RequestId id, dp_.IallReduceSum(base + first * ElementBytes(Type()), count, Type()));
    b.pending.push_back(id);
  }
  return Status::Ok();
}

StatusOr<double> DataParallelSync::Finish() {
  for (const auto& [stage, b] : stages_)
    if (!b.started)
      return Status::Internal("stage " + std::to_string(stage) +
                              " ended the step without its REDUCE_GRAD action: its gradients were not reduced "
                              "across the data-parallel group (the plan must hold <stage>REDUCE_GRAD once per "
                              "stage when dp_size > 1)");
  const auto t0 = std::chrono::steady_clock::now();
  for (int stage : start_order_) {
    StageBuffers& b = stages_.at(stage);
    for (RequestId id : b.pending) PW_RETURN_IF_ERROR(dp_.Wait(id));
    b.pending.clear();
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double D = static_cast<double>(dp_.size());
  try {
    torch::NoGradGuard no_grad;
    for (int stage : start_order_) {
      StageBuffers& b = stages_.at(stage);
      b.started = false;
      if (zero1_) {
        b.shard.div_(D);
        continue;
      }
      b.flat.div_(D);
      int64_t offset = 0;
      for (auto& p : b.params) {
        torch::Tensor mean = b.flat.narrow(0, offset, p.numel()).view(p.sizes());
        if (p.grad().defined())
          p.mutable_grad().copy_(mean);
        else
          p.mutable_grad() = mean.to(p.device()).clone();
        offset += p.numel();
      }
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("writing the reduced gradients: ") + e.what_without_backtrace());
  }
  start_order_.clear();
  return waited;
}

double DataParallelSync::OwnedGradSumSquares() const {
  torch::NoGradGuard no_grad;
  double sum = 0.0;
  for (const auto& [stage, b] : stages_) {
    if (zero1_) {
      sum += b.shard.to(torch::kDouble).pow(2).sum().item<double>();
      continue;
    }
    for (const auto& p : b.params)
      if (p.grad().defined()) sum += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  }
  return sum;
}

void DataParallelSync::ScaleOwnedGrads(double coef) {
  torch::NoGradGuard no_grad;
  for (auto& [stage, b] : stages_) {
    if (zero1_) {
      b.shard.mul_(coef);
      continue;
    }
    for (auto& p : b.params)
      if (p.grad().defined()) p.mutable_grad().mul_(coef);
  }
}

Status DataParallelSync::Zero1Step() {
  if (!zero1_) return Status::Internal("Zero1Step without ZeRO-1");
  const int64_t d = dp_.rank();
  try {
    torch::NoGradGuard no_grad;
    for (auto& [stage, b] : stages_) {
      const int64_t S = b.padded / dp_.size();
      // The shard of the current parameters (they may have been loaded from a
      // checkpoint since the last step); padding stays zero.
      torch::Tensor flat_params = torch::zeros({b.padded}, b.shard_param.options());
      int64_t offset = 0;
      for (const auto& p : b.params) {
        flat_params.narrow(0, offset, p.numel()).copy_(p.detach().reshape({-1}));
        offset += p.numel();
      }
      b.shard_param.copy_(flat_params.narrow(0, d * S, S));
      b.shard_param.mutable_grad() = b.shard.to(param_device_).clone();
    }
    shard_optimizer_->step();
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("ZeRO-1 AdamW step on the shard: ") + e.what_without_backtrace());
  }
  std::vector<std::pair<StageBuffers*, RequestId>> gathers;
  std::vector<torch::Tensor> keep;  // send buffers on buffer_device_, alive until the waits
  for (auto& [stage, b] : stages_) {
    torch::Tensor send = b.shard_param.detach().to(buffer_device_).contiguous();
    keep.push_back(send);
    PW_ASSIGN_OR_RETURN(RequestId id, dp_.IallGatherBlocks(send.data_ptr(), b.gathered.data_ptr(),
                                                           b.padded / dp_.size(), Type()));
    gathers.emplace_back(&b, id);
  }
  for (auto& [b, id] : gathers) PW_RETURN_IF_ERROR(dp_.Wait(id));
  try {
    torch::NoGradGuard no_grad;
    for (auto& [stage, b] : stages_) {
      int64_t offset = 0;
      for (auto& p : b.params) {
        p.copy_(b.gathered.narrow(0, offset, p.numel()).view(p.sizes()));
        offset += p.numel();
      }
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("ZeRO-1: copying the gathered parameters: ") +
                                e.what_without_backtrace());
  }
  return Status::Ok();
}

void DataParallelSync::SetLearningRate(double lr) {
  if (!shard_optimizer_) return;
  for (auto& group : shard_optimizer_->param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

int64_t DataParallelSync::ShardNumel() const {
  int64_t n = 0;
  if (zero1_)
    for (const auto& [stage, b] : stages_) n += b.padded / dp_.size();
  return n;
}

}  // namespace pw::exec
