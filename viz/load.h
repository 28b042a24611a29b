// Loading what `pipewright show` draws: a plan file, a PyTorch CSV or a
// pipewright trace (simulated or measured), detected from the content. Plans
// and CSVs are validated and simulated by the one simulator; traces are read
// as they are.
#pragma once

#include <string>
#include <vector>

#include "base/costs.h"
#include "base/status.h"
#include "plan/plan.h"
#include "viz/timeline.h"

namespace pw::viz {

enum class InputKind { kPlan, kCsv, kTrace };

struct LoadOptions {
  // Per-stage costs for a CSV (which carries none): every stage gets this.
  StageCost csv_cost;
};

struct LoadedInput {
  InputKind kind = InputKind::kPlan;
  Timeline timeline;
  std::optional<Plan> plan;        // set for kPlan
  std::optional<Program> program;  // the lowered program drawn (kPlan, kCsv); unset for traces
  std::string plan_hash;           // PlanHash of the plan, or the trace's otherData.plan_hash
  std::vector<std::string> notes;  // warnings for the user (e.g. stale "predicted" numbers)
};

// Reads `path` and builds its timeline. Errors name the file and the place:
// NotFound if it cannot be opened; InvalidArgument for a truncated plan or
// trace ("p.json: not valid JSON (truncated or corrupt file?) ..."), a bad
// CSV token ("s.csv: row 2, column 7: bad action ..."), or a plan whose ranks
// disagree ("p.json: rank 1, action 3 '1RECV_F2': FIFO mismatch ..." or a
// deadlock with every stuck rank marked).
StatusOr<LoadedInput> LoadForShow(const std::string& path, const LoadOptions& options = {});

// The timeline of an already parsed plan (validated, then simulated).
// `source` names it in errors and the title.
StatusOr<Timeline> TimelineOfPlan(const Plan& plan, const std::string& source);

}  // namespace pw::viz
