#include "launch/summary.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "base/format.h"

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

StatusOr<StageCost> ParseCostsFlag(const std::string& flag, const std::string& text, bool allow_b) {
  const std::string expected = allow_b ? "F,I,W or F,I,W,B" : "F,I,W";
  std::vector<double> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double x = item.empty() ? 0.0 : std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(x) || x < 0)
      return Status::InvalidArgument(flag + ": '" + item + "' is not a finite non-negative number of seconds (in '" +
                                     text + "'; expected " + expected + ")");
    v.push_back(x);
  }
  if (!text.empty() && text.back() == ',')
    return Status::InvalidArgument(flag + ": empty item in '" + text + "' (expected " + expected + ")");
  if (v.size() != 3 && !(allow_b && v.size() == 4))
    return Status::InvalidArgument(flag + ": expected " + expected + " seconds per microbatch, got '" + text + "'");
  StageCost c;
  c.f = v[0];
  c.i = v[1];
  c.w = v[2];
  if (v.size() == 4) c.b = v[3];
  return c;
}

Status CheckNonNegativeFinite(const std::string& flag, double x, const std::string& what) {
  if (std::isfinite(x) && x >= 0) return Status::Ok();
  return Status::InvalidArgument(flag + " " + FormatShort(x) + ": expected a finite number of " + what + " >= 0");
}

}  // namespace pw::cli
