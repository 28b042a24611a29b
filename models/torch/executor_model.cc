#include "models/torch/executor_model.h"

#include "models/spec/model_family.h"

namespace pw::models {

Status CheckExecutorModel(const ModelConfig& m, const std::string& source) {
  PW_RETURN_IF_ERROR(CheckFamilyShape(m, source));
  if (m.dropout)
    return Status::InvalidArgument(
        source + ": field 'dropout' " +
        (FamilyInfo(m.family).style == DecoderStyle::kGpt2
             ? "is true (attn_pdrop, resid_pdrop or embd_pdrop > 0; HF's default is 0.1): the executor has no "
               "dropout layers; set all three to 0 in the config and plan again"
             : "is true (attention_dropout > 0): the executor has no dropout layers; set it to 0 in the config and "
               "plan again"));
  return Status::Ok();
}

}  // namespace pw::models
