// The report's optimality table: for small pipelines, each heuristic's
// makespan next to the certified optimum of optimal_milp.h (or CBC's bound
// when it stops at its time limit). `pipewright report --optimal-table`
// adds it (launch/cmd_report.cc); tests/planner/optimal_milp_test.cc uses
// the same cases.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "planner/optimal_milp.h"
#include "schedules/registry.h"

namespace pw {

// Per-stage costs of a table row.
enum class CostProfile {
  kUnit,  // F = I = W = 1 s, activation = wstash = 1 byte, no message time
  // The ZB paper's 1.5B model at P = 8, m = 24 (arXiv 2401.10241 Table 9:
  // T_F 18.522, T_B 18.086 (our I), T_W 9.337, T_comm 0.601 ms; memory from
  // its §2 with h = 2304, a = 24, s = 1024: M_B = 34h + 5as = 201216 and
  // M_W = 32h = 73728 bytes per unit of sb and layer, as bench/zb_paper_bench.cc).
  kZbPaper15B,
};

// "unit" or "1.5B".
const char* CostProfileName(CostProfile profile);

// One row: P ranks, m microbatches, the cost profile and the activation
// limit per rank in units of one stage's activation M_B (P: 1F1B's peak).
struct OptimalTableCase {
  int pp_size = 2;
  int num_microbatches = 2;
  CostProfile profile = CostProfile::kUnit;
  int limit_activations = 2;
};

// The schedule request of a row (schedule "optimal", v = 1; memory_limit =
// limit_activations x the stage's activation bytes).
ScheduleRequest OptimalTableRequest(const OptimalTableCase& c);

// The report's rows: P in {2, 3, 4}, m in {P, 2P}, unit and 1.5B costs,
// limits P and 2P activations (24 rows).
std::vector<OptimalTableCase> DefaultOptimalTableCases();

// The heuristics a row compares (one stage per rank, loop placement):
// gpipe, 1f1b, zb-h1, zb-h2, zb-auto.
std::vector<std::string> OptimalTableHeuristics();

// The Markdown section (title, explanation, one table; each row's solve
// time; a total). Each case is solved with `options` (its time limit per
// case). Errors: a case's own (e.g. InvalidArgument from
// CheckOptimalRequest); a heuristic that does not fit is shown as such.
StatusOr<std::string> OptimalTableMarkdown(const std::vector<OptimalTableCase>& cases, const OptimalOptions& options);

}  // namespace pw
