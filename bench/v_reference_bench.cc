// Our V-Half, V-Min, V-auto and ZB-V against the authors' own schedulers
// (arXiv 2405.15362; sail-sg/zero-bubble-pipeline-parallelism), cell by cell
// over tests/schedules/data/v_reference.tsv (how the reference numbers were
// made is in that file's header; cells in tests/schedules/v_reference_cells.h).
// Prints a Markdown table (bench/results/v_reference.md) and a summary per
// family; exits non-zero if any cell of ours is refused, costs more than the
// reference (at the table's 6 decimals) or peaks above it.
//
// Usage: v_reference_bench [TABLE]   (default: the source tree's table)
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "tests/schedules/v_reference_cells.h"

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : std::string(PW_SOURCE_DIR) + "/tests/schedules/data/v_reference.tsv";
  const auto cells = pw::vref::ReadCells(path);
  if (cells.empty()) {
    std::fprintf(stderr, "v_reference_bench: no cells in %s\n", path.c_str());
    return 2;
  }
  std::printf(
      "# V-shape schedules: ours vs the authors' schedulers\n\n"
      "cost = max over ranks of (end of last pass - start of first F) (ZB paper; our steady_step_s); "
      "peak = largest per-rank activation peak (chunk units, or M_B for zbv 1.5B/14.6B). "
      "Δ = ours - reference (negative: ours is better). Table: tests/schedules/data/v_reference.tsv.\n\n"
      "| family | P | m | profile | limit | ref cost | our cost | Δ cost | ref peak | our peak | gen ms | "
      "verdict |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  struct Sum {
    int cells = 0, better = 0, equal = 0, worse = 0;
    double worst = -1e300;
  };
  std::map<std::string, Sum> sums;
  int bad = 0;
  for (const auto& c : cells) {
    const auto t0 = std::chrono::steady_clock::now();
    const pw::vref::Outcome o = pw::vref::RunCell(c);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    Sum& s = sums[c.family];
    ++s.cells;
    if (c.ref_none) {
      std::printf("| %s | %d | %d | %s | %s | none | %s | | | %s | %.0f | reference finds none |\n", c.family.c_str(),
                  c.P, c.m, c.profile.c_str(), c.limit.c_str(), o.ok ? std::to_string(o.cost).c_str() : "none",
                  o.ok ? std::to_string(o.peak).c_str() : "", ms);
      continue;
    }
    if (!o.ok) {
      ++bad;
      ++s.worse;
      std::printf("| %s | %d | %d | %s | %s | %.3f | refused: %s | | %.2f | | %.0f | WORSE |\n", c.family.c_str(), c.P,
                  c.m, c.profile.c_str(), c.limit.c_str(), c.ref_cost, o.error.substr(0, 60).c_str(), c.ref_peak, ms);
      continue;
    }
    const double d = pw::vref::CostExcess(c, o);
    const bool peak_ok = pw::vref::PeakExcess(c, o) <= 5e-9;
    const char* verdict = d > 5e-7 || !peak_ok ? "WORSE" : (d < -5e-7 ? "better" : "equal");
    if (d > 5e-7 || !peak_ok)
      ++bad, ++s.worse;
    else if (d < -5e-7)
      ++s.better;
    else
      ++s.equal;
    s.worst = std::max(s.worst, d);
    std::printf("| %s | %d | %d | %s | %s | %.4f | %.4f | %+.4f | %.4f | %.4f | %.0f | %s |\n", c.family.c_str(), c.P,
                c.m, c.profile.c_str(), c.limit.c_str(), c.ref_cost, o.cost, d, c.ref_peak, o.peak, ms, verdict);
    std::fflush(stdout);
  }
  std::printf("\n| family | cells | better | equal | worse | largest (ours - ref) cost |\n|---|---|---|---|---|---|\n");
  for (const auto& [family, s] : sums)
    std::printf("| %s | %d | %d | %d | %d | %+.3f |\n", family.c_str(), s.cells, s.better, s.equal, s.worse, s.worst);
  std::printf("\ncells worse than the reference (cost, peak or refused): %d\n", bad);
  return bad == 0 ? 0 : 1;
}
