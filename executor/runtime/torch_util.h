// Small LibTorch helpers shared by the executor's torch translation units
// (engine.cc, reference.cc, sampler.cc). Includes <torch/torch.h>: never
// include it from a torch-free header.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <string>
#include <vector>

#include "executor/runtime/types.h"

namespace pw::exec {

using Clock = std::chrono::steady_clock;

// float64 with --dtype float64, else float32.
inline torch::Dtype DtypeOf(const EngineOptions& o) { return o.double_precision ? torch::kDouble : torch::kFloat; }

// `t` (or zeros shaped like `like` when undefined) as float64 values.
inline NamedValues ToNamedValues(const std::string& name, const torch::Tensor& t, const torch::Tensor& like) {
  NamedValues nv;
  nv.name = name;
  nv.shape = like.sizes().vec();
  torch::Tensor d = t.defined() ? t.detach().to(torch::kCPU).to(torch::kDouble).contiguous()
                                : torch::zeros(like.sizes(), torch::TensorOptions().dtype(torch::kDouble));
  nv.values.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  return nv;
}

// AdamW with the run's learning rate, betas, eps and weight decay.
inline torch::optim::AdamW MakeOptimizer(std::vector<torch::Tensor> params, const EngineOptions& o) {
  torch::optim::AdamWOptions opts(o.lr);
  opts.betas(std::make_tuple(o.beta1, o.beta2)).eps(o.eps).weight_decay(o.weight_decay);
  return torch::optim::AdamW(std::move(params), opts);
}

// Gradients are zeroed in place once they exist, so that the bytes held
// across steps stay constant (no re-allocation per step).
inline void ZeroGrads(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params)
    if (p.grad().defined()) p.mutable_grad().zero_();
}

// A (rows, seq) int64 tensor copied from `v`.
inline torch::Tensor BatchTensor(const std::vector<int64_t>& v, int rows, int seq) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {rows, seq}, torch::TensorOptions().dtype(torch::kLong))
      .clone();  // (B, T)
}

}  // namespace pw::exec
