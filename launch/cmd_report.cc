// `pipewright report`: the bubble/memory benchmark report (Markdown + SVG
// charts) of every registered schedule family x P x m (x v) with unit costs
// next to the closed forms; a section for a real model on a shipped device
// (through the planner); and measured vs simulated for given traces.
#include <cmath>
#include <cstdio>

#include "launch/commands.h"
#include "models/spec/device.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/optimal_table.h"
#include "planner/planner.h"
#include "schedules/registry.h"
#include "viz/report.h"

namespace pw::cli {

namespace {

struct ReportCliOptions {
  std::string output_dir = "bench/results";
  std::vector<std::string> schedules;
  std::vector<int> pp = {4, 8, 16};
  std::vector<int> microbatches = {8, 16, 32, 64};
  std::vector<int> virtual_stages;
  std::string model = "llama-3-8b";  // "" or "none" = skip the real-model section
  std::string device = "H100-80GB";
  int model_pp = 8;
  int model_microbatches = 32;
  int64_t model_seq_length = 4096;
  std::vector<std::string> traces;
  std::vector<std::string> plans;
  bool optimal_table = false;       // --optimal-table
  double optimal_time_limit_s = 5;  // --optimal-time-limit, per row
  std::string command_line;
};

std::string Gib(int64_t b) { return StrFormat("%.2f GiB", double(b) / (1024.0 * 1024 * 1024)); }

// The real-model section: the planner's candidates (one per schedule family,
// its best v) for `model` on `device`, with micro-batch size 1, no recompute,
// under the device's memory. Every number is the planner's simulation.
StatusOr<std::string> ModelSection(const ReportCliOptions& o) {
  PlannerModel pm;
  PW_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(o.model));
  PW_ASSIGN_OR_RETURN(DeviceSpec device, LoadDeviceSpec(o.device));
  pm.config = config;
  pm.device = device;
  PlannerOptions po;
  po.pp_size = o.model_pp;
  po.num_microbatches = o.model_microbatches;
  po.micro_batch_size = 1;
  po.seq_length = o.model_seq_length;
  po.recompute = Recompute::kNone;
  po.find_min_pp = false;
  PW_ASSIGN_OR_RETURN(SearchResult res, EvaluateCandidates(pm, po));
  std::string s = "## A real model: " + o.model + " on " + device.name + "\n\n";
  s += StrFormat(
      "`pipewright plan` candidates for P = %d, m = %d, micro-batch size 1, sequence length %lld, no "
      "recompute, memory limit %s (the device). Costs come from the model's FLOPs and bytes on the device "
      "(models/, planner/cost_model.h); every number below is the planner's simulation. The best v per "
      "family is shown; rejected candidates keep the planner's reason.\n\n",
      o.model_pp, o.model_microbatches, static_cast<long long>(o.model_seq_length),
      res.memory_limit_bytes ? Gib(*res.memory_limit_bytes).c_str() : "none");
  s += "| schedule | v | fits | makespan | steady step | bubble | peak memory max (rank) | note |\n"
       "|---|---|---|---|---|---|---|---|\n";
  std::vector<std::string> seen;
  for (const Candidate& c : res.candidates) {
    if (std::find(seen.begin(), seen.end(), c.schedule) != seen.end()) continue;
    seen.push_back(c.schedule);
    int worst = 0;
    for (size_t r = 0; r < c.peak_bytes.size(); ++r)
      if (c.peak_bytes[r] > c.peak_bytes[worst]) worst = static_cast<int>(r);
    std::string reason = c.reason;
    for (char& ch : reason)
      if (ch == '\n' || ch == '|') ch = ' ';
    if (reason.size() > 160) reason = reason.substr(0, 157) + "...";
    s += "| " + c.schedule + " | " + std::to_string(c.virtual_stages) + " | " + (c.feasible ? "yes" : "no") + " | " +
         (c.simulated ? viz::FormatSeconds(c.makespan_s) : "–") + " | " +
         (c.simulated ? viz::FormatSeconds(c.steady_step_s) : "–") + " | " +
         (c.simulated ? StrFormat("%.4f", c.bubble_ratio) : "–") + " | " +
         (c.simulated && !c.peak_bytes.empty() ? Gib(c.peak_bytes[worst]) + " (" + std::to_string(worst) + ")" : "–") +
         " | " + reason + " |\n";
  }
  if (res.chosen >= 0)
    s += "\nThe planner's choice: **" + res.candidates[res.chosen].schedule +
         "**, v = " + std::to_string(res.candidates[res.chosen].virtual_stages) + ".\n";
  return s;
}

Status Run(const ReportCliOptions& o) {
  viz::ReportOptions ro;
  ro.schedules = o.schedules;
  ro.pp_sizes = o.pp;
  ro.microbatches = o.microbatches;
  ro.virtual_stages = o.virtual_stages;
  ro.command_line = o.command_line;
  if (o.traces.size() != o.plans.size())
    return Status::InvalidArgument("--trace and --plan come in pairs: got " + std::to_string(o.traces.size()) +
                                   " traces and " + std::to_string(o.plans.size()) + " plans");
  for (size_t i = 0; i < o.traces.size(); ++i) ro.measured.push_back({o.traces[i], o.plans[i]});
  if (!o.model.empty() && o.model != "none") {
    StatusOr<std::string> sec = ModelSection(o);
    if (!sec.ok()) return sec.status().WithContext("--model " + o.model + " --device " + o.device);
    ro.extra_sections.push_back(*sec);
  }
  if (o.optimal_table) {
    OptimalOptions oo;
    oo.time_limit_s = o.optimal_time_limit_s;
    if (!std::isfinite(oo.time_limit_s) || oo.time_limit_s <= 0)  // before any work
      return Status::InvalidArgument("--optimal-time-limit must be a positive number of seconds");
    StatusOr<std::string> sec = OptimalTableMarkdown(DefaultOptimalTableCases(), oo);
    if (!sec.ok()) return sec.status().WithContext("--optimal-table");
    ro.extra_sections.push_back(*sec);
  }
  PW_ASSIGN_OR_RETURN(viz::Report rep, viz::BuildReport(ro));
  // Charts first, the Markdown that links them last; each file atomically; a
  // missing directory is created (with its parents) only once all are written.
  PW_RETURN_IF_ERROR(viz::WriteReportFiles(rep, o.output_dir).WithContext("-o/--output-dir " + o.output_dir));
  int agree = 0, failed = 0;
  for (const viz::ReportCell& c : rep.cells) {
    if (!c.status.ok())
      ++failed;
    else if (c.closed.bubble_ratio && c.bubble_ratio == *c.closed.bubble_ratio)
      ++agree;
  }
  std::printf("wrote %zu files to %s (%zu cells, %d failed; %d closed-form bubble ratios agree exactly)\n",
              rep.files.size(), o.output_dir.c_str(), rep.cells.size(), failed, agree);
  return Status::Ok();
}

}  // namespace

void RegisterReportCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ReportCliOptions>();
  CLI::App* sub = app.add_subcommand("report", "Bubble/memory benchmark report: Markdown + SVG charts");
  sub->add_option("-o,--output-dir", opts->output_dir,
                  "Directory for schedule_report.md and the charts (created, with its parents, if missing)")
      ->capture_default_str();
  sub->add_option("--schedules", opts->schedules, "Families to sweep (default: every registered one)")->delimiter(',');
  sub->add_option("--pp", opts->pp, "Pipeline sizes P")->delimiter(',')->capture_default_str();
  sub->add_option("--microbatches", opts->microbatches, "Microbatch counts m")->delimiter(',')->capture_default_str();
  sub->add_option("--virtual-stages", opts->virtual_stages,
                  "Stages per rank v to sweep where a family allows them (default: each family's)")
      ->delimiter(',');
  sub->add_option("--model", opts->model, "Model for the real-model section (models/configs name; 'none' skips)")
      ->capture_default_str();
  sub->add_option("--device", opts->device, "Device for the real-model section (models/devices name)")
      ->capture_default_str();
  sub->add_option("--model-pp", opts->model_pp, "P for the real-model section")->capture_default_str();
  sub->add_option("--model-microbatches", opts->model_microbatches, "m for the real-model section")
      ->capture_default_str();
  sub->add_option("--model-seq-length", opts->model_seq_length, "Sequence length for the real-model section")
      ->capture_default_str();
  sub->add_option("--trace", opts->traces, "Measured trace (pipewright run --trace); pairs with --plan");
  sub->add_option("--plan", opts->plans, "The plan each --trace ran, in the same order");
  sub->add_flag("--optimal-table", opts->optimal_table,
                "Add the table of heuristics against the certified optimum (CBC; P 2-4, 24 rows, up to "
                "--optimal-time-limit seconds each)");
  sub->add_option("--optimal-time-limit", opts->optimal_time_limit_s, "Seconds CBC may search per optimum-table row")
      ->capture_default_str();
  sub->callback([opts, &ctx, sub]() {
    std::string cmd = "pipewright report";
    // Record only what changes the numbers (not the output directory).
    for (const auto* opt : sub->get_options()) {
      if (opt->count() == 0 || opt->get_name() == "--help" || opt->check_name("-o")) continue;
      std::string vals;
      for (const auto& r : opt->results()) vals += (vals.empty() ? "" : ",") + r;
      cmd += " " + opt->get_name() + " " + vals;
    }
    opts->command_line = cmd;
    Status st = Run(*opts);
    if (!st.ok()) Fail(ctx, "report", st);
  });
}

}  // namespace pw::cli
