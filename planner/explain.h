// Explanations: the ranked candidate table printed by `pipewright plan` and
// stored in the plan's extra["planner"]. Deterministic text and JSON.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "planner/planner.h"

namespace pw {

// "80.00 GiB", "512.0 MiB", "123 B" (binary units).
std::string FormatBytes(int64_t bytes);

// Parses a memory size as users write it: "80GiB", "80 GB" (10^9), "85899345920",
// "512MiB", "1.5TiB". InvalidArgument names --memory-limit.
StatusOr<int64_t> ParseBytes(const std::string& text);

// The ranked table: one row per feasible candidate (rank, schedule, v, m, b,
// recompute, predicted step time, makespan, steady step, bubble ratio, peak
// memory per rank max/min, stage sizes), then every rejected one with its
// reason (the constraint and the numbers). The chosen row is marked '*'.
std::string FormatCandidateTable(const SearchResult& result);

// {"objective": "makespan_s", "memory_limit_bytes": ..., "chosen": 0,
//  "candidates": [{"schedule", "v", "m", "micro_batch_size", "recompute",
//  "feasible", "reason", "step_s", "makespan_s", "steady_step_s",
//  "bubble_ratio", "peak_memory_bytes": [...], "stage_layers": [...]}],
//  "smallest_feasible_pp": ..., "smaller_pp_reason": ...}
nlohmann::json CandidatesToJson(const SearchResult& result);

}  // namespace pw
