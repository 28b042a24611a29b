#include "viz/load.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "schedules/csv.h"
#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"
#include "viz/trace_reader.h"

namespace pw::viz {

namespace {

std::string DisplayName(const std::string& schedule) {
  StatusOr<ScheduleInfo> info = FindSchedule(schedule);
  return info.ok() ? info->display_name : schedule;
}

std::string BaseName(const std::string& path) {
  size_t k = path.find_last_of('/');
  return k == std::string::npos ? path : path.substr(k + 1);
}

}  // namespace

StatusOr<Timeline> TimelineOfPlan(const Plan& plan, const std::string& source) {
  Program program = PlanProgram(plan);
  StageCosts costs = PlanCosts(plan);
  // Rule 6b is not required to draw a plan: imported plans that fail only the
  // rendezvous check still run on executors that post receives early.
  ValidateOptions vo;
  vo.rendezvous = false;
  Status st = ValidateProgram(program, vo);
  if (!st.ok()) return Status(st.code(), source + ": " + st.message());
  StatusOr<SimResult> sim = Simulate(program, costs);
  if (!sim.ok()) return Status(sim.status().code(), source + ": " + sim.status().message());
  Timeline t = TimelineFromSimulation(program, costs, *sim, DisplayName(plan.schedule) + " (" + BaseName(source) + ")",
                                      plan.schedule, plan.memory_limit_bytes);
  t.static_memory = StaticMemoryOf(plan);
  t.tp_size = plan.tp_size;
  return t;
}

StatusOr<LoadedInput> LoadForShow(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  LoadedInput out;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Status::InvalidArgument(path + ": empty file");
  if (LooksLikeTrace(text)) {
    out.kind = InputKind::kTrace;
    TraceInfo info;
    PW_ASSIGN_OR_RETURN(out.timeline, ParseTrace(text, path, &info));
    out.plan_hash = info.plan_hash;
    return out;
  }
  if (text[first] == '{') {
    out.kind = InputKind::kPlan;
    PW_ASSIGN_OR_RETURN(Plan plan, ParsePlan(text, path));
    PW_ASSIGN_OR_RETURN(out.timeline, TimelineOfPlan(plan, path));
    const double want = plan.predicted.makespan_s, got = out.timeline.makespan_s;
    if (std::fabs(want - got) > 1e-9 * std::max(1.0, std::fabs(got)))
      out.notes.push_back(path + ": predicted.makespan_s is " + std::to_string(want) +
                          " but simulating the plan gives " + std::to_string(got) +
                          " (the file's predictions are stale; showing the simulation)");
    out.plan_hash = PlanHash(plan);
    out.program = PlanProgram(plan);
    out.plan = std::move(plan);
    return out;
  }
  out.kind = InputKind::kCsv;
  std::vector<std::string> csv_notes;
  PW_ASSIGN_OR_RETURN(Program program, ParseScheduleCsv(text, path, &csv_notes));
  for (std::string& n : csv_notes) out.notes.push_back(std::move(n));
  StageCosts costs = UniformCosts(program.num_stages, options.csv_cost);
  StatusOr<PipelineResult> run = SimulateOrder(program, costs);
  if (!run.ok()) return run.status().WithContext(path);
  out.timeline = TimelineFromSimulation(run->lowered, costs, run->sim, "imported schedule (" + BaseName(path) + ")",
                                        "custom", std::nullopt);
  out.program = std::move(run->lowered);
  return out;
}

}  // namespace pw::viz
