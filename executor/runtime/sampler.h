// Text generation from a checkpoint, in one process. Torch-free header.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "plan/plan.h"

namespace pw::exec {

struct SampleOptions {
  std::string prompt = "\n";
  int tokens = 200;          // tokens to generate (bytes without a tokenizer)
  double temperature = 0.8;  // > 0
  uint64_t seed = 42;
  // SentencePiece .model: encodes the prompt and decodes the output; its
  // vocabulary must equal the model's vocab_size. "" = byte tokens.
  std::string tokenizer;
};

// Loads the model of `checkpoint` (a step directory, or a --checkpoint-dir
// root: its latest complete step; executor/checkpoint/checkpoint.h) into one process
// and samples `tokens` tokens after the prompt. `plan` (optional): refused
// unless its model is the checkpoint's. Returns prompt + generated text
// (decoded by the tokenizer when given).
// Errors: NotFound (no checkpoint there, a missing layer file);
// InvalidArgument naming the file and field (a truncated or corrupt file,
// another model than --plan's); the tokenizer's (Tokenizer::Load, a
// vocabulary size other than the model's vocab_size); vocab_size < 256
// without a tokenizer.
StatusOr<std::string> SampleText(const std::string& checkpoint, const SampleOptions& options,
                                 const Plan* plan = nullptr);

}  // namespace pw::exec
