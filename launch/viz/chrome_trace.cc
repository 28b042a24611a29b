#include "launch/viz/chrome_trace.h"

#include <cmath>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "schedules/trace_format.h"

namespace pw::viz {

namespace {

using ojson = nlohmann::ordered_json;

// Seconds -> µs, rounded to the nanosecond so sums of decimal costs print short.
double Micros(double seconds) { return std::round(seconds * kTraceMicrosPerSecond * 1000.0) / 1000.0; }

}  // namespace

std::string ChromeTraceJson(const Timeline& t, const std::string& plan_hash) {
  ojson other;
  other["format"] = kTraceFormat;
  other["version"] = kTraceVersion;
  other["kind"] = t.kind;
  other["schedule"] = t.schedule;
  other["pp_size"] = t.pp_size;
  other["num_stages"] = t.num_stages;
  other["num_microbatches"] = t.num_microbatches;
  other["stage_to_rank"] = t.stage_to_rank;
  if (t.memory_limit_bytes) other["memory_limit_bytes"] = *t.memory_limit_bytes;
  else other["memory_limit_bytes"] = nullptr;
  if (!plan_hash.empty()) other["plan_hash"] = plan_hash;
  other["title"] = t.title;
  if (t.memory_unit_bytes != 1 || t.memory_unit_name != "B")
    other["memory_unit"] = {{"bytes", t.memory_unit_bytes}, {"name", t.memory_unit_name}};

  // Message k binds its SEND (flow_out) and RECV (flow_in).
  std::map<std::tuple<int, int, int, int>, size_t> msg_of;  // (rank, type, stage, mb) -> message
  for (size_t k = 0; k < t.messages.size(); ++k) {
    const TimelineMessage& m = t.messages[k];
    msg_of[{m.src_rank, int(m.send.type), m.send.stage, m.send.microbatch}] = k;
    msg_of[{m.dst_rank, int(m.recv.type), m.recv.stage, m.recv.microbatch}] = k;
  }

  std::vector<ojson> events;
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                      {"args", {{"name", "rank " + std::to_string(r) + " (stages " + StagesText(tr.stages) + ")"}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", kTraceComputeTid},
                      {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", kTraceCommTid},
                      {"args", {{"name", "comm"}}}});
  }
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    for (const TimelineBlock& b : tr.compute) {
      std::string name = b.action.ToString();
      events.push_back({{"name", name}, {"cat", ActionTypeName(b.action.type)}, {"ph", "X"}, {"pid", r},
                        {"tid", kTraceComputeTid}, {"ts", Micros(b.start)}, {"dur", Micros(b.end) - Micros(b.start)},
                        {"args", {{"action", name}, {"stage", b.action.stage},
                                  {"microbatch", b.action.microbatch}, {"index", b.index}}}});
    }
    for (const TimelineBlock& b : tr.comm) {
      std::string name = b.action.ToString();
      double end = b.end;
      auto it = msg_of.find({r, int(b.action.type), b.action.stage, b.action.microbatch});
      ojson e = {{"name", name}, {"cat", "comm"}, {"ph", "X"}, {"pid", r}, {"tid", kTraceCommTid},
                 {"ts", Micros(b.start)}, {"dur", Micros(end) - Micros(b.start)},
                 {"args", {{"action", name}, {"stage", b.action.stage},
                           {"microbatch", b.action.microbatch}, {"index", b.index}}}};
      if (it != msg_of.end()) {
        const TimelineMessage& m = t.messages[it->second];
        e["args"]["peer_rank"] = IsSend(b.action.type) ? m.dst_rank : m.src_rank;
        e["bind_id"] = it->second;
        e[IsSend(b.action.type) ? "flow_out" : "flow_in"] = true;
      }
      events.push_back(e);
    }
    for (const MemoryPoint& p : tr.memory)
      events.push_back({{"name", kTraceMemoryCounter}, {"ph", "C"}, {"pid", r}, {"ts", Micros(p.time)},
                        {"args", {{"bytes", p.bytes}}}});
  }

  std::string out = "{\"displayTimeUnit\": \"ms\",\n\"otherData\": " + other.dump() + ",\n\"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) out += events[i].dump() + (i + 1 < events.size() ? ",\n" : "\n");
  out += "]}\n";
  return out;
}

}  // namespace pw::viz
