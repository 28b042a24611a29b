#include "launch/summary.h"

#include <cstdio>

namespace pw::cli {

std::string FormatSummary(const std::string& name, const Program& p, const SimResult& sim, int64_t memory_unit,
                          const std::string& unit_name) {
  char buf[256];
  std::string out;
  std::snprintf(buf, sizeof(buf), "%s: P=%d ranks, S=%d stages, m=%d microbatches, %zu actions\n", name.c_str(),
                p.pp_size, p.num_stages, p.num_microbatches, p.NumActions());
  out += buf;
  std::snprintf(buf, sizeof(buf), "makespan %.6g s, steady step %.6g s, bubble ratio %.4f (overhead %.4f)\n",
                sim.makespan_s, sim.steady_step_s, sim.bubble_ratio, sim.bubble_overhead);
  out += buf;
  for (int r = 0; r < p.pp_size; ++r) {
    const RankResult& rr = sim.per_rank[r];
    std::snprintf(buf, sizeof(buf), "  rank %d: busy %.6g s, peak memory %.6g %s\n", r, rr.busy_s,
                  double(rr.peak_memory_bytes) / double(memory_unit), unit_name.c_str());
    out += buf;
  }
  return out;
}

}  // namespace pw::cli
