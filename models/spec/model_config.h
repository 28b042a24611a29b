// A transformer described by a HuggingFace `config.json`, normalised to the
// few numbers the cost formulas need (shared/design/ECOSYSTEM.md §5.1):
// {L, h, a, a_kv, d_head, f, V, s_max, tied, gated_mlp, norm}.
//
// Two families are understood, by their HF field names:
//  - GPT-2 (`model_type` "gpt2", GPT-3 configs written the same way):
//    `n_layer`, `n_embd`, `n_head`, `n_inner` (null -> 4 n_embd),
//    `n_positions`, `vocab_size`; LayerNorm, biases, learned positions, GELU
//    MLP, tied LM head, dropout (`attn_pdrop`, `resid_pdrop`, `embd_pdrop`).
//  - Llama (`model_type` "llama"): `num_hidden_layers`, `hidden_size`,
//    `intermediate_size`, `num_attention_heads`, `num_key_value_heads`
//    (null -> heads), `head_dim` (null -> hidden/heads), `vocab_size`,
//    `max_position_embeddings`, `tie_word_embeddings` (default false),
//    `attention_bias`, `mlp_bias`; RMSNorm, SwiGLU MLP, RoPE (no position
//    table), `attention_dropout` (default 0).
// The generic names (`hidden_size`, `num_hidden_layers`, ...) are accepted for
// GPT-2 too, as transformers' `attribute_map` does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace pw {

enum class ModelFamily { kGpt2, kLlama };

// "gpt2" or "llama".
const char* ModelFamilyName(ModelFamily family);

struct ModelConfig {
  std::string name;            // `_name_or_path`, else the file stem, else model_type
  ModelFamily family = ModelFamily::kGpt2;
  int num_layers = 0;          // L: decoder blocks
  int64_t hidden = 0;          // h
  int num_heads = 0;           // a
  int num_kv_heads = 0;        // a_kv (GQA); == a for MHA
  int64_t head_dim = 0;        // d_head
  int64_t ffn = 0;             // f: MLP inner width
  int64_t vocab = 0;           // V
  int64_t max_positions = 0;   // s_max
  bool tied = false;           // LM head shares the token embedding matrix
  bool gated_mlp = false;      // SwiGLU: gate, up, down (3 h*f matrices)
  bool layer_norm = true;      // LayerNorm with bias (2h params); false = RMSNorm (h params)
  bool attention_bias = false; // biases on Q, K, V and the output projection
  bool mlp_bias = false;       // biases on the MLP matrices
  bool learned_positions = false;  // a position embedding table of s_max x h (GPT-2)
  bool dropout = false;        // dropout layers present (their 1-byte masks are stored)
  double norm_eps = 1e-5;      // LayerNorm / RMSNorm epsilon (`layer_norm_epsilon` / `rms_norm_eps`)
  double rope_theta = 10000.0; // RoPE base (`rope_theta`; Llama only)
  // The config object as read (in memory only: plans hold the normalised
  // fields above, plan/plan.h; profiles read widths from it).
  nlohmann::json raw;
};

// The family `config` describes: its `model_type` when that is a string
// ("gpt2" or "llama"); otherwise (missing, null or not a string) gpt2 if a
// GPT-2 field name (`n_embd` or `n_layer`) is present, else llama. `source`
// names the file in errors. Returns InvalidArgument naming 'model_type' for
// any other type. ParseModelConfig applies exactly this rule.
StatusOr<ModelFamily> ConfigModelFamily(const nlohmann::json& config, const std::string& source);

// Parses a HF config object. `source` names the file in errors. Returns
// InvalidArgument naming the field for a missing, non-integer or
// non-positive size, hidden % heads != 0 without `head_dim`, heads %
// kv_heads != 0, or an unknown `model_type` (known: gpt2, llama; missing
// model_type is inferred from the field names, see ConfigModelFamily).
// `vocab_size` is required (no default: HF's own defaults differ per family,
// 50257 for GPT-2 and 32000 for Llama; the executor's ParseGptConfig
// supplies its byte vocabulary, 256, before calling this).
StatusOr<ModelConfig> ParseModelConfig(const nlohmann::json& config, const std::string& source);

// Loads a model config: `name_or_path` is a file path, or the name of a
// shipped config in <models dir>/configs (e.g. "llama-2-7b"). NotFound lists
// the shipped names; InvalidArgument for bad JSON (with the parser's
// position) or fields (see ParseModelConfig).
StatusOr<ModelConfig> LoadModelConfig(const std::string& name_or_path);

// Directory holding configs/ and devices/, the first of: $PW_MODELS_DIR if
// set and non-empty; <directory of the running executable>/../share/
// pipewright/models if that directory exists (an installed tree, where
// `cmake --install` puts the shipped models beside bin/); else the source
// tree's models/ directory (compiled in). Never fails; the directory may not
// exist (callers report NotFound naming it).
std::string ModelsDir();

// Names (file stems) of the *.json files in <models dir>/<subdir>, sorted.
std::vector<std::string> ShippedNames(const std::string& subdir);

// Reads a whole JSON file. NotFound if it cannot be opened; InvalidArgument
// "<path>: <parser message>" if it does not parse.
StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// Resolves `name_or_path` against <models dir>/<subdir>/<name>.json when it
// is not an existing file. NotFound names `flag` and lists shipped names.
StatusOr<std::string> ResolveShippedFile(const std::string& name_or_path, const std::string& subdir,
                                         const std::string& flag);

}  // namespace pw
