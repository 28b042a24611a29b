// Plain-text summary of a simulated program, shared by CLI commands.
#pragma once

#include <string>

#include "schedules/program.h"
#include "schedules/simulate.h"

namespace pw::cli {

// Several lines: name, P/S/m, actions, makespan, steady step, bubble ratio,
// and per rank busy seconds and peak memory (divided by `memory_unit` bytes,
// e.g. one stage's activations; 1 prints bytes).
std::string FormatSummary(const std::string& name, const Program& program, const SimResult& sim,
                          int64_t memory_unit = 1, const std::string& unit_name = "B");

}  // namespace pw::cli
