// The single-process reference the executor's equivalence tests compare
// against. Torch-free header (pimpl).
#pragma once

#include <memory>
#include <vector>

#include "executor/data/data.h"
#include "executor/runtime/types.h"
#include "models/spec/model_config.h"

namespace pw::exec {

// The same model in one process, one stage, plain LibTorch autograd (no split
// linear, no microbatches): the reference of the equivalence tests.
class ReferenceModel {
 public:
  // `model`: a plan's model section (plan/plan.h). Errors: InvalidArgument
  // from models::CheckExecutorModel (what the executor does not build).
  static StatusOr<std::unique_ptr<ReferenceModel>> Create(const ModelConfig& model, const EngineOptions& options);
  ~ReferenceModel();
  // Mean cross-entropy over the whole batch, backward, global-norm gradient
  // clipping when options.clip_grad_norm > 0 (torch::nn::utils::clip_grad_norm_),
  // then AdamW if asked.
  StatusOr<double> Step(const TokenBatch& batch, bool apply_optimizer = true);
  std::vector<NamedValues> Parameters() const;
  std::vector<NamedValues> Gradients() const;

 private:
  struct Impl;
  explicit ReferenceModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::exec
