#include "planner/optimal_table.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "base/format.h"
#include "schedules/pipeline.h"

namespace pw {

const char* CostProfileName(CostProfile profile) { return profile == CostProfile::kUnit ? "unit" : "1.5B"; }

ScheduleRequest OptimalTableRequest(const OptimalTableCase& c) {
  ScheduleRequest r;
  r.schedule = "optimal";
  r.pp_size = c.pp_size;
  r.num_microbatches = c.num_microbatches;
  r.virtual_stages = 1;
  StageCost cost;
  StageMemory mem;
  CommModel comm;
  if (c.profile == CostProfile::kZbPaper15B) {
    cost.f = 18.522e-3;
    cost.i = 18.086e-3;
    cost.w = 9.337e-3;
    comm.latency_s = 0.601e-3;
    const double h = 2304, a = 24, s = 1024;
    mem.activation = std::llround(34 * h + 5 * a * s);
    mem.wstash = std::llround(32 * h);
  }
  r.costs = UniformCosts(c.pp_size, cost, mem, comm);
  r.memory_limit = static_cast<double>(c.limit_activations) * static_cast<double>(mem.activation);
  return r;
}

std::vector<OptimalTableCase> DefaultOptimalTableCases() {
  std::vector<OptimalTableCase> cases;
  for (CostProfile profile : {CostProfile::kUnit, CostProfile::kZbPaper15B})
    for (int P : {2, 3, 4})
      for (int m : {P, 2 * P})
        for (int k : {1, 2}) cases.push_back({P, m, profile, k * P});
  return cases;
}

std::vector<std::string> OptimalTableHeuristics() { return {"gpipe", "1f1b", "zb-h1", "zb-h2", "zb-auto"}; }

StatusOr<std::string> OptimalTableMarkdown(const std::vector<OptimalTableCase>& cases, const OptimalOptions& options) {
  const std::vector<std::string> heuristics = OptimalTableHeuristics();
  std::string s = "## Heuristics against the certified optimum\n\n";
  s += StrFormat(
      "For small pipelines `pipewright schedule --schedule optimal` solves the exact scheduling problem "
      "(one stage per rank, backward split into I and W, the memory limit; docs/ALGORITHMS.md, \"Certified "
      "optima\") with CBC, %g s at most per row. Each cell is a heuristic's simulated makespan and, in "
      "brackets, how much longer it is than the optimum. Where CBC stopped at its time limit the optimum "
      "is not proven: the gap is then taken to CBC's lower bound and marked with \\*. \"over limit\": the "
      "heuristic's order does not fit the memory limit. Costs: unit (F = I = W = 1 s, makespan in s) and "
      "the ZB paper's 1.5B profile (F 18.522, I 18.086, W 9.337, message 0.601 ms; makespan in ms); limits "
      "in activations M_B of one stage per rank.\n\n",
      options.time_limit_s);
  s += "| costs | P | m | limit | optimum | bound | solve (s) |";
  for (const auto& h : heuristics) s += " " + h + " |";
  s += "\n|---|---|---|---|---|---|---|";
  for (size_t i = 0; i < heuristics.size(); ++i) s += "---|";
  s += "\n";
  double total = 0;
  int proven = 0;
  for (const OptimalTableCase& c : cases) {
    ScheduleRequest req = OptimalTableRequest(c);
    PW_ASSIGN_OR_RETURN(OptimalResult res, SolveOptimalSchedule(req, options));
    total += res.solve_s;
    if (res.proven_optimal) ++proven;
    const double scale = c.profile == CostProfile::kUnit ? 1.0 : 1e3;
    const char* num = c.profile == CostProfile::kUnit ? "%.4g" : "%.3f";
    s += std::string("| ") + CostProfileName(c.profile) + " | " + std::to_string(c.pp_size) + " | " +
         std::to_string(c.num_microbatches) + " | " + std::to_string(c.limit_activations) + " M_B | " +
         StrFormat(num, res.makespan_s * scale) + (res.proven_optimal ? "" : "\\*") + " | " +
         StrFormat(num, res.bound_s * scale) + " | " + StrFormat("%.2f", res.solve_s) + " |";
    const double reference = res.proven_optimal ? res.makespan_s : res.bound_s;
    for (const auto& h : heuristics) {
      ScheduleRequest hr = req;
      hr.schedule = h;
      hr.virtual_stages = 0;
      StatusOr<PipelineResult> run = RunPipeline(hr);
      if (!run.ok()) {
        s += run.status().code() == StatusCode::kInfeasible ? " over limit |" : " refused |";
        continue;
      }
      const double gap = (run->sim.makespan_s - reference) / reference;
      s += " " + StrFormat(num, run->sim.makespan_s * scale) + " (+" + StrFormat("%.2f", 100 * gap + 0.0) + "%" +
           (res.proven_optimal ? "" : "\\*") + ") |";
    }
    s += "\n";
  }
  s += StrFormat("\nTotal solve time %.2f s", total) + "; " + std::to_string(proven) + " of " +
       std::to_string(cases.size()) + " rows proven optimal.\n";
  return s;
}

}  // namespace pw
