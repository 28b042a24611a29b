// The LibTorch side of the model family registry: one row per family of
// models/spec/model_family.h, in its order, naming the function that builds
// the family's layers. Each builder is defined in its family's file and
// declared here only, so that adding a family touches this table and not a
// header (docs/ARCHITECTURE.md "Adding a model family").
#include "models/torch/gpt.h"

namespace pw::models {

std::shared_ptr<GptLayerImpl> MakeLlamaLayer(const ModelConfig&, int, const ParamInit&, torch::Dtype);  // llama.cc
std::shared_ptr<GptLayerImpl> MakeQwen3Layer(const ModelConfig&, int, const ParamInit&, torch::Dtype);  // qwen3.cc

const std::vector<FamilyLayers>& FamilyLayerBuilders() {
  static const std::vector<FamilyLayers> builders = {
      {ModelFamily::kGpt2, MakeGpt2Layer},    // gpt.cc
      {ModelFamily::kLlama, MakeLlamaLayer},  // llama.cc
      {ModelFamily::kQwen3, MakeQwen3Layer},  // qwen3.cc
  };
  return builders;
}

}  // namespace pw::models
