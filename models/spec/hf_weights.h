// Hugging Face names of the executor's parameters, and the HF config.json of
// a model: the one table both `run --init-from` (loading) and `export`
// (writing) use. Torch-free.
//
// Our parameter names are a stage's NamedParameters (models/torch/gpt.h):
// "<layer>.<module path>", layers "embedding", "block.<i>" (i = 0 .. L-1)
// and "head". Their HF names are each family's name table in the family
// registry (model_family.cc), e.g.
//   Llama  block.i.q_proj.weight   model.layers.i.self_attn.q_proj.weight
//   Qwen3  block.i.q_norm.weight   model.layers.i.self_attn.q_norm.weight
//   GPT-2  block.i.attn_qkv.weight transformer.h.i.attn.c_attn.weight (Conv1D)
// GPT-2's Conv1D stores a weight as (in, out); ours is (out, in): transposed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/model_config.h"

namespace pw {

struct HfTensorName {
  std::string name;        // the canonical HF name (what export writes)
  bool transpose = false;  // HF stores the 2-D weight transposed, (in, out)
  // Names to look for when loading, in order: `name`, then for GPT-2 the
  // same without the "transformer." prefix (some exports omit it).
  std::vector<std::string> candidates;
};

// The HF name of our parameter `ours` (e.g. "block.3.q_proj.weight") in a
// model of `family`, by the family's name table. With `tied`
// (tie_word_embeddings), the LM head's replica "head.lm_head.weight" is HF's
// token table: `name` is the embedding's (the family's token_table, e.g.
// model.embed_tokens.weight / transformer.wte.weight), loaded
// from it first and else from "lm_head.weight" (HF's tied layout omits
// lm_head.weight or stores an equal copy); export writes it only once, as
// the embedding. Errors: InvalidArgument naming `ours` when it is not a
// parameter name of that family.
StatusOr<HfTensorName> HfNameOf(ModelFamily family, const std::string& ours, bool tied = false);

// The HF config.json of `model` (what ParseModelConfig reads back as the same
// normalised model): model_type and architectures from the family registry
// (its first model type with the model's qkv_bias: "gpt2", "llama", "qwen2"
// for Q/K/V-only biases, "qwen3"), sizes, eps, RoPE theta and scaling, biases,
// tie_word_embeddings, dropout rates (0, or 0.1 when `dropout`), the
// activation (GPT-2: exact "gelu", which the executor computes; Llama:
// "silu"), torch_dtype "float32".
nlohmann::json HfConfigJson(const ModelConfig& model);

// OK when `dir_model` (read from `dir_source`, a config.json) normalises to
// the same model as `plan_model` (a plan's model section): family, layers,
// widths, heads, vocabulary, positions, norm, biases, tying, dropout, eps,
// RoPE. Otherwise InvalidArgument naming `dir_source`, the first differing
// field by its HF name, and both values, e.g. "<dir_source>: field
// 'num_hidden_layers' is 4 but the plan's model has 2".
Status CheckSameModel(const ModelConfig& plan_model, const ModelConfig& dir_model, const std::string& dir_source);

}  // namespace pw
