// Explanations: the ranked candidate table printed by `pipewright plan` and
// stored in the plan's extra["planner"]. Deterministic text and JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/format.h"  // FormatBytes, ParseBytes
#include "planner/planner.h"

namespace pw {

// The layout the way people say it: "TP4 x PP8 x DP4" (T, P, D; a factor
// of 1 is kept, so the three always show).
std::string LayoutName(int tp_size, int pp_size, int dp_size);

// When the chosen candidate's bubble ratio exceeds 0.5: a warning that says
// why (the memory rejections of candidates with more microbatches in flight,
// or too few microbatches for the stages) and what would change it; "" else.
// REQUIRES: result.chosen >= 0.
std::string BubbleWarning(const SearchResult& result);

// The ranked table: one row per feasible candidate (rank, schedule, v, m, b,
// recompute, predicted step time, makespan, steady step, bubble ratio, peak
// memory per rank max/min, stage sizes), then every rejected one with its
// reason (the constraint and the numbers). The chosen row is marked '*'.
std::string FormatCandidateTable(const SearchResult& result);

// Rejections counted by RejectKind (memory, request, costs, schedule), each
// with one example (the first in search order: schedule, v, m, b, recompute
// and its reason), then the smallest-P finding when there is one. What
// errors and the default `pipewright plan` output show instead of the whole
// table. Empty when nothing was rejected and no smallest P is known.
std::string FormatRejectionSummary(const SearchResult& result);

// What `pipewright plan` prints by default (a few dozen lines at most):
// the objective and limit, the rejection summary, the next `next_best`
// feasible candidates with their step time's difference to the chosen one
// (percent) and what differs, and last the chosen candidate with why it won
// (its step time, bubble, peak against the limit, split), and
// BubbleWarning's lines. REQUIRES:
// result.chosen >= 0.
std::string FormatPlanSummary(const SearchResult& result, int next_best = 4);

// {"objective": "makespan_s", "memory_limit_bytes": ..., "chosen": 0,
//  "candidates": [{"schedule", "v", "m", "micro_batch_size", "recompute",
//  "feasible", "reason", "step_s", "makespan_s", "steady_step_s",
//  "bubble_ratio", "peak_memory_bytes": [...], "stage_layers": [...]}],
//  "smallest_feasible_pp": ..., "smaller_pp_reason": ...}
nlohmann::json CandidatesToJson(const SearchResult& result);

// The --num-devices table: one row per split T x P x D (ascending T, P,
// ZeRO-1 off before on) with its
// best candidate (schedule, v, m, b, recompute, step time and its difference
// to the chosen split, bubble, all-reduce time and its exposed part, peak
// memory), or why no candidate of the split fits. The chosen row is marked '*'.
std::string FormatDeviceSplits(const DeviceSplitSearch& search);

// {"num_devices": N, "chosen": k, "splits": [{"tp_size", "pp_size", "dp_size",
//  "distributed_optimizer", "sequence_parallel", "lower_bound_s",
//  "feasible", "reason" | ("schedule", "v", "m", "micro_batch_size",
//  "recompute", "step_s", "bubble_ratio", "reduce_s", "reduce_exposed_s",
//  "peak_memory_bytes")}]}: the table above, for tools and the plan's
// "planner" section.
nlohmann::json DeviceSplitsToJson(const DeviceSplitSearch& search);

}  // namespace pw
