// Text generation from saved stages, in one process. Torch-free header.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "plan/plan.h"

namespace pw::exec {

struct SampleOptions {
  std::string prompt = "\n";
  int tokens = 200;           // bytes to generate
  double temperature = 0.8;   // > 0
  uint64_t seed = 42;
};

// Loads every stage of `plan` from `dir` (written by Engine::SaveStages on
// all ranks) into one process and samples `tokens` bytes after the prompt.
// Returns prompt + generated text. Errors: NotFound naming a missing stage
// file; PreflightCheck's errors for the plan's model fields.
StatusOr<std::string> SampleText(const Plan& plan, const std::string& dir, const SampleOptions& options);

}  // namespace pw::exec
