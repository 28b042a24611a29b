// Plain-text summary of a simulated program, shared by CLI commands.
#pragma once

#include <string>

#include "base/costs.h"
#include "base/status.h"
#include "schedules/program.h"
#include "schedules/simulate.h"

namespace pw::cli {

// Several lines: name, P/S/m, actions, makespan, steady step, bubble ratio,
// and per rank busy seconds and peak memory (divided by `memory_unit` bytes,
// e.g. one stage's activations; 1 prints bytes).
std::string FormatSummary(const std::string& name, const Program& program, const SimResult& sim,
                          int64_t memory_unit = 1, const std::string& unit_name = "B");

// `flag` (e.g. "--costs") as "F,I,W" seconds per microbatch, or "F,I,W,B"
// when `allow_b`. Each item must be a finite number >= 0; InvalidArgument
// names the flag, the item and the whole value.
StatusOr<StageCost> ParseCostsFlag(const std::string& flag, const std::string& text, bool allow_b);

// InvalidArgument naming `flag` and `x` unless x is finite and >= 0.
Status CheckNonNegativeFinite(const std::string& flag, double x, const std::string& what = "seconds");

}  // namespace pw::cli
