// Markdown + SVG rendering of the report (report.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "plan/plan.h"
#include "viz/chart.h"
#include "viz/load.h"
#include "viz/report.h"
#include "viz/trace_reader.h"

namespace pw::viz {

namespace {

std::string Label(const ReportCell& c) {
  return c.v > 1 ? c.display_name + " (v=" + std::to_string(c.v) + ")" : c.display_name;
}

std::string Num(const Fraction& f) { return StrFormat("%.6g", f.value()); }
std::string Ratio(const Fraction& f) { return StrFormat("%.4f", f.value()); }

// "27 ✓", "26 ✗ (closed 27)", or "" when no closed form.
std::string Check(const Fraction& sim, const std::optional<Fraction>& closed, bool ratio) {
  if (!closed) return "–";
  std::string v = ratio ? Ratio(*closed) + " (" + closed->ToString() + ")" : Num(*closed);
  if (sim == *closed) return v + " ✓";
  return v + " ✗ Δ " + StrFormat("%+.6g", sim.value() - closed->value());
}

std::string FirstLine(const std::string& s) {
  size_t k = s.find('\n');
  return k == std::string::npos ? s : s.substr(0, k);
}

std::string PeakList(const std::vector<Fraction>& v) {
  std::string s;
  for (const Fraction& f : v) s += (s.empty() ? "" : ", ") + Num(f);
  return s;
}

// The sweep's m for the memory chart of P: the smallest m >= 2P, else the largest.
int MemoryChartM(const std::vector<int>& ms, int P) {
  std::vector<int> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  for (int m : sorted)
    if (m >= 2 * P) return m;
  return sorted.back();
}

std::string MeasuredSection(const std::vector<MeasuredRun>& runs, Status* error) {
  std::string s = "## Measured vs simulated\n\n";
  s += "Each measured trace (`pipewright run --trace`) next to the simulation of the plan it ran "
       "(`pipewright show TRACE --plan PLAN` draws both and lists every action).\n\n";
  s += "| trace | plan | makespan measured | makespan simulated | diff | bubble measured | bubble simulated | "
       "per-rank bubble measured / simulated |\n|---|---|---|---|---|---|---|---|\n";
  for (const MeasuredRun& run : runs) {
    StatusOr<Timeline> measured = ReadTraceFile(run.trace_path);
    if (!measured.ok()) {
      *error = measured.status();
      return "";
    }
    StatusOr<Plan> plan = ReadPlanFile(run.plan_path);
    if (!plan.ok()) {
      *error = plan.status();
      return "";
    }
    StatusOr<Timeline> sim = TimelineOfPlan(*plan, run.plan_path);
    if (!sim.ok()) {
      *error = sim.status();
      return "";
    }
    StatusOr<TimelineDiff> d = DiffTimelines(*measured, *sim);
    if (!d.ok()) {
      *error = Status::InvalidArgument(run.trace_path + " vs " + run.plan_path + ": " + d.status().message());
      return "";
    }
    std::string per_rank;
    for (const RankDiff& r : d->ranks)
      per_rank +=
          (per_rank.empty() ? "" : "; ") + StrFormat("r%d %.3f / %.3f", r.rank, r.measured_bubble, r.simulated_bubble);
    s += "| `" + run.trace_path + "` | `" + run.plan_path + "` | " + FormatSeconds(d->measured_makespan_s) + " | " +
         FormatSeconds(d->simulated_makespan_s) + " | " +
         (d->simulated_makespan_s > 0
              ? StrFormat("%+.1f%%", 100 * (d->measured_makespan_s - d->simulated_makespan_s) / d->simulated_makespan_s)
              : std::string("–")) +
         " | " + StrFormat("%.4f", d->measured_bubble) + " | " + StrFormat("%.4f", d->simulated_bubble) + " | " +
         per_rank + " |\n";
  }
  return s + "\n";
}

}  // namespace

StatusOr<Report> RenderReport(const ReportOptions& o, std::vector<ReportCell> cells) {
  Report rep;
  std::vector<int> ps = o.pp_sizes, ms = o.microbatches;
  std::sort(ps.begin(), ps.end());
  ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  std::vector<std::string> labels;  // families in sweep order
  for (const ReportCell& c : cells)
    if (std::find(labels.begin(), labels.end(), Label(c)) == labels.end()) labels.push_back(Label(c));

  // Charts.
  std::vector<std::string> chart_refs;
  for (int P : ps) {
    std::vector<LineSeries> series;
    for (const std::string& l : labels) {
      LineSeries ls;
      ls.name = l;
      for (const ReportCell& c : cells)
        if (Label(c) == l && c.pp == P && c.status.ok()) {
          ls.x.push_back(c.m);
          ls.y.push_back(c.bubble_ratio.value());
        }
      if (!ls.x.empty()) series.push_back(ls);
    }
    std::vector<double> ticks(ms.begin(), ms.end());
    std::string name = "bubble_vs_m_p" + std::to_string(P) + ".svg";
    rep.files.push_back(
        {name, LineChartSvg("Bubble ratio vs m, P = " + std::to_string(P) + " (unit costs, simulated)",
                            "microbatches m (log scale)", "bubble ratio (idle / rank-time)", ticks, series)});
    chart_refs.push_back("![bubble ratio vs m, P=" + std::to_string(P) + "](" + name + ")");
  }
  for (int P : ps) {
    int m = MemoryChartM(ms, P);
    std::vector<BarGroup> groups;
    for (const std::string& l : labels)
      for (const ReportCell& c : cells)
        if (Label(c) == l && c.pp == P && c.m == m && c.status.ok()) {
          BarGroup g{l, {}};
          for (const Fraction& f : c.peak_memory) g.values.push_back(f.value());
          groups.push_back(g);
        }
    std::string name = "peak_memory_p" + std::to_string(P) + "_m" + std::to_string(m) + ".svg";
    rep.files.push_back({name, BarChartSvg(StrFormat("Peak activation memory per rank, P = %d, m = %d (M_B)", P, m),
                                           "peak memory (M_B)", "rank", groups)});
    chart_refs.push_back("![peak memory per rank, P=" + std::to_string(P) + ", m=" + std::to_string(m) + "](" + name +
                         ")");
  }

  std::string md = "# Schedule bubble and memory report\n\n";
  md += "Generated by `" + (o.command_line.empty() ? std::string("pipewright report") : o.command_line) +
        "`. Every number comes from the one simulator (generate → lower → validate → simulate); the closed "
        "forms are docs/ALGORITHMS.md §1, printed next to it. The output is deterministic: rerunning gives the same "
        "files.\n\n";
  md +=
      "**Unit costs.** A rank's share of the model costs F = I = W = 1 s (B = I + W = 2 s) per microbatch and holds "
      "M_B of activations from its F to its I/B (and M_W = M_B from I to W); with v stages per rank each stage "
      "costs 1/v s and holds M_B/v. No communication time. So makespans, bubble ratios and memory are comparable "
      "across schedules and v.\n\n";
  md +=
      "**Columns.** *makespan*: end of the last action (rule 8). *steady step*: max over ranks of last compute end "
      "− first compute start (rule 9, what a step costs when steps overlap). *bubble*: 1 − Σ busy / (P · "
      "makespan) (rule 8). *steady bubble*: 1 − busy / steady step (the ZB paper's definition). *peak*: per-rank "
      "peak activation memory in M_B (max / min over ranks; every rank in the per-rank table). *closed*: the "
      "closed form where one exists for these (P, m, v); ✓ = equal to the simulation **exactly** (as fractions), "
      "✗ = differs (Δ = simulated − closed), – = no closed form.\n\n";

  // Overview: bubble ratio by m.
  md += "## Bubble ratio at a glance\n\n| schedule | P |";
  for (int m : ms) md += " m=" + std::to_string(m) + " |";
  md += "\n|---|---|";
  for (size_t k = 0; k < ms.size(); ++k) md += "---|";
  md += "\n";
  for (const std::string& l : labels)
    for (int P : ps) {
      md += "| " + l + " | " + std::to_string(P) + " |";
      for (int m : ms) {
        const ReportCell* cell = nullptr;
        for (const ReportCell& c : cells)
          if (Label(c) == l && c.pp == P && c.m == m) cell = &c;
        md += " " +
              (!cell                ? std::string("")
               : !cell->status.ok() ? std::string("failed")
                                    : Ratio(cell->bubble_ratio)) +
              " |";
      }
      md += "\n";
    }
  md += "\n" + chart_refs[0];
  for (size_t k = 1; k < ps.size(); ++k) md += " " + chart_refs[k];
  md += "\n\n";

  md +=
      "## Full table\n\n| schedule | v | P | m | makespan | closed | steady step | closed | bubble | closed | "
      "steady bubble | peak max / min (M_B) | closed peak |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  int agree = 0, disagree = 0;
  for (const ReportCell& c : cells) {
    md += "| " + c.display_name + " | " + std::to_string(c.v) + " | " + std::to_string(c.pp) + " | " +
          std::to_string(c.m) + " | ";
    if (!c.status.ok()) {
      md += std::string("failed: ") + StatusCodeName(c.status.code()) + " | | | | | | | | |\n";
      continue;
    }
    auto count = [&](bool ok) { ok ? ++agree : ++disagree; };
    if (c.closed.makespan) count(c.makespan == *c.closed.makespan);
    if (c.closed.steady_step) count(c.steady_step == *c.closed.steady_step);
    if (c.closed.bubble_ratio) count(c.bubble_ratio == *c.closed.bubble_ratio);
    if (!c.closed.peak_memory.empty()) count(c.peak_memory == c.closed.peak_memory);
    Fraction mx = *std::max_element(c.peak_memory.begin(), c.peak_memory.end(),
                                    [](const Fraction& a, const Fraction& b) { return a.value() < b.value(); });
    Fraction mn = *std::min_element(c.peak_memory.begin(), c.peak_memory.end(),
                                    [](const Fraction& a, const Fraction& b) { return a.value() < b.value(); });
    std::string peak_closed = "–";
    if (!c.closed.peak_memory.empty())
      peak_closed = c.peak_memory == c.closed.peak_memory ? "per rank ✓" : "✗ " + PeakList(c.closed.peak_memory);
    md += Num(c.makespan) + " | " + Check(c.makespan, c.closed.makespan, false) + " | " + Num(c.steady_step) + " | " +
          Check(c.steady_step, c.closed.steady_step, false) + " | " + Ratio(c.bubble_ratio) + " | " +
          Check(c.bubble_ratio, c.closed.bubble_ratio, true) + " | " + Ratio(c.steady_bubble) + " | " + Num(mx) +
          " / " + Num(mn) + " | " + peak_closed + " |\n";
  }
  md += StrFormat("\nClosed-form cells: %d agree exactly with the simulation, %d differ.\n\n", agree, disagree);

  md +=
      "## Peak memory per rank (M_B), rank 0 first\n\n| schedule | P | m | simulated | closed form |\n"
      "|---|---|---|---|---|\n";
  for (const ReportCell& c : cells) {
    if (!c.status.ok()) continue;
    md += "| " + Label(c) + " | " + std::to_string(c.pp) + " | " + std::to_string(c.m) + " | " +
          PeakList(c.peak_memory) + " | " +
          (c.closed.peak_memory.empty()            ? std::string("–")
           : c.peak_memory == c.closed.peak_memory ? std::string("same ✓")
                                                   : PeakList(c.closed.peak_memory)) +
          " |\n";
  }
  md += "\n";
  for (size_t k = ps.size(); k < chart_refs.size(); ++k) md += chart_refs[k] + "\n";
  md += "\n## Closed forms used\n\n";
  std::map<std::string, std::string> sources;
  for (const ReportCell& c : cells)
    if (!c.closed.source.empty()) sources[Label(c)] = c.closed.source;
  for (const std::string& l : labels)
    md += "- **" + l + "**: " + (sources.count(l) ? sources[l] : std::string("no closed form for these inputs")) + "\n";

  std::string failures;
  for (const ReportCell& c : cells)
    if (!c.status.ok())
      failures += "- " + Label(c) + " P=" + std::to_string(c.pp) + " m=" + std::to_string(c.m) + ": " +
                  FirstLine(c.status.ToString()) + "\n";
  md += "\n## Failures\n\n" +
        (failures.empty() ? std::string("None: every cell generated, validated and simulated.\n") : failures);
  for (const std::string& extra : o.extra_sections) md += "\n" + extra;
  if (!o.measured.empty()) {
    Status err;
    std::string sec = MeasuredSection(o.measured, &err);
    if (!err.ok()) return err;
    md += "\n" + sec;
  }
  rep.cells = std::move(cells);
  rep.files.push_back({"schedule_report.md", md});
  return rep;
}

}  // namespace pw::viz
