#include "viz/chrome_trace.h"

#include <algorithm>

#include "schedules/trace_writer.h"

namespace pw::viz {

std::string ChromeTraceJson(const Timeline& t, const std::string& plan_hash) {
  TraceHeader h;
  h.kind = t.kind;
  h.schedule = t.schedule;
  h.pp_size = t.pp_size;
  h.num_stages = t.num_stages;
  h.num_microbatches = t.num_microbatches;
  h.stage_to_rank = t.stage_to_rank;
  h.memory_limit_bytes = t.memory_limit_bytes;
  h.plan_hash = plan_hash;
  h.title = t.title;
  h.memory_unit_bytes = t.memory_unit_bytes;
  h.memory_unit_name = t.memory_unit_name;

  std::vector<TraceRank> ranks(t.ranks.size());
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    const TimelineRank& tr = t.ranks[r];
    TraceRank& out = ranks[r];
    out.rank = static_cast<int>(r);
    out.stages = tr.stages;
    for (const auto* lane : {&tr.compute, &tr.comm})
      for (const TimelineBlock& b : *lane) out.spans.push_back({b.action, b.index, b.start, b.end});
    std::stable_sort(out.spans.begin(), out.spans.end(),
                     [](const TraceSpan& a, const TraceSpan& b) { return a.index < b.index; });
    out.memory = tr.memory;
  }
  return TraceJson(h, ranks);
}

}  // namespace pw::viz
