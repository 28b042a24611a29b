#include "viz/trace_reader.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "base/json_text.h"
#include "schedules/trace_format.h"

namespace pw::viz {

namespace {

using json = nlohmann::json;

struct RawBlock {
  TimelineBlock block;
  bool has_index = false;
  size_t file_order = 0;
  size_t event = 0;  // index into traceEvents, for errors
};

Status Err(const std::string& source, const std::string& where, const std::string& why) {
  return Status::InvalidArgument(source + ": " + where + ": " + why);
}

bool GetInt(const json& obj, const char* key, int64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return false;
  *out = it->get<int64_t>();
  return true;
}

bool GetNumber(const json& obj, const char* key, double* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return true;
}

}  // namespace

bool LooksLikeTrace(const std::string& text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string::npos) return false;
  if (text[i] == '[') return true;
  return text[i] == '{' && text.find("\"traceEvents\"") != std::string::npos;
}

StatusOr<Timeline> ParseTrace(const std::string& text, const std::string& source, TraceInfo* info) {
  PW_ASSIGN_OR_RETURN(json doc, ParseJsonText(text, source));
  const json* events = nullptr;
  const json* other = nullptr;
  if (doc.is_array()) {
    events = &doc;
  } else if (doc.is_object()) {
    auto it = doc.find("traceEvents");
    if (it == doc.end() || !it->is_array()) return Err(source, "(top level)", "no 'traceEvents' array");
    events = &*it;
    auto o = doc.find("otherData");
    if (o != doc.end() && o->is_object()) other = &*o;
  } else {
    return Err(source, "(top level)", "expected a JSON object with 'traceEvents' or an array of events");
  }

  Timeline t;
  t.kind = "measured";
  t.schedule = "custom";
  int64_t pp = -1, stages = -1, mbs = -1;
  if (other) {
    auto f = other->find("format");
    if (f != other->end() && *f != kTraceFormat)
      return Err(source, "otherData.format", "expected \"pipewright-trace\", got " + f->dump());
    int64_t version = kTraceVersion;
    if (GetInt(*other, "version", &version) && version != kTraceVersion)
      return Err(source, "otherData.version",
                 "this pipewright reads version " + std::to_string(kTraceVersion) + ", the file is " +
                     std::to_string(version));
    if (other->contains("kind") && (*other)["kind"].is_string()) t.kind = (*other)["kind"].get<std::string>();
    if (other->contains("schedule") && (*other)["schedule"].is_string())
      t.schedule = (*other)["schedule"].get<std::string>();
    if (other->contains("title") && (*other)["title"].is_string()) t.title = (*other)["title"].get<std::string>();
    GetInt(*other, "pp_size", &pp);
    GetInt(*other, "num_stages", &stages);
    GetInt(*other, "num_microbatches", &mbs);
    int64_t limit = 0;
    if (GetInt(*other, "memory_limit_bytes", &limit)) t.memory_limit_bytes = limit;
    auto s2r = other->find("stage_to_rank");
    if (s2r != other->end()) {
      if (!s2r->is_array()) return Err(source, "otherData.stage_to_rank", "expected an array of ranks");
      for (size_t i = 0; i < s2r->size(); ++i) {
        if (!(*s2r)[i].is_number_integer())
          return Err(source, "otherData.stage_to_rank[" + std::to_string(i) + "]", "expected an integer");
        t.stage_to_rank.push_back((*s2r)[i].get<int>());
      }
    }
    auto mu = other->find("memory_unit");
    if (mu != other->end() && mu->is_object()) {
      int64_t b = 0;
      if (GetInt(*mu, "bytes", &b) && b > 0 && mu->contains("name") && (*mu)["name"].is_string()) {
        t.memory_unit_bytes = b;
        t.memory_unit_name = (*mu)["name"].get<std::string>();
      }
    }
    if (info && other->contains("plan_hash") && (*other)["plan_hash"].is_string())
      info->plan_hash = (*other)["plan_hash"].get<std::string>();
  }

  std::map<int, std::vector<RawBlock>> blocks;     // rank -> blocks
  std::map<int, std::vector<MemoryPoint>> memory;  // rank -> counter points
  int max_pid = -1, max_stage = -1, max_mb = -1;
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    std::string where = "traceEvents[" + std::to_string(i) + "]";
    if (!e.is_object()) return Err(source, where, "expected an event object");
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string()) return Err(source, where, "event without a string 'ph'");
    std::string phase = ph->get<std::string>();
    if (phase != "X" && phase != "C") continue;
    int64_t pid = 0;
    if (!GetInt(e, "pid", &pid)) return Err(source, where + ".pid", "missing or not an integer");
    double ts = 0;
    if (!GetNumber(e, "ts", &ts)) return Err(source, where + ".ts", "missing or not a number (µs)");
    if (phase == "C") {
      if (!e.contains("name") || e["name"] != kTraceMemoryCounter) continue;
      int64_t bytes = 0;
      if (!e.contains("args") || !GetInt(e["args"], "bytes", &bytes))
        return Err(source, where + ".args.bytes", "memory counter without an integer 'bytes'");
      memory[static_cast<int>(pid)].push_back({ts / kTraceMicrosPerSecond, bytes});
      max_pid = std::max<int>(max_pid, static_cast<int>(pid));
      continue;
    }
    int64_t tid = -1;
    GetInt(e, "tid", &tid);
    if (tid != kTraceComputeTid && tid != kTraceCommTid) continue;  // other threads are ignored
    auto args = e.find("args");
    if (args == e.end() || !args->is_object() || !args->contains("action") || !(*args)["action"].is_string())
      return Err(source, where, "'X' event on the compute/comm thread without args.action");
    std::string text_action = (*args)["action"].get<std::string>();
    StatusOr<Action> a = ParseAction(text_action);
    if (!a.ok()) return Err(source, where + ".args.action", a.status().message());
    if (e.contains("name") && e["name"] != text_action)
      return Err(source, where + ".name", "is " + e["name"].dump() + " but args.action is '" + text_action + "'");
    bool compute = IsCompute(a->type);
    if (compute != (tid == kTraceComputeTid))
      return Err(source, where + ".tid",
                 "'" + text_action + "' must be on thread " +
                     std::to_string(compute ? kTraceComputeTid : kTraceCommTid) + " (" +
                     (compute ? "compute" : "comm") + ")");
    double dur = 0;
    if (!GetNumber(e, "dur", &dur) || dur < 0) return Err(source, where + ".dur", "missing or negative (µs)");
    if (pid < 0) return Err(source, where + ".pid", "rank must be >= 0");
    RawBlock rb;
    rb.block.action = *a;
    rb.block.start = ts / kTraceMicrosPerSecond;
    rb.block.end = (ts + dur) / kTraceMicrosPerSecond;
    int64_t index = -1;
    rb.has_index = GetInt(*args, "index", &index);
    rb.block.index = static_cast<int>(index);
    rb.event = i;
    rb.file_order = blocks[static_cast<int>(pid)].size();
    blocks[static_cast<int>(pid)].push_back(rb);
    max_pid = std::max<int>(max_pid, static_cast<int>(pid));
    max_stage = std::max(max_stage, a->stage);
    max_mb = std::max(max_mb, a->microbatch);
  }
  if (blocks.empty()) return Err(source, "traceEvents", "no action events (ph 'X' with args.action on tid 0 or 1)");

  t.pp_size = static_cast<int>(pp >= 1 ? pp : max_pid + 1);
  if (max_pid >= t.pp_size)
    return Err(source, "otherData.pp_size",
               "is " + std::to_string(t.pp_size) + " but events name rank (pid) " + std::to_string(max_pid));
  t.num_stages = static_cast<int>(stages >= 1 ? stages : max_stage + 1);
  t.num_microbatches = static_cast<int>(mbs >= 1 ? mbs : max_mb + 1);
  if (t.stage_to_rank.empty()) {
    t.stage_to_rank.assign(t.num_stages, -1);
    for (const auto& [r, list] : blocks)
      for (const RawBlock& rb : list) {
        int s = rb.block.action.stage;
        if (s >= t.num_stages) continue;  // reported by the shape check
        if (t.stage_to_rank[s] >= 0 && t.stage_to_rank[s] != r)
          return Err(source, "traceEvents[" + std::to_string(rb.event) + "]",
                     "stage " + std::to_string(s) + " appears on ranks " + std::to_string(t.stage_to_rank[s]) +
                         " and " + std::to_string(r));
        t.stage_to_rank[s] = r;
      }
    for (int s = 0; s < t.num_stages; ++s)
      if (t.stage_to_rank[s] < 0) return Err(source, "traceEvents", "no event of stage " + std::to_string(s));
  }

  t.ranks.resize(t.pp_size);
  for (auto& [r, list] : blocks) {
    bool all_indexed = std::all_of(list.begin(), list.end(), [](const RawBlock& b) { return b.has_index; });
    std::stable_sort(list.begin(), list.end(), [&](const RawBlock& x, const RawBlock& y) {
      if (all_indexed) return x.block.index < y.block.index;
      if (x.block.start != y.block.start) return x.block.start < y.block.start;
      return x.file_order < y.file_order;
    });
    for (size_t k = 0; k < list.size(); ++k) {
      if (all_indexed && k > 0 && list[k].block.index == list[k - 1].block.index)
        return Err(source, "traceEvents[" + std::to_string(list[k].event) + "].args.index",
                   "rank " + std::to_string(r) + " has two actions with index " + std::to_string(list[k].block.index));
      TimelineBlock b = list[k].block;
      b.index = static_cast<int>(k);
      (IsCompute(b.action.type) ? t.ranks[r].compute : t.ranks[r].comm).push_back(b);
    }
  }
  for (auto& [r, pts] : memory) {
    if (r >= t.pp_size) continue;
    std::stable_sort(pts.begin(), pts.end(),
                     [](const MemoryPoint& a, const MemoryPoint& b) { return a.time < b.time; });
    t.ranks[r].memory = pts;
  }
  Program shape = TimelineProgram(t);
  Status st = CheckProgramShape(shape);
  if (!st.ok()) return Status::InvalidArgument(source + ": " + st.message());
  for (int r = 0; r < t.pp_size; ++r) t.ranks[r].stages = shape.StagesOfRank(r);

  // Pair each SEND with the RECV of the same message.
  std::map<std::tuple<int, int, int>, std::pair<int, const TimelineBlock*>> recvs;  // (stage, dir, mb)
  for (int r = 0; r < t.pp_size; ++r)
    for (const TimelineBlock& b : t.ranks[r].comm)
      if (IsRecv(b.action.type))
        recvs[{b.action.stage, b.action.type == ActionType::kRecvF ? 0 : 1, b.action.microbatch}] = {r, &b};
  for (int r = 0; r < t.pp_size; ++r)
    for (const TimelineBlock& b : t.ranks[r].comm) {
      if (!IsSend(b.action.type)) continue;
      bool fwd = b.action.type == ActionType::kSendF;
      int dst = fwd ? b.action.stage + 1 : b.action.stage - 1;
      auto it = recvs.find({dst, fwd ? 0 : 1, b.action.microbatch});
      if (it == recvs.end()) continue;
      TimelineMessage m;
      m.send = b.action;
      m.recv = it->second.second->action;
      m.src_rank = r;
      m.dst_rank = it->second.first;
      m.sent_s = b.start;
      m.available_s = it->second.second->end;
      t.messages.push_back(m);
    }
  if (t.title.empty()) t.title = t.schedule + " (" + t.kind + " trace " + source + ")";
  ComputeTimelineMetrics(&t);
  return t;
}

StatusOr<Timeline> ReadTraceFile(const std::string& path, TraceInfo* info) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open trace file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTrace(ss.str(), path, info);
}

}  // namespace pw::viz
