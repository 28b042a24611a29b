// Text generation in one process, on the full model: from a checkpoint
// (`run --save`, `--checkpoint-dir`) or a Hugging Face directory
// (config.json + safetensors). Keys and values are cached (models/torch
// KvCache): the prompt goes through the model once, then one new token per
// forward. Torch-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "plan/plan.h"

namespace pw::exec {

struct SampleOptions {
  std::string prompt = "\n";
  // The most new tokens (bytes without a tokenizer); fewer when an
  // end-of-text id comes first.
  int tokens = 200;
  // Next-token choice (logits.h SamplingParams): temperature 0 = greedy;
  // then top-k (0 = off) and top-p (1 = off), in that order.
  double temperature = 0.8;
  int top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 42;
  // SentencePiece .model, HF tokenizer.json or a directory holding one:
  // encodes the prompt and decodes the output. "" = byte tokens, or the
  // --init-from directory's tokenizer.json when it has one.
  std::string tokenizer;
  // false: every token recomputes the whole window (the model's forward of
  // training), for comparison (bench/generate_bench.sh).
  bool kv_cache = true;
};

// What Generate produced.
struct Generation {
  std::string text;                 // prompt + generated text (decoded together; bytes without a tokenizer)
  std::vector<int64_t> prompt_ids;  // the prompt's ids as the model saw them
  std::vector<int64_t> new_ids;     // generated ids; the last is the end-of-text id when `stopped`
  bool stopped = false;             // ended at an end-of-text id before `tokens`
  std::vector<int64_t> eos_ids;     // the end-of-text ids it stops at (may be empty)
  double prompt_seconds = 0;        // wall time of the prompt's forward (the first new token's logits)
  double decode_seconds = 0;        // wall time of the remaining tokens
};

// Loads a model into one process and generates up to options.tokens tokens
// after the prompt. The model comes from exactly one of `checkpoint` (a step
// directory, or a --checkpoint-dir root: its latest complete step;
// executor/checkpoint/checkpoint.h; its dtype) or `hf_dir` (a Hugging Face
// directory: config.json and model.safetensors or an index of shards,
// computed in float32; its tokenizer.json is used when options.tokenizer is
// empty). `plan` (optional): refused unless its model is the checkpoint's.
// Stops after an end-of-text id: hf_dir's generation_config.json
// eos_token_id, else its config.json's (an id or a list), else the
// tokenizer's end_of_text_id(). Context: the model's max positions; when
// prompt + generated ids outgrow it, the cache restarts from the last half
// of them (the no-cache path slides the window one token at a time).
// Deterministic for a seed. Errors (all before the weights are read unless
// said): InvalidArgument naming the flag (--tokens < 1, --temperature,
// --top-k, --top-p out of range: logits.h ValidateSampling; both or neither
// of checkpoint and hf_dir); NotFound / InvalidArgument naming the file and
// field (no checkpoint or config.json there, a truncated or corrupt file,
// another model than --plan's, a missing or misshapen tensor); the
// tokenizer's (Tokenizer::Load; a vocabulary other than the checkpoint's
// vocab_size, or larger than the HF model's); without a tokenizer, a
// vocab_size other than 256 (byte tokens), naming --tokenizer as the fix;
// ComputeError from LibTorch.
StatusOr<Generation> Generate(const std::string& checkpoint, const std::string& hf_dir, const SampleOptions& options,
                              const Plan* plan = nullptr);

// Generate from a checkpoint; returns Generation::text (`run --sample`).
StatusOr<std::string> SampleText(const std::string& checkpoint, const SampleOptions& options,
                                 const Plan* plan = nullptr);

}  // namespace pw::exec
