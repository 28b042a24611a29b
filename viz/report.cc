#include "viz/report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "base/file_io.h"
#include "plan/plan.h"
#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"
#include "viz/chart.h"
#include "viz/load.h"
#include "viz/trace_reader.h"

namespace pw::viz {

Fraction Fraction::Of(int64_t num, int64_t den) {
  if (den < 0) num = -num, den = -den;
  int64_t g = std::gcd(num < 0 ? -num : num, den);
  if (g == 0) g = 1;
  return Fraction{num / g, den / g};
}

std::string Fraction::ToString() const {
  return den == 1 ? std::to_string(num) : std::to_string(num) + "/" + std::to_string(den);
}

ClosedForm ClosedFormFor(const std::string& schedule, int P, int m, int v) {
  ClosedForm c;
  const int64_t p = P, n = m, V = v;
  if (schedule == "gpipe" || schedule == "1f1b") {
    // (p-1)(T_F+T_B+T_W) of bubble: makespan 3(m+p-1), rate (p-1)/(m+p-1).
    // Steady step = makespan (docs/ALGORITHMS.md §0, def. 1 "for 1F1B and GPipe").
    c.makespan = Fraction::Of(3 * (n + p - 1), 1);
    c.steady_step = c.makespan;
    c.bubble_ratio = Fraction::Of(p - 1, n + p - 1);
    for (int64_t r = 0; r < p; ++r)
      c.peak_memory.push_back(Fraction::Of(schedule == "gpipe" ? n : std::min(p - r, n), 1));
    c.source = schedule == "gpipe" ? "GPipe: (P-1)/(m+P-1), peak m M_B (Huang et al. 2019; docs/ALGORITHMS.md §1)"
                                   : "1F1B: (P-1)/(m+P-1), rank r peak min(P-r, m) M_B (Narayanan et al. SC'21; "
                                     "docs/ALGORITHMS.md §1)";
  } else if (schedule == "interleaved-1f1b" && v >= 2 && m >= P) {
    // (v = 1 is plain 1F1B, whose warm-up is P-r-1, not this formula's.)
    // Bubble (p-1)(T_F+T_B+T_W)/v: makespan 3m + 3(p-1)/v, rate (p-1)/(vm+p-1),
    // for every m >= P (tests/schedules/closed_form_test.cc).
    c.makespan = Fraction::Of(3 * (V * n + p - 1), V);
    c.bubble_ratio = Fraction::Of(p - 1, V * n + p - 1);
    // Only when m % p == 0 (microbatches in whole rounds of p): rank r holds
    // min(2(p-r-1) + (v-1)p + 1, vm) chunk activations of M_B/v. With a
    // partial last round the warm-up differs and no closed form is given.
    if (m % P == 0)
      for (int64_t r = 0; r < p; ++r)
        c.peak_memory.push_back(Fraction::Of(std::min(2 * (p - r - 1) + (V - 1) * p + 1, V * n), V));
    c.source =
        "Interleaved 1F1B, m >= P: (P-1)/(v*m+P-1); if also m % P == 0, rank r peak "
        "min(2(P-r-1)+(v-1)P+1, v*m)/v M_B (Narayanan et al. SC'21 §2.2.2; docs/ALGORITHMS.md §1)";
  } else if (schedule == "looped-bfs" && m >= P) {
    c.makespan = Fraction::Of(3 * (V * n + p - 1), V);
    c.bubble_ratio = Fraction::Of(p - 1, V * n + p - 1);
    for (int64_t r = 0; r < p; ++r) c.peak_memory.push_back(Fraction::Of(n, 1));
    c.source = "Looped BFS, m >= P: (P-1)/(v*m+P-1), peak m M_B (Lamy-Poirier 2022, derived; docs/ALGORITHMS.md §1)";
  } else if (schedule == "zb-h1" && m >= P) {
    // Bubble (p-1)(T_F+T_B-T_W) = p-1 with unit costs: makespan 3m+p-1.
    // Worker i (1-based): (p-i+1) M_B + (i-1) M_W = p M_B when M_W = M_B.
    c.makespan = Fraction::Of(3 * n + p - 1, 1);
    c.steady_step = c.makespan;
    c.bubble_ratio = Fraction::Of(p - 1, 3 * n + p - 1);
    for (int64_t r = 0; r < p; ++r) c.peak_memory.push_back(Fraction::Of(p, 1));
    c.source =
        "ZB-H1, m >= P: (P-1)/(3m+P-1), peak (P-i+1)M_B+(i-1)M_W = P M_B (Qi et al. 2024 Table 2; "
        "docs/ALGORITHMS.md §1)";
  } else if (schedule == "zb-h2" && m >= 2 * P) {
    // Bubble (p-1)(T_F+T_B-2T_W) = 0 per steady step (post-validation).
    c.steady_step = Fraction::Of(3 * n, 1);
    for (int64_t r = 0; r < p; ++r) c.peak_memory.push_back(Fraction::Of(2 * p - 1, 1));
    c.source =
        "ZB-H2, m >= 2P: steady step 3m (zero bubble), peak (2P-2i+1)M_B+(2i-2)M_W = (2P-1) M_B "
        "(Qi et al. 2024 Table 2; docs/ALGORITHMS.md §1)";
  } else if (schedule == "zb-v" && m >= 2 * P) {
    c.steady_step = Fraction::Of(3 * n, 1);
    for (int64_t r = 0; r < p; ++r) c.peak_memory.push_back(Fraction::Of(p, 1));
    c.source =
        "ZB-V, m >= 2P: steady step 3m (zero bubble), peak P M_B on every rank (Qi et al. 2024 §6; "
        "docs/ALGORITHMS.md §1)";
  }
  return c;
}

namespace {

// x (a multiple of 1/den up to rounding) as an exact fraction.
StatusOr<Fraction> Exact(double x, int64_t den, const std::string& what) {
  double scaled = x * double(den);
  double r = std::round(scaled);
  if (std::fabs(scaled - r) > 1e-6)
    return Status::Internal(what + " = " + std::to_string(x) + " is not a multiple of 1/" + std::to_string(den));
  return Fraction::Of(static_cast<int64_t>(r), den);
}

Status FillCell(ReportCell* cell) {
  PW_ASSIGN_OR_RETURN(ScheduleInfo info, FindSchedule(cell->schedule));
  cell->display_name = info.display_name;
  if (cell->v == 0) cell->v = info.default_virtual_stages;
  const int P = cell->pp, m = cell->m, v = cell->v;
  StageCost cost;
  cost.f = cost.i = cost.w = 1.0 / v;
  StageMemory mem;
  mem.activation = mem.wstash = kUnitActivationBytes / v;
  ScheduleRequest req;
  req.schedule = info.name;
  req.pp_size = P;
  req.num_microbatches = m;
  req.virtual_stages = v;
  req.costs = UniformCosts(P * v, cost, mem);
  PW_ASSIGN_OR_RETURN(PipelineResult run, RunPipeline(req));
  const SimResult& sim = run.sim;
  PW_ASSIGN_OR_RETURN(cell->makespan, Exact(sim.makespan_s, v, "makespan"));
  PW_ASSIGN_OR_RETURN(cell->steady_step, Exact(sim.steady_step_s, v, "steady step"));
  int64_t sum_busy = 0, max_busy = 0;
  for (int r = 0; r < P; ++r) {
    PW_ASSIGN_OR_RETURN(Fraction busy, Exact(sim.per_rank[r].busy_s, v, "busy"));
    int64_t b = busy.num * (v / busy.den);  // in units of 1/v
    sum_busy += b;
    max_busy = std::max(max_busy, b);
    cell->peak_memory.push_back(Fraction::Of(sim.per_rank[r].peak_memory_bytes, kUnitActivationBytes));
  }
  const int64_t span = cell->makespan.num * (v / cell->makespan.den);  // makespan in 1/v units
  const int64_t steady = cell->steady_step.num * (v / cell->steady_step.den);
  cell->bubble_ratio = Fraction::Of(int64_t(P) * span - sum_busy, int64_t(P) * span);
  cell->steady_bubble = Fraction::Of(steady - max_busy, steady);
  return Status::Ok();
}

}  // namespace

ReportCell SimulateCell(const std::string& schedule, int pp, int m, int v) {
  ReportCell cell;
  cell.schedule = schedule;
  cell.display_name = schedule;
  cell.pp = pp;
  cell.m = m;
  cell.v = v;
  cell.status = FillCell(&cell);
  cell.closed = ClosedFormFor(schedule, pp, m, cell.v);
  return cell;
}

// RenderReport (Markdown rendering) lives in report_markdown.cc.

StatusOr<Report> BuildReport(const ReportOptions& o) {
  for (int p : o.pp_sizes)
    if (p < 1) return Status::InvalidArgument("--pp: " + std::to_string(p) + " is not >= 1");
  for (int m : o.microbatches)
    if (m < 1) return Status::InvalidArgument("--microbatches: " + std::to_string(m) + " is not >= 1");
  if (o.pp_sizes.empty() || o.microbatches.empty())
    return Status::InvalidArgument("--pp and --microbatches need at least one value each");
  std::vector<std::string> names = o.schedules.empty() ? ScheduleNames() : o.schedules;
  std::vector<ReportCell> cells;
  for (const std::string& name : names) {
    StatusOr<ScheduleInfo> info = FindSchedule(name);
    if (!info.ok()) return Status::InvalidArgument("--schedules: " + info.status().message());
    std::vector<int> vs;
    for (int v : o.virtual_stages)
      if (v >= info->min_virtual_stages && (info->max_virtual_stages == 0 || v <= info->max_virtual_stages))
        vs.push_back(v);
    if (vs.empty()) vs.push_back(info->default_virtual_stages);
    for (int v : vs) {
      if (kUnitActivationBytes % v != 0)
        return Status::InvalidArgument("--virtual-stages: " + std::to_string(v) + " must divide " +
                                       std::to_string(kUnitActivationBytes) + " (unit activation bytes)");
      for (int p : o.pp_sizes)
        for (int m : o.microbatches) cells.push_back(SimulateCell(info->name, p, m, v));
    }
  }
  return RenderReport(o, std::move(cells));
}

namespace {

// Creates `path` and its missing parents (mkdir -p), appending the ones it
// created to *created, outermost first.
Status MakeDirectories(const std::string& path, std::vector<std::string>* created) {
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    struct stat st;
    if (stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument("'" + prefix + "' exists and is not a directory");
    } else if (errno != ENOENT) {
      return Status::InvalidArgument("cannot use '" + prefix + "': " + std::strerror(errno));
    } else if (mkdir(prefix.c_str(), 0777) == 0) {
      created->push_back(prefix);
    } else if (errno != EEXIST) {
      return Status::InvalidArgument("cannot create directory '" + prefix + "': " + std::strerror(errno));
    }
    if (end == std::string::npos) return Status::Ok();
  }
}

Status WriteFilesInto(const Report& report, const std::string& dir) {
  for (const ReportFile& f : report.files) PW_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + f.name, f.text));
  return Status::Ok();
}

}  // namespace

Status WriteReportFiles(const Report& report, const std::string& dir_in) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return Status::InvalidArgument("the output directory is empty");
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument("'" + dir + "' exists and is not a directory");
    return WriteFilesInto(report, dir);
  }
  // ENOTDIR: a parent is a file; MakeDirectories names it.
  if (errno != ENOENT && errno != ENOTDIR)
    return Status::InvalidArgument("cannot use '" + dir + "': " + std::strerror(errno));
  // A new directory: parents first, then the files into a temporary sibling,
  // renamed into place once all are written.
  std::vector<std::string> created;
  const size_t slash = dir.rfind('/');
  Status result =
      slash == std::string::npos || slash == 0 ? Status::Ok() : MakeDirectories(dir.substr(0, slash), &created);
  const std::string tmp = dir + ".tmp." + std::to_string(::getpid());
  if (result.ok() && mkdir(tmp.c_str(), 0777) != 0)
    result = Status::InvalidArgument("cannot create directory '" + tmp + "': " + std::strerror(errno));
  const bool made_tmp = result.ok();
  if (result.ok()) result = WriteFilesInto(report, tmp);
  if (result.ok() && std::rename(tmp.c_str(), dir.c_str()) != 0)
    result = Status::InvalidArgument("cannot rename '" + tmp + "' to '" + dir + "': " + std::strerror(errno));
  if (!result.ok()) {  // leave nothing behind
    if (made_tmp) {
      for (const ReportFile& f : report.files) std::remove((tmp + "/" + f.name).c_str());
      rmdir(tmp.c_str());
    }
    for (auto it = created.rbegin(); it != created.rend(); ++it) rmdir(it->c_str());
  }
  return result;
}

}  // namespace pw::viz
