// Text generation from saved stages, in one process. Torch-free header.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "plan/plan.h"

namespace pw::exec {

struct SampleOptions {
  std::string prompt = "\n";
  int tokens = 200;           // tokens to generate (bytes without a tokenizer)
  double temperature = 0.8;   // > 0
  uint64_t seed = 42;
  // SentencePiece .model: encodes the prompt and decodes the output; its
  // vocabulary must equal the model's vocab_size. "" = byte tokens.
  std::string tokenizer;
};

// Loads every stage of `plan` from `dir` (written by Engine::SaveStages on
// all ranks) into one process and samples `tokens` tokens after the prompt.
// Returns prompt + generated text (decoded by the tokenizer when given).
// Errors: NotFound naming a missing stage file; PreflightCheck's errors for
// the plan's model fields; the tokenizer's (Tokenizer::Load, a vocabulary
// size other than model.vocab_size); vocab_size < 256 without a tokenizer.
StatusOr<std::string> SampleText(const Plan& plan, const std::string& dir, const SampleOptions& options);

}  // namespace pw::exec
