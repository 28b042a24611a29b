// LibTorch side of loading a Hugging Face directory into stage parameters
// (engine.cc, hf_io.cc). Includes <torch/torch.h>: never include it from a
// torch-free header.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "executor/checkpoint/checkpoint_io.h"
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
// the token table. Tensor parallelism (`tp` with size t > 1): `params` are
// this rank's TP shards; each HF tensor must have the full shape
// (FullShapeOf, as stored: Conv1D (in, out)) and is transposed first, then
// sliced for tp.rank (SliceFullForTp: GPT-2's fused c_attn q;k;v blocks
// each cut by t, Llama's q/k/v/gate/up by rows, o/down by columns,
// vocab-parallel tables padded to PaddedVocab).
Status LoadHfParameters(const safetensors::Checkpoint& ckpt, ModelFamily family,
                        const std::vector<std::pair<std::string, torch::Tensor>>& params, bool tied = false,
                        const TensorParallelShards& tp = {});

}  // namespace pw::exec
