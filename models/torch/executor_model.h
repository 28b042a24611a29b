// Which models the executor's layers build, torch-free (the executor's
// pre-flight check, the reference, the sampler and `profile` call it before
// building anything). The model itself is the one vocabulary,
// pw::ModelConfig (models/spec/model_config.h): a plan's `model` section, a
// checkpoint manifest's, or a HF config.json read by ParseModelConfig.
#pragma once

#include <string>

#include "base/status.h"
#include "models/spec/model_config.h"

namespace pw::models {

// OK when the executor builds `model` as its family's layers
// (models/torch/gpt.h FamilyLayerBuilders): the family's shape
// (pw::CheckFamilyShape, models/spec/model_family.h: norm, MLP, positions,
// heads, an even head_dim for RoPE, ...), and no dropout (the executor has no
// dropout layers: `dropout`, from the config's attn_pdrop / resid_pdrop /
// embd_pdrop, or attention_dropout). Errors: InvalidArgument
// "<source>: field '<name>' ..." naming the field and what to change.
Status CheckExecutorModel(const ModelConfig& model, const std::string& source);

}  // namespace pw::models
