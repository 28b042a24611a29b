#include "schedules/trace_writer.h"

#include <algorithm>
#include <cmath>

#include "schedules/trace_format.h"

namespace pw {

namespace {

using ojson = nlohmann::ordered_json;

double RoundToNanos(double micros) { return std::round(micros * 1000.0) / 1000.0; }

// The stage at the other end of a SEND/RECV.
int PeerStage(const Action& a) {
  switch (a.type) {
    case ActionType::kSendF:
    case ActionType::kRecvB:
      return a.stage + 1;
    case ActionType::kRecvF:
    case ActionType::kSendB:
      return a.stage - 1;
    case ActionType::kReduceGrad:
      return -1;  // a collective over the data-parallel group: no pipeline peer
    default:
      return a.stage;
  }
}

std::string StagesList(const std::vector<int>& stages) {
  std::string s;
  for (int st : stages) s += (s.empty() ? "" : ",") + std::to_string(st);
  return s;
}

ojson OtherData(const TraceHeader& h) {
  ojson other;
  other["format"] = kTraceFormat;
  other["version"] = kTraceVersion;
  other["kind"] = h.kind;
  other["schedule"] = h.schedule;
  other["pp_size"] = h.pp_size;
  other["num_stages"] = h.num_stages;
  other["num_microbatches"] = h.num_microbatches;
  other["stage_to_rank"] = h.stage_to_rank;
  if (h.memory_limit_bytes)
    other["memory_limit_bytes"] = *h.memory_limit_bytes;
  else
    other["memory_limit_bytes"] = nullptr;
  if (!h.plan_hash.empty()) other["plan_hash"] = h.plan_hash;
  other["title"] = h.title;
  if (h.memory_unit_bytes != 1 || h.memory_unit_name != "B")
    other["memory_unit"] = {{"bytes", h.memory_unit_bytes}, {"name", h.memory_unit_name}};
  return other;
}

}  // namespace

double TraceMicros(double seconds) { return RoundToNanos(seconds * kTraceMicrosPerSecond); }

int64_t TraceFlowId(const Action& a, int num_stages, int num_microbatches) {
  int sender = 0, direction = 0;
  switch (a.type) {
    case ActionType::kSendF:
      sender = a.stage;
      direction = 0;
      break;
    case ActionType::kRecvF:
      sender = a.stage - 1;
      direction = 0;
      break;
    case ActionType::kSendB:
      sender = a.stage;
      direction = 1;
      break;
    case ActionType::kRecvB:
      sender = a.stage + 1;
      direction = 1;
      break;
    default:
      return 0;
  }
  if (sender < 0 || sender >= num_stages || a.microbatch < 0 || a.microbatch >= num_microbatches) return 0;
  return 1 + (static_cast<int64_t>(direction) * num_stages + sender) * num_microbatches + a.microbatch;
}

ojson TraceRankEvents(const TraceHeader& header, const TraceRank& tr) {
  const int r = tr.rank;
  ojson events = ojson::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", r},
                    {"args", {{"name", "rank " + std::to_string(r) + " (stages " + StagesList(tr.stages) + ")"}}}});
  events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
  events.push_back(
      {{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", kTraceComputeTid}, {"args", {{"name", "compute"}}}});
  events.push_back(
      {{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", kTraceCommTid}, {"args", {{"name", "comm"}}}});
  for (const TraceSpan& s : tr.spans) {
    const Action& a = s.action;
    const std::string name = a.ToString();
    const bool compute = IsCompute(a.type);
    const double ts = TraceMicros(s.start_s);
    const double dur = std::max(0.0, RoundToNanos(TraceMicros(s.end_s) - ts));
    ojson args = {{"action", name}, {"stage", a.stage}, {"microbatch", a.microbatch}, {"index", s.index}};
    if (!compute) {
      const int peer = PeerStage(a);
      if (peer >= 0 && peer < static_cast<int>(header.stage_to_rank.size()))
        args["peer_rank"] = header.stage_to_rank[peer];
    }
    ojson e = {{"name", name},
               {"cat", compute ? std::string(ActionTypeName(a.type)) : std::string("comm")},
               {"ph", "X"},
               {"pid", r},
               {"tid", compute ? kTraceComputeTid : kTraceCommTid},
               {"ts", ts},
               {"dur", dur},
               {"args", std::move(args)}};
    if (!compute) {
      const int64_t flow = TraceFlowId(a, header.num_stages, header.num_microbatches);
      if (flow != 0) {
        e["bind_id"] = flow;
        e[IsSend(a.type) ? "flow_out" : "flow_in"] = true;
      }
    }
    events.push_back(std::move(e));
  }
  for (const MemoryPoint& p : tr.memory)
    events.push_back({{"name", kTraceMemoryCounter},
                      {"ph", "C"},
                      {"pid", r},
                      {"ts", TraceMicros(p.time)},
                      {"args", {{"bytes", p.bytes}}}});
  return events;
}

std::string TraceJson(const TraceHeader& header, const std::vector<TraceRank>& ranks) {
  std::string out =
      "{\"displayTimeUnit\": \"ms\",\n\"otherData\": " + OtherData(header).dump() + ",\n\"traceEvents\": [\n";
  bool first = true;
  for (const TraceRank& tr : ranks)
    for (const ojson& e : TraceRankEvents(header, tr)) {
      out += (first ? "" : ",\n") + e.dump();
      first = false;
    }
  out += "\n]}\n";
  return out;
}

}  // namespace pw
