// The bubble/memory benchmark report: for each registered schedule family x
// P x m (x v), generate -> lower -> validate -> simulate (the one simulator)
// with unit costs, and put makespan, steady step, bubble ratio and per-rank
// peak memory next to the closed form where docs/ALGORITHMS.md §1 gives one.
//
// Unit costs, per RANK: a rank's model share costs F = I = W = 1 s (B = 2 s)
// and holds M_B of activations (and M_W = M_B until its W); with v stages per
// rank each stage costs 1/v s and holds M_B / v (kUnitActivationBytes / v
// bytes), so numbers are comparable across v. No communication time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "viz/diff.h"

namespace pw::viz {

// Bytes that stand for one M_B (one rank's share of one microbatch's
// activations) in the unit-cost sweep; divisible by every v up to 4 and 6.
inline constexpr int64_t kUnitActivationBytes = 12;

// An exact non-negative rational, kept reduced.
struct Fraction {
  int64_t num = 0;
  int64_t den = 1;
  static Fraction Of(int64_t num, int64_t den);
  double value() const { return double(num) / double(den); }
  std::string ToString() const;  // "3/11", "27", "5/2"
  friend bool operator==(const Fraction& a, const Fraction& b) { return a.num == b.num && a.den == b.den; }
  friend bool operator!=(const Fraction& a, const Fraction& b) { return !(a == b); }
};

// Closed forms (docs/ALGORITHMS.md §1) for unit costs; each part only where the
// source gives one and its conditions hold. Times in seconds, memory in M_B.
struct ClosedForm {
  std::optional<Fraction> makespan;
  std::optional<Fraction> steady_step;
  std::optional<Fraction> bubble_ratio;  // rule 8 (global) definition
  std::vector<Fraction> peak_memory;     // per rank; empty = none
  std::string source;                    // formula and where it comes from
};

// The closed form of `schedule` at (P, m, v); all parts empty if none.
ClosedForm ClosedFormFor(const std::string& schedule, int pp, int m, int v);

// One simulated cell of the sweep, exact (unit costs keep every time a
// multiple of 1/v and every byte count a multiple of M_B / v).
struct ReportCell {
  std::string schedule;      // canonical name
  std::string display_name;  // "ZB-H1"
  int pp = 0, m = 0, v = 0;
  Status status;  // not OK: the generator or a check failed (recorded, not fatal)
  Fraction makespan, steady_step, bubble_ratio;
  Fraction steady_bubble;             // ZB paper's definition: 1 - busy / steady step
  std::vector<Fraction> peak_memory;  // per rank, in M_B
  ClosedForm closed;
};

// Simulates one cell (never aborts: failures land in cell.status).
ReportCell SimulateCell(const std::string& schedule, int pp, int m, int v);

struct MeasuredRun {
  std::string trace_path;
  std::string plan_path;
};

struct ReportOptions {
  std::vector<std::string> schedules;  // empty = every registered family
  std::vector<int> pp_sizes = {4, 8, 16};
  std::vector<int> microbatches = {8, 16, 32, 64};
  std::vector<int> virtual_stages;    // empty = each family's default v
  std::vector<MeasuredRun> measured;  // measured vs simulated section
  // Extra Markdown sections appended in order (e.g. the real-model section,
  // built by the CLI from the planner).
  std::vector<std::string> extra_sections;
  std::string command_line;  // recorded in the report header
};

struct ReportFile {
  std::string name;  // file name inside the output directory
  std::string text;
};

struct Report {
  std::vector<ReportCell> cells;
  std::vector<ReportFile> files;  // "schedule_report.md" last, after its charts
};

// Runs the sweep and renders the Markdown and charts. Errors only for bad
// options (InvalidArgument naming --pp, --microbatches, --schedules,
// --virtual-stages) or unreadable measured inputs (naming the file); a
// schedule that fails for one cell is recorded in that cell.
StatusOr<Report> BuildReport(const ReportOptions& options);

// Renders already simulated cells (BuildReport's second half): the Markdown
// and charts. Failed cells are drawn as "failed" in the tables, left out of
// the charts and listed under "## Failures". Errors only for unreadable
// measured inputs.
StatusOr<Report> RenderReport(const ReportOptions& options, std::vector<ReportCell> cells);

// Writes report.files into directory `dir`, each file atomically (temp file +
// rename), in order (charts before the Markdown that links them). An existing
// `dir` keeps its other files. A missing `dir` is created with its missing
// parents: the files go into a fresh sibling directory "DIR.tmp.PID" that is
// renamed to `dir` at the end, so a failed write leaves neither `dir` nor the
// parents it created. Errors: InvalidArgument naming the path when `dir` is
// empty, when `dir` or a parent exists but is not a directory, or when a
// directory or file cannot be created (with the system's reason).
Status WriteReportFiles(const Report& report, const std::string& dir);

}  // namespace pw::viz
