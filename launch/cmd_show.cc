// `pipewright show INPUT`: draw one step of a plan, a PyTorch CSV or a
// pipewright trace (simulated or measured) as a terminal timeline, SVG, HTML
// page or Chrome/Perfetto trace; with --plan, diff a measured trace against
// the simulation of the plan it ran.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "base/file_io.h"
#include "launch/commands.h"
#include "launch/summary.h"
#include "plan/plan.h"
#include "schedules/csv.h"
#include "viz/ascii_timeline.h"
#include "viz/chrome_trace.h"
#include "viz/diff.h"
#include "viz/html_page.h"
#include "viz/load.h"
#include "viz/svg_timeline.h"

namespace pw::cli {

namespace {

struct ShowOptions {
  std::string input;
  std::string format = "ascii";
  std::string output;
  std::string plan;  // diff against this plan's simulation
  std::string color = "auto";
  int width = 0;  // --width; unset: $COLUMNS or 120
  bool width_given = false;
  std::string costs = "1,1,1";
  std::string window = "auto";
  std::string csv_format = "compute_only";
};

Status Run(const ShowOptions& o) {
  if (o.width_given && (o.width < 40 || o.width > 100000))
    return Status::InvalidArgument("--width " + std::to_string(o.width) +
                                   ": terminal columns must be in [40, 100000] (unset: $COLUMNS, else 120)");
  viz::LoadOptions lo;
  PW_ASSIGN_OR_RETURN(lo.csv_cost, ParseCostsFlag("--costs", o.costs, /*allow_b=*/false));
  PW_ASSIGN_OR_RETURN(viz::LoadedInput in, viz::LoadForShow(o.input, lo));
  for (const std::string& n : in.notes)
    std::fprintf(stderr, "pipewright show: %s%s\n",
                 n.rfind("note: ", 0) == 0 || n.rfind("warning: ", 0) == 0 ? "" : "note: ", n.c_str());
  const bool to_stdout = o.output.empty() || o.output == "-";
  int width = o.width;
  if (!o.width_given) {
    const char* cols = std::getenv("COLUMNS");
    width = cols && std::atoi(cols) >= 40 ? std::atoi(cols) : 120;
  }
  bool color = o.color == "always" ||
               (o.color == "auto" && to_stdout && isatty(fileno(stdout)) && std::getenv("NO_COLOR") == nullptr);
  std::string text;
  if (!o.plan.empty()) {
    if (in.kind != viz::InputKind::kTrace)
      return Status::InvalidArgument("--plan: the diff view compares a trace (INPUT) with a plan; '" + o.input +
                                     "' is not a trace");
    PW_ASSIGN_OR_RETURN(Plan plan, ReadPlanFile(o.plan));
    PW_ASSIGN_OR_RETURN(viz::Timeline sim, viz::TimelineOfPlan(plan, o.plan));
    if (!in.plan_hash.empty() && in.plan_hash != PlanHash(plan))
      std::fprintf(stderr, "pipewright show: note: the trace was recorded for plan %s, --plan %s hashes to %s\n",
                   in.plan_hash.c_str(), o.plan.c_str(), PlanHash(plan).c_str());
    StatusOr<viz::TimelineDiff> diff = viz::DiffTimelines(in.timeline, sim);
    if (!diff.ok()) return Status::InvalidArgument(o.input + " vs --plan " + o.plan + ": " + diff.status().message());
    if (o.format == "ascii") {
      viz::AsciiOptions ao{width, color, o.window == "auto"};
      text = viz::RenderAscii(in.timeline, ao) + "\n" + viz::RenderAscii(sim, ao) + "\n" + viz::RenderDiffText(*diff);
    } else if (o.format == "html") {
      text = viz::RenderDiffHtml(in.timeline, sim, *diff);
    } else {
      return Status::InvalidArgument("--format " + o.format + ": the diff view (--plan) is ascii or html");
    }
  } else if (o.format == "csv") {
    if (!in.program)
      return Status::InvalidArgument("--format csv: '" + o.input +
                                     "' is a trace; a PyTorch CSV is written from a plan file or a CSV");
    text = ScheduleToCsv(*in.program,
                         o.csv_format == "compute_comms" ? CsvFormat::kComputeComms : CsvFormat::kComputeOnly);
  } else if (o.format == "ascii") {
    text = viz::RenderAscii(in.timeline, viz::AsciiOptions{width, color, o.window == "auto"});
  } else if (o.format == "svg") {
    viz::SvgOptions so;
    so.window = o.window == "auto";
    so.highlight = viz::HighlightOf(in.timeline, viz::CriticalPath(in.timeline));
    text = viz::SvgDocument(in.timeline, so);
  } else if (o.format == "html") {
    viz::SvgOptions so;
    so.window = o.window == "auto";
    text = viz::RenderHtmlPage(in.timeline, so);
  } else {
    text = viz::ChromeTraceJson(in.timeline, in.plan_hash);
  }
  if (to_stdout) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  return WriteFileAtomic(o.output, text);
}

}  // namespace

void RegisterShowCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ShowOptions>();
  CLI::App* sub = app.add_subcommand(
      "show", "Draw one step of a plan, PyTorch CSV or trace (terminal, SVG, HTML, Chrome/Perfetto trace)");
  sub->add_option("input", opts->input,
                  "A plan file (pipewright plan/schedule --format json), a PyTorch schedule CSV, or a pipewright "
                  "trace (show --format trace, run --trace)")
      ->required();
  sub->add_option("--format", opts->format,
                  "ascii (terminal) | svg | html (self-contained page) | trace (Chrome/Perfetto JSON, µs) | csv "
                  "(PyTorch schedule CSV, see --csv-format)")
      ->check(CLI::IsMember({"ascii", "svg", "html", "trace", "csv"}))
      ->capture_default_str();
  sub->add_option("-o,--output", opts->output, "Write to FILE (atomically) instead of stdout");
  sub->add_option("--plan", opts->plan,
                  "Diff view: INPUT is a measured trace, PLAN the plan it ran (measured vs simulated per action, "
                  "per-rank bubble, critical paths); --format ascii or html");
  sub->add_option("--color", opts->color, "auto (when stdout is a terminal) | always | never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  CLI::Option* width =
      sub->add_option("--width", opts->width, "Terminal columns for ascii, 40 to 100000 (default $COLUMNS or 120)");
  sub->add_option("--window", opts->window,
                  "auto: a long step (many microbatches) is drawn as warm-up + 2 steady-state periods, a marked "
                  "compressed middle, 2 periods + cool-down | all: the whole step (ascii, svg, html)")
      ->check(CLI::IsMember({"auto", "all"}))
      ->capture_default_str();
  sub->add_option("--csv-format", opts->csv_format,
                  "With --format csv: compute_only (torchtitan's pipeline_parallel_schedule_csv) | compute_comms "
                  "(PyTorch's _load_csv(format=\"compute_comms\"))")
      ->check(CLI::IsMember({"compute_only", "compute_comms"}))
      ->capture_default_str();
  sub->add_option("--costs", opts->costs, "F,I,W seconds per microbatch of every stage, for a CSV input")
      ->capture_default_str();
  sub->callback([opts, &ctx, width]() {
    opts->width_given = width->count() > 0;
    Status st = Run(*opts);
    if (!st.ok()) Fail(ctx, "show", st);
  });
}

}  // namespace pw::cli
