#include "executor/runtime/reference.h"

#include <torch/torch.h>

#include "executor/runtime/torch_util.h"
#include "models/torch/executor_model.h"
#include "models/torch/gpt.h"

namespace pw::exec {

// --------------------------------------------------------- ReferenceModel ---

struct ReferenceModel::Impl {
  ModelConfig config;
  EngineOptions options;
  models::GptStage module{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

ReferenceModel::ReferenceModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReferenceModel::~ReferenceModel() = default;

StatusOr<std::unique_ptr<ReferenceModel>> ReferenceModel::Create(const ModelConfig& model,
                                                                 const EngineOptions& options) {
  auto impl = std::make_unique<Impl>();
  PW_RETURN_IF_ERROR(models::CheckExecutorModel(model, "reference model"));
  impl->config = model;
  impl->options = options;
  if (options.intra_op_threads > 0) torch::set_num_threads(options.intra_op_threads);
  impl->module = models::GptStage(impl->config, 0, LayerCount(impl->config), options.init_seed, DtypeOf(options),
                                  /*share_tied=*/true);  // a tied head uses the table itself
  impl->optimizer = std::make_unique<torch::optim::AdamW>(MakeOptimizer(impl->module->parameters(), options));
  return std::unique_ptr<ReferenceModel>(new ReferenceModel(std::move(impl)));
}

StatusOr<double> ReferenceModel::Step(const TokenBatch& batch, bool apply_optimizer) {
  Impl& m = *impl_;
  try {
    ZeroGrads(m.module->parameters());
    torch::Tensor inputs = BatchTensor(batch.inputs, batch.rows, batch.seq);             // (B, T)
    torch::Tensor targets = BatchTensor(batch.targets, batch.rows, batch.seq);           // (B, T)
    torch::Tensor loss = models::LanguageModelLoss(m.module->forward(inputs), targets);  // ()
    loss.backward();
    // LibTorch's own global-norm clipping: the reference the pipelined
    // clipping in Engine::Step is checked against.
    if (m.options.clip_grad_norm > 0)
      torch::nn::utils::clip_grad_norm_(m.module->parameters(), m.options.clip_grad_norm);
    if (apply_optimizer) m.optimizer->step();
    return loss.item<double>();
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("reference step: ") + e.what_without_backtrace());
  }
}

std::vector<NamedValues> ReferenceModel::Parameters() const {
  std::vector<NamedValues> out;
  for (const auto& [name, p] : impl_->module->NamedParameters()) out.push_back(ToNamedValues(name, p, p));
  return out;
}

std::vector<NamedValues> ReferenceModel::Gradients() const {
  std::vector<NamedValues> out;
  for (const auto& [name, p] : impl_->module->NamedParameters()) out.push_back(ToNamedValues(name, p.grad(), p));
  return out;
}

}  // namespace pw::exec
