// The next token from a model's logits, for `pipewright generate`: greedy,
// or sampling after Hugging Face transformers' logits warpers, applied in
// transformers' order (GenerationMixin._get_logits_processor:
// TemperatureLogitsWarper, then TopKLogitsWarper, then TopPLogitsWarper,
// each with min_tokens_to_keep = 1). Torch-free; float64 throughout.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "base/status.h"

namespace pw::exec {

struct SamplingParams {
  // 0 = greedy (the first largest logit; transformers' do_sample=False:
  // top_k and top_p then play no part); > 0: logits / temperature.
  double temperature = 0.8;
  // Keep the top_k largest logits (those equal to the k-th largest too, as
  // transformers: scores < k-th value are removed); 0 = off.
  int top_k = 0;
  // Nucleus (Holtzman et al. 2019, "The Curious Case of Neural Text
  // Degeneration"): sorted ascending, tokens whose cumulative probability
  // is <= 1 - top_p are removed, the most likely token always kept;
  // 1 = off, 0 = only the most likely token. In [0, 1] (transformers'
  // range). Among equal logits the lower id counts as the more likely.
  double top_p = 1.0;
};

// Checks `p` for a model of `vocab` ids. Errors: InvalidArgument naming the
// flag and value: --temperature not finite or < 0; --top-k < 0 or > vocab;
// --top-p not in [0, 1].
Status ValidateSampling(const SamplingParams& p, int64_t vocab);

// Applies temperature, top-k and top-p (in that order) to `logits` (V) in
// place: removed tokens become -infinity. REQUIRES: p.temperature > 0,
// ValidateSampling(p, V) ok.
void WarpLogits(const SamplingParams& p, std::vector<double>& logits);

// The next token id: temperature 0, the first index of the largest logit;
// else WarpLogits, softmax, and the first id whose cumulative probability
// exceeds one uniform draw u in [0, 1) from `rng` (one draw per token, so
// a seed fixes the whole sequence). REQUIRES: logits non-empty, p valid.
int64_t ChooseToken(const SamplingParams& p, std::vector<double> logits, std::mt19937_64& rng);

}  // namespace pw::exec
