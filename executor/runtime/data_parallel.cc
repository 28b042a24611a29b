#include "executor/runtime/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "executor/runtime/torch_util.h"

namespace pw::exec {

DataParallelSync::DataParallelSync(Communicator& dp, std::map<int, std::vector<torch::Tensor>> params_by_stage,
                                   const EngineOptions& options, bool zero1, torch::Device buffer_device,
                                   int64_t bucket_bytes)
    : dp_(dp), zero1_(zero1), buffer_device_(buffer_device), param_device_(torch::kCPU), dtype_(DtypeOf(options)) {
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
  if (b.started) return Status::Internal("REDUCE_GRAD of stage " + std::to_string(stage) + " twice in one step");
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
    return Status::ComputeError("REDUCE_GRAD of stage " + std::to_string(stage) +
                                ": flattening gradients: " + e.what_without_backtrace());
  }
  b.started = true;
  b.posted = std::chrono::steady_clock::now();
  start_order_.push_back(stage);
  if (zero1_) {
    PW_ASSIGN_OR_RETURN(RequestId id,
                        dp_.IreduceScatterSum(b.flat.data_ptr(), b.shard.data_ptr(), b.padded / dp_.size(), Type()));
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
    if (b.pending.empty()) continue;  // seen complete by Progress
    for (RequestId id : b.pending) PW_RETURN_IF_ERROR(dp_.Wait(id));
    b.pending.clear();
    b.done = std::chrono::steady_clock::now();
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
  last_order_ = start_order_;
  start_order_.clear();
  return waited;
}

Status DataParallelSync::Progress() {
  for (int stage : start_order_) {
    StageBuffers& b = stages_.at(stage);
    // Requests complete in post order on one communicator: stop at the
    // first one still in flight (testing it drives the progress of all).
    size_t done = 0;
    while (done < b.pending.size()) {
      PW_ASSIGN_OR_RETURN(bool complete, dp_.Test(b.pending[done]));
      if (!complete) break;
      ++done;
    }
    b.pending.erase(b.pending.begin(), b.pending.begin() + static_cast<std::ptrdiff_t>(done));
    if (done > 0 && b.pending.empty()) b.done = std::chrono::steady_clock::now();
    if (!b.pending.empty()) return Status::Ok();
  }
  return Status::Ok();
}

std::vector<ReduceSpan> DataParallelSync::Spans(std::chrono::steady_clock::time_point origin) const {
  std::vector<ReduceSpan> out;
  for (int stage : last_order_) {
    const StageBuffers& b = stages_.at(stage);
    out.push_back(ReduceSpan{stage, std::chrono::duration<double>(b.posted - origin).count(),
                             std::chrono::duration<double>(b.done - origin).count()});
  }
  return out;
}

const DataParallelSync::StageBuffers* DataParallelSync::Locate(const torch::Tensor& p, int64_t* offset) const {
  for (const auto& [stage, b] : stages_) {
    int64_t o = 0;
    for (const auto& q : b.params) {
      if (q.is_same(p)) {
        *offset = o;
        return &b;
      }
      o += q.numel();
    }
  }
  return nullptr;
}

double DataParallelSync::OwnedGradSumSquares(const std::vector<torch::Tensor>& skip) const {
  torch::NoGradGuard no_grad;
  double sum = 0.0;
  auto skipped = [&](const torch::Tensor& p) {
    return std::any_of(skip.begin(), skip.end(), [&](const torch::Tensor& s) { return s.is_same(p); });
  };
  for (const auto& [stage, b] : stages_) {
    if (zero1_) {
      const int64_t S = b.padded / dp_.size(), first = dp_.rank() * S;
      torch::Tensor sq = b.shard.to(torch::kDouble).pow(2);
      if (skip.empty()) {
        sum += sq.sum().item<double>();
        continue;
      }
      // The owned elements of the skipped parameters are zeroed before the
      // sum (one sum, whatever their number).
      torch::Tensor keep = torch::ones_like(sq);
      for (const torch::Tensor& p : skip) {
        int64_t off = 0;
        if (Locate(p, &off) != &b) continue;
        const int64_t lo = std::max(off, first), hi = std::min(off + p.numel(), first + S);
        if (hi > lo) keep.narrow(0, lo - first, hi - lo).zero_();
      }
      sum += (sq * keep).sum().item<double>();
      continue;
    }
    for (const auto& p : b.params)
      if (p.grad().defined() && !skipped(p)) sum += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  }
  return sum;
}

Status DataParallelSync::ReplaceShardGradWithMean(const torch::Tensor& p) {
  int64_t off = 0;
  const StageBuffers* found = Locate(p, &off);
  if (!zero1_ || found == nullptr)
    return Status::Internal("ReplaceShardGradWithMean: not a ZeRO-1 parameter of this rank");
  StageBuffers& b = const_cast<StageBuffers&>(*found);
  torch::Tensor buf;
  try {
    torch::NoGradGuard no_grad;
    torch::Tensor g = p.grad().defined() ? p.grad() : torch::zeros_like(p);
    buf = g.reshape({-1}).to(buffer_device_).contiguous().clone();
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("tied gradient: ") + e.what_without_backtrace());
  }
  PW_ASSIGN_OR_RETURN(RequestId id, dp_.IallReduceSum(buf.data_ptr(), buf.numel(), Type()));
  PW_RETURN_IF_ERROR(dp_.Wait(id));
  const int64_t S = b.padded / dp_.size(), first = dp_.rank() * S;
  const int64_t lo = std::max(off, first), hi = std::min(off + p.numel(), first + S);
  if (hi <= lo) return Status::Ok();
  try {
    torch::NoGradGuard no_grad;
    b.shard.narrow(0, lo - first, hi - lo).copy_(buf.narrow(0, lo - off, hi - lo).div(static_cast<double>(dp_.size())));
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("tied gradient: ") + e.what_without_backtrace());
  }
  return Status::Ok();
}

std::optional<MomentSlice> DataParallelSync::ShardMoments(const torch::Tensor& p) const {
  int64_t off = 0;
  const StageBuffers* b = Locate(p, &off);
  if (!zero1_ || b == nullptr) return std::nullopt;
  const torch::optim::AdamWParamState* st = FindAdamWState(*shard_optimizer_, b->shard_param);
  if (st == nullptr) return std::nullopt;
  const int64_t S = b->padded / dp_.size(), first = dp_.rank() * S;
  const int64_t lo = std::max(off, first), hi = std::min(off + p.numel(), first + S);
  if (hi <= lo) return std::nullopt;
  MomentSlice m;
  m.offset = lo - off;
  m.exp_avg = st->exp_avg().narrow(0, lo - first, hi - lo);
  m.exp_avg_sq = st->exp_avg_sq().narrow(0, lo - first, hi - lo);
  m.step = st->step();
  return m;
}

Status DataParallelSync::LoadShardMoments(const std::vector<LoadedParameter>& loaded) {
  if (!zero1_) return Status::Internal("LoadShardMoments without ZeRO-1");
  const int64_t d = dp_.rank();
  try {
    torch::NoGradGuard no_grad;
    for (auto& [stage, b] : stages_) {
      const int64_t S = b.padded / dp_.size();
      torch::Tensor m = torch::zeros({b.padded}, b.shard_param.options());
      torch::Tensor v = torch::zeros({b.padded}, b.shard_param.options());
      int with = 0, without = 0;
      int64_t step = -1;
      std::string with_name, without_name;
      int64_t offset = 0;
      for (const auto& p : b.params) {
        const LoadedParameter* l = nullptr;
        for (const LoadedParameter& x : loaded)
          if (x.param.is_same(p)) l = &x;
        if (l == nullptr || !l->exp_avg.defined()) {
          ++without;
          without_name = l ? l->name : "?";
        } else {
          if (with > 0 && l->step != step)
            return Status::InvalidArgument("checkpoint: " + with_name + " has AdamW step " + std::to_string(step) +
                                           " but " + l->name + " (same stage " + std::to_string(stage) + ") " +
                                           std::to_string(l->step) + ": one ZeRO-1 shard cannot hold both");
          ++with;
          step = l->step;
          with_name = l->name;
          m.narrow(0, offset, p.numel()).copy_(l->exp_avg.reshape({-1}));
          v.narrow(0, offset, p.numel()).copy_(l->exp_avg_sq.reshape({-1}));
        }
        offset += p.numel();
      }
      if (with > 0 && without > 0)
        return Status::InvalidArgument("checkpoint: " + with_name + " has AdamW state but " + without_name +
                                       " (same stage " + std::to_string(stage) +
                                       ") has none: one ZeRO-1 shard cannot hold both");
      if (with == 0)
        ClearAdamWState(*shard_optimizer_, b.shard_param);
      else
        SetAdamWState(*shard_optimizer_, b.shard_param, m.narrow(0, d * S, S), v.narrow(0, d * S, S), step);
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("ZeRO-1: loading the shard moments: ") + e.what_without_backtrace());
  }
  return Status::Ok();
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
    PW_ASSIGN_OR_RETURN(RequestId id,
                        dp_.IallGatherBlocks(send.data_ptr(), b.gathered.data_ptr(), b.padded / dp_.size(), Type()));
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
    return Status::ComputeError(std::string("ZeRO-1: copying the gathered parameters: ") + e.what_without_backtrace());
  }
  return Status::Ok();
}

void DataParallelSync::SetLearningRate(double lr) {
  if (!shard_optimizer_) return;
  for (auto& group : shard_optimizer_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

int64_t DataParallelSync::ShardNumel() const {
  int64_t n = 0;
  if (zero1_)
    for (const auto& [stage, b] : stages_) n += b.padded / dp_.size();
  return n;
}

}  // namespace pw::exec
