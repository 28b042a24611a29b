// The sizes pipewright refuses up front, in one place, each with its reason.
// Readers (plan, CSV, JSON files) and requests (schedule, plan) check them
// before allocating anything that grows with them, and name the limit in the
// error, so that a typo or a hostile file costs milliseconds, not the
// machine's memory. docs/PLAN_FORMAT.md lists them for users.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace pw::limits {

// Pipeline ranks P. Published pipeline depths are tens of ranks; the
// validator and simulator keep per-rank state and a P x P channel table.
inline constexpr int64_t kMaxRanks = 4096;
// Stages per rank v. Interleaving beyond a few stages per rank only adds
// messages; the generators' loops are O(v) per action.
inline constexpr int64_t kMaxVirtualStages = 64;
// Global stages S = P*v.
inline constexpr int64_t kMaxStages = 16384;
// Microbatches m per step.
inline constexpr int64_t kMaxMicrobatches = 65536;
// Stage-microbatch pairs S*m: the validator, simulator and lowering hold
// arrays of this size and plans hold about 6 actions per pair, so 2^24 pairs
// is ~10^8 actions and several GB; larger is refused.
inline constexpr int64_t kMaxStageMicrobatches = int64_t{1} << 24;
// Sequences per step (--global-batch-size): beyond this it was most likely
// given in tokens rather than sequences.
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 24;
// Nesting of a JSON document: plans, configs and traces are a few levels
// deep; deeper documents would overflow the stack when copied or destroyed.
inline constexpr int kMaxJsonDepth = 64;

// OK if 1 <= value <= limit; else InvalidArgument "<what> <value> is above
// the limit of <limit> (<reason>)" (or "must be >= 1").
Status CheckRange(const std::string& what, int64_t value, int64_t limit, const std::string& reason);

}  // namespace pw::limits
