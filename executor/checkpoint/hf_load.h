// LibTorch side of loading a Hugging Face directory into stage parameters
// (engine.cc, hf_io.cc). Includes <torch/torch.h>: never include it from a
// torch-free header.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "models/spec/model_config.h"
#include "models/spec/safetensors.h"

namespace pw::exec {

// Copies every parameter of `params` (our NamedParameters names, e.g.
// "block.2.q_proj.weight") from `ckpt` by its HF name (HfNameOf), converting
// the stored dtype into the parameter's (F32/F16/BF16 -> float32 or float64
// exactly) and transposing Conv1D weights. Errors (nothing is half-copied:
// every tensor is found and checked before any parameter changes):
// InvalidArgument naming the directory or file and the HF tensor when a
// tensor is missing or has another shape than the parameter (as stored).
// `tied`: the model's LM head is tied (HfNameOf): its replica is read from
// the token table.
Status LoadHfParameters(const safetensors::Checkpoint& ckpt, ModelFamily family,
                        const std::vector<std::pair<std::string, torch::Tensor>>& params, bool tied = false);

}  // namespace pw::exec
