// Hugging Face names of the executor's parameters, and the HF config.json of
// a model: the one table both `run --init-from` (loading) and `export`
// (writing) use. Torch-free.
//
// Our parameter names are a stage's NamedParameters (models/torch/gpt.h):
// "<layer>.<module path>", layers "embedding", "block.<i>" (i = 0 .. L-1)
// and "head". HF names (transformers' LlamaForCausalLM / GPT2LMHeadModel):
//   Llama  embedding.embed_tokens             model.embed_tokens.weight
//          block.i.<m>.weight|bias            model.layers.i.self_attn.<m>.*  (m = q_proj, k_proj, v_proj, o_proj)
//                                             model.layers.i.mlp.<m>.*        (m = gate_proj, up_proj, down_proj)
//                                             model.layers.i.<m>.weight       (m = input_layernorm, post_attention_layernorm)
//          head.norm.weight                   model.norm.weight
//          head.lm_head.weight                lm_head.weight
//   GPT-2  embedding.wte | wpe                transformer.wte.weight | transformer.wpe.weight
//          block.i.ln_1|ln_2.*                transformer.h.i.ln_1|ln_2.*
//          block.i.attn_qkv.*                 transformer.h.i.attn.c_attn.*   (Conv1D)
//          block.i.attn_proj.*                transformer.h.i.attn.c_proj.*   (Conv1D)
//          block.i.mlp_fc.*                   transformer.h.i.mlp.c_fc.*      (Conv1D)
//          block.i.mlp_proj.*                 transformer.h.i.mlp.c_proj.*    (Conv1D)
//          head.ln_f.*                        transformer.ln_f.*
//          head.lm_head.weight                lm_head.weight
// GPT-2's Conv1D stores a weight as (in, out); ours is (out, in): transposed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
// model of `family`. With `tied` (tie_word_embeddings), the LM head's
// replica "head.lm_head.weight" is HF's token table: `name` is the
// embedding's (model.embed_tokens.weight / transformer.wte.weight), loaded
// from it first and else from "lm_head.weight" (HF's tied layout omits
// lm_head.weight or stores an equal copy); export writes it only once, as
// the embedding. Errors: InvalidArgument naming `ours` when it is not a
// parameter name of that family.
StatusOr<HfTensorName> HfNameOf(ModelFamily family, const std::string& ours, bool tied = false);

// The HF config.json of `model` (what ParseModelConfig reads back as the same
// normalised model): model_type ("gpt2", "llama", or "qwen2" for Q/K/V-only
// biases), architectures, sizes, eps, RoPE theta and scaling, biases,
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
