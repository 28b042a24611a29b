// `pipewright validate FILE`: check a plan JSON or a PyTorch CSV against the
// rules of docs/PLAN_FORMAT.md; print a summary, or the failing grid.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/format.h"
#include "launch/commands.h"
#include "launch/summary.h"
#include "plan/plan.h"
#include "schedules/csv.h"
#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace pw::cli {

namespace {

struct ValidateOptions {
  std::string file;
  bool strict = false;
  int dp_size = 1;  // --dp-size: data-parallel replicas a CSV's schedule runs with
};

bool Close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }

Status ValidatePlanFile(const ValidateOptions& o, const std::string& text) {
  PW_ASSIGN_OR_RETURN(Plan plan, ParsePlan(text, o.file));
  Program program = PlanProgram(plan);
  pw::ValidateOptions vo;
  vo.rendezvous = false;
  PW_RETURN_IF_ERROR(ValidateProgram(program, vo).WithContext(o.file));
  Status rv = CheckRendezvous(program);
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(program, PlanCosts(plan)));
  // The predicted block must be what the one simulator computes.
  std::string mismatch;
  if (!Close(sim.makespan_s, plan.predicted.makespan_s))
    mismatch += " makespan_s " + std::to_string(plan.predicted.makespan_s) + " vs " + std::to_string(sim.makespan_s);
  if (!Close(sim.steady_step_s, plan.predicted.steady_step_s))
    mismatch +=
        " steady_step_s " + std::to_string(plan.predicted.steady_step_s) + " vs " + std::to_string(sim.steady_step_s);
  if (!Close(sim.bubble_ratio, plan.predicted.bubble_ratio))
    mismatch +=
        " bubble_ratio " + std::to_string(plan.predicted.bubble_ratio) + " vs " + std::to_string(sim.bubble_ratio);
  for (const auto& pr : plan.predicted.per_rank) {
    if (pr.rank < 0 || pr.rank >= plan.pp_size) continue;
    if (!Close(sim.per_rank[pr.rank].busy_s, pr.busy_s))
      mismatch += " rank " + std::to_string(pr.rank) + " busy_s " + FormatExact(pr.busy_s) + " vs " +
                  FormatExact(sim.per_rank[pr.rank].busy_s);
    if (pr.peak_memory_bytes != sim.per_rank[pr.rank].peak_memory_bytes)
      mismatch += " rank " + std::to_string(pr.rank) + " peak_memory_bytes " + std::to_string(pr.peak_memory_bytes) +
                  " vs " + std::to_string(sim.per_rank[pr.rank].peak_memory_bytes);
  }
  if (!mismatch.empty())
    return Status::InvalidArgument(o.file +
                                   ": predicted does not match the simulation (file vs simulated):" + mismatch);
  if (plan.memory_limit_bytes)
    for (int r = 0; r < plan.pp_size; ++r)
      if (sim.per_rank[r].peak_memory_bytes > *plan.memory_limit_bytes)
        return Status::Infeasible(o.file + ": rank " + std::to_string(r) + " peaks at " +
                                  std::to_string(sim.per_rank[r].peak_memory_bytes) +
                                  " bytes, over memory_limit_bytes " + std::to_string(*plan.memory_limit_bytes));
  std::string out = FormatSummary(plan.schedule, program, sim);
  std::fputs(out.c_str(), stdout);
  if (!rv.ok()) {
    if (o.strict) return rv.WithContext(o.file);
    std::printf("warning: %s\n(the plan runs only on executors that post receives early)\n", rv.message().c_str());
  }
  const Status pair_order = CheckPairOrder(program);
  if (!pair_order.ok()) {
    if (o.strict) return pair_order.WithContext(o.file);
    std::printf("warning: %s\n(the plan runs over MPI, whose messages carry their channel, but not over NCCL)\n",
                pair_order.message().c_str());
  }
  std::printf("%s: valid plan (hash %s)\n", o.file.c_str(), PlanHash(plan).c_str());
  return Status::Ok();
}

Status ValidateCsvFile(const ValidateOptions& o, const std::string& text) {
  std::vector<std::string> notes;
  CsvReadOptions ro;
  ro.dp_size = o.dp_size;
  PW_ASSIGN_OR_RETURN(Program program, ParseScheduleCsv(text, o.file, &notes, ro));
  for (const std::string& n : notes) std::fprintf(stderr, "pipewright validate: %s\n", n.c_str());
  const bool comms = program.HasComms();
  pw::ValidateOptions vo;
  vo.rendezvous = false;
  PW_RETURN_IF_ERROR(ValidateProgram(program, vo).WithContext(o.file));
  StageCosts unit = UniformCosts(program.num_stages);
  Status rv = comms ? CheckRendezvous(program) : Status::Ok();
  PipelineFailure failure;
  StatusOr<PipelineResult> run = SimulateOrder(program, unit, &failure);
  if (!run.ok())
    return run.status().WithContext(o.file +
                                    (failure.step == PipelineStep::kValidateLowered ? " (after lowering)" : ""));
  const Program& lowered = run->lowered;
  const SimResult& sim = run->sim;
  std::printf("%s: %s CSV, unit costs (F = I = W = 1 s, B = 2 s)\n", o.file.c_str(),
              comms ? "compute_comms" : "compute_only");
  // Unit costs hold one byte per stage activation: say so, as show does.
  std::fputs(FormatSummary("custom", lowered, sim, unit.memory[0].activation, "stage activations").c_str(), stdout);
  if (!rv.ok()) {
    if (o.strict) return rv.WithContext(o.file);
    std::printf("warning: %s\n(the schedule runs only on executors that post receives early)\n", rv.message().c_str());
  }
  std::printf("%s: valid schedule\n", o.file.c_str());
  return Status::Ok();
}

Status Run(const ValidateOptions& o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) return Status::NotFound("cannot open '" + o.file + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return ValidatePlanFile(o, text);
  return ValidateCsvFile(o, text);
}

}  // namespace

void RegisterValidateCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand("validate", "Check a plan file (JSON) or a PyTorch schedule CSV");
  sub->add_option("file", opts->file, "plan.json or schedule.csv")->required();
  sub->add_flag("--strict", opts->strict, "Also fail on the rendezvous (unbuffered send) check");
  sub->add_option("--dp-size", opts->dp_size,
                  "CSV only: data-parallel replicas the schedule runs with (1: REDUCE_GRAD cells are dropped with a "
                  "note; more: kept, one per stage)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  sub->callback([opts, &ctx]() {
    Status st = Run(*opts);
    if (!st.ok()) Fail(ctx, "validate", st);
  });
}

}  // namespace pw::cli
