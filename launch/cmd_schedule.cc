// `pipewright schedule`: generate one schedule family for (P, m, v), lower,
// validate, simulate, and print it (ascii summary + grid), export it as a
// PyTorch CSV, or write a full plan file (JSON).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/file_io.h"
#include "base/format.h"
#include "launch/commands.h"
#include "launch/flags.h"
#include "launch/summary.h"
#include "plan/plan.h"
#include "planner/optimal_milp.h"
#include "schedules/csv.h"
#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace pw::cli {

namespace {

struct ScheduleOptions {
  std::string schedule;
  int pp = 0;
  int num_microbatches = 0;
  int virtual_stages = 0;
  std::string costs = "1,1,1";
  double comm_latency_s = 0.0;
  double memory_limit = 0.0;  // units of one stage's activations; 0 = none
  double wstash_ratio = 1.0;
  int64_t activation_bytes = 1;
  std::string format = "ascii";
  std::string csv_format = "compute_only";
  std::string output;
  double time_limit_s = 60.0;  // --time-limit, `--schedule optimal` only
  bool time_limit_given = false;
};

// True for `--schedule optimal` (planner/optimal_milp.h; not a registry family).
bool IsOptimal(const std::string& name) { return name == "optimal" || name == "Optimal"; }

Status Run(const ScheduleOptions& o) {
  const bool optimal = IsOptimal(o.schedule);
  if (o.time_limit_given && !optimal)
    return Status::InvalidArgument("--time-limit applies to --schedule optimal only, not '" + o.schedule + "'");
  ScheduleInfo info;
  if (optimal) {
    info.name = "optimal";
    info.display_name = "Optimal (CBC MILP)";
    info.default_virtual_stages = 1;
  } else {
    PW_ASSIGN_OR_RETURN(info, FindSchedule(o.schedule));
  }
  PW_ASSIGN_OR_RETURN(StageCost cost, ParseCostsFlag("--costs", o.costs, /*allow_b=*/true));
  PW_RETURN_IF_ERROR(CheckNonNegativeFinite("--comm-latency", o.comm_latency_s));
  if (o.activation_bytes < 1) return Status::InvalidArgument("--activation-bytes must be >= 1");
  PW_RETURN_IF_ERROR(CheckNonNegativeFinite("--wstash-ratio", o.wstash_ratio, "activations"));
  PW_RETURN_IF_ERROR(CheckNonNegativeFinite("--memory-limit", o.memory_limit, "activations"));
  ScheduleRequest req;
  req.schedule = info.name;
  req.pp_size = o.pp;
  req.num_microbatches = o.num_microbatches;
  req.virtual_stages = o.virtual_stages > 0 ? o.virtual_stages : info.default_virtual_stages;
  StageMemory mem;
  mem.activation = o.activation_bytes;
  mem.wstash = static_cast<int64_t>(o.wstash_ratio * o.activation_bytes + 0.5);
  CommModel comm;
  comm.latency_s = o.comm_latency_s;
  if (o.pp >= 1 && req.virtual_stages >= 1) req.costs = UniformCosts(o.pp * req.virtual_stages, cost, mem, comm);
  std::optional<int64_t> limit_bytes;
  if (o.memory_limit > 0) {
    // Not rounded up: 0.5 activations is below one activation, not 1.
    const double limit = o.memory_limit * static_cast<double>(o.activation_bytes);
    limit_bytes = static_cast<int64_t>(std::floor(limit));
    // Below one byte no order fits; say so instead of "over --memory-limit 0".
    if (*limit_bytes < 1)
      return Status::InvalidArgument(
          "--memory-limit " + FormatShort(o.memory_limit) + " activations x --activation-bytes " +
          std::to_string(o.activation_bytes) + " = " + FormatShort(limit) +
          " bytes, below one byte: give at least one activation (or raise --activation-bytes)");
    req.memory_limit = limit;
  }
  // GenerateSchedule refuses an order over the limit (in bytes: --memory-limit
  // x --activation-bytes).
  PipelineFailure failure;
  StatusOr<PipelineResult> run = Status::Internal("unset");
  std::string solver_note;
  if (optimal) {
    OptimalOptions oo;
    oo.time_limit_s = o.time_limit_s;
    PW_RETURN_IF_ERROR(CheckOptimalRequest(req, oo));  // before any work
    PW_ASSIGN_OR_RETURN(OptimalResult res, SolveOptimalSchedule(req, oo));
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "optimal: objective %.9g s, simulated makespan %.9g s, best bound %.9g s, gap %.4g%% (%s); "
                  "%.2f s in CBC, %d order variables; warm start %s %.9g s\n",
                  res.objective_s, res.makespan_s, res.bound_s, 100 * res.gap,
                  res.proven_optimal       ? "proven optimal"
                  : res.time_limit_reached ? "time limit reached"
                                           : "not proven",
                  res.solve_s, res.num_binaries, res.warm_start_schedule.c_str(), res.warm_start_makespan_s);
    solver_note = buf;
    run = SimulateOrder(res.program, req.costs, &failure);
  } else {
    run = RunPipeline(req, &failure);
  }
  if (!run.ok() && failure.step == PipelineStep::kGenerate && failure.status.code() == StatusCode::kInfeasible &&
      limit_bytes && (o.activation_bytes != 1 || static_cast<double>(*limit_bytes) != o.memory_limit))
    return Status::Infeasible(failure.status.message() + " (--memory-limit " + FormatShort(o.memory_limit) +
                              " activations x --activation-bytes " + std::to_string(o.activation_bytes) + " = " +
                              std::to_string(*limit_bytes) + " bytes)");
  PW_ASSIGN_OR_RETURN(PipelineResult result, std::move(run));
  const Program& compute = result.compute;
  const Program& lowered = result.lowered;
  const SimResult& sim = result.sim;
  std::string text;
  if (o.format == "json") {
    text = PlanToJson(MakePlan(info.name, lowered, req.costs, sim, limit_bytes));
  } else if (o.format == "csv") {
    text = ScheduleToCsv(o.csv_format == "compute_comms" ? lowered : compute,
                         o.csv_format == "compute_comms" ? CsvFormat::kComputeComms : CsvFormat::kComputeOnly);
  } else {
    text =
        FormatSummary(info.display_name, lowered, sim, o.activation_bytes, "activations") + "\n" + FormatGrid(lowered);
  }
  // The solver's figures: on stdout with the ascii summary, else on stderr
  // (stdout holds the plan or CSV).
  if (!solver_note.empty()) {
    if (o.format == "ascii" && (o.output.empty() || o.output == "-"))
      text = solver_note + text;
    else
      std::fputs(solver_note.c_str(), stderr);
  }
  if (o.output.empty() || o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  return WriteFileAtomic(o.output, text);
}

}  // namespace

void RegisterScheduleCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ScheduleOptions>();
  CLI::App* sub = app.add_subcommand("schedule", "Generate, validate and simulate one schedule family");
  std::string names;
  for (const auto& n : ScheduleNames()) names += (names.empty() ? "" : ", ") + n;
  sub->add_option("--schedule", opts->schedule,
                  "Schedule family: " + names +
                      "; or optimal (certified optimum by CBC, one stage per rank, P x m <= " +
                      std::to_string(kMaxOptimalStageMicrobatches) + ")")
      ->required();
  AddPipelineSizeFlag(sub, &opts->pp, "Pipeline ranks P")->required();
  sub->add_option("--num-microbatches", opts->num_microbatches, "Microbatches m per step")->required();
  AddVirtualStagesFlag(sub, &opts->virtual_stages, "Stages per rank v (default: the family's)");
  sub->add_option("--costs", opts->costs,
                  "Seconds per microbatch for each stage: F,I,W[,B] (with v stages per rank, pass costs/v)")
      ->capture_default_str();
  sub->add_option("--comm-latency", opts->comm_latency_s, "Seconds per message between ranks")->capture_default_str();
  sub->add_option("--memory-limit", opts->memory_limit,
                  "Per-rank activation limit in units of one stage's activations (0 = none)");
  sub->add_option("--wstash-ratio", opts->wstash_ratio,
                  "Bytes held from I to W, as a fraction of a stage's activations")
      ->capture_default_str();
  sub->add_option("--activation-bytes", opts->activation_bytes, "Bytes of one stage's activations (plan files)")
      ->capture_default_str();
  sub->add_option("--format", opts->format, "ascii | csv | json (a full plan file)")
      ->check(CLI::IsMember({"ascii", "csv", "json"}))
      ->capture_default_str();
  sub->add_option("--csv-format", opts->csv_format, "compute_only | compute_comms")
      ->check(CLI::IsMember({"compute_only", "compute_comms"}))
      ->capture_default_str();
  sub->add_option("-o,--output", opts->output, "Write to FILE (atomically) instead of stdout");
  CLI::Option* time_limit =
      sub->add_option("--time-limit", opts->time_limit_s,
                      "--schedule optimal: seconds CBC may search (the best order found so far is kept)")
          ->capture_default_str();
  sub->callback([opts, &ctx, time_limit]() {
    opts->time_limit_given = time_limit->count() > 0;
    Status st = Run(*opts);
    if (!st.ok()) Fail(ctx, "schedule", st);
  });
}

}  // namespace pw::cli
