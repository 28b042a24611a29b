// The one trace writer (schedules/trace_writer.h): header fields, units and
// rounding, names/categories/tids, flow ids that pair every SEND with its
// RECV, memory counters and the file layout. Torch-free, milliseconds.
#include "schedules/trace_writer.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "schedules/trace_format.h"
#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

using nlohmann::json;

TraceHeader HeaderOf(const Program& p) {
  TraceHeader h;
  h.schedule = "test";
  h.pp_size = p.pp_size;
  h.num_stages = p.num_stages;
  h.num_microbatches = p.num_microbatches;
  h.stage_to_rank = p.stage_to_rank;
  return h;
}

// Every rank of `p` with action i of its list at [i, i + 0.5) ms.
std::vector<TraceRank> RanksOf(const Program& p) {
  std::vector<TraceRank> ranks;
  for (int r = 0; r < p.pp_size; ++r) {
    TraceRank tr;
    tr.rank = r;
    tr.stages = p.StagesOfRank(r);
    for (size_t i = 0; i < p.ranks[r].size(); ++i)
      tr.spans.push_back({p.ranks[r][i], static_cast<int>(i), 1e-3 * i, 1e-3 * i + 5e-4});
    ranks.push_back(tr);
  }
  return ranks;
}

TEST(TraceWriter, HeaderFields) {
  TraceHeader h;
  h.kind = "measured";
  h.schedule = "1f1b";
  h.pp_size = 2;
  h.num_stages = 2;
  h.num_microbatches = 1;
  h.stage_to_rank = {0, 1};
  h.title = "t";
  json doc = json::parse(TraceJson(h, {}));
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  const json& o = doc["otherData"];
  EXPECT_EQ(o["format"], kTraceFormat);
  EXPECT_EQ(o["version"], kTraceVersion);
  EXPECT_EQ(o["kind"], "measured");
  EXPECT_EQ(o["schedule"], "1f1b");
  EXPECT_EQ(o["pp_size"], 2);
  EXPECT_EQ(o["num_stages"], 2);
  EXPECT_EQ(o["num_microbatches"], 1);
  EXPECT_EQ(o["stage_to_rank"], json({0, 1}));
  EXPECT_TRUE(o["memory_limit_bytes"].is_null());
  EXPECT_EQ(o["title"], "t");
  EXPECT_FALSE(o.contains("plan_hash")) << "omitted when empty";
  EXPECT_FALSE(o.contains("memory_unit")) << "omitted at the default (bytes)";
  EXPECT_TRUE(doc["traceEvents"].empty());

  h.memory_limit_bytes = 1 << 20;
  h.plan_hash = "abc";
  h.memory_unit_bytes = 4;
  h.memory_unit_name = "stage activations";
  doc = json::parse(TraceJson(h, {}));
  EXPECT_EQ(doc["otherData"]["memory_limit_bytes"], 1 << 20);
  EXPECT_EQ(doc["otherData"]["plan_hash"], "abc");
  EXPECT_EQ(doc["otherData"]["memory_unit"], json({{"bytes", 4}, {"name", "stage activations"}}));
}

TEST(TraceWriter, SecondsInMicrosecondsOutRoundedToTheNanosecond) {
  EXPECT_DOUBLE_EQ(TraceMicros(1.5), 1.5e6);
  EXPECT_DOUBLE_EQ(TraceMicros(1.23456789e-3), 1234.568);
  TraceHeader h;
  h.pp_size = h.num_stages = h.num_microbatches = 1;
  h.stage_to_rank = {0};
  TraceRank tr;
  tr.stages = {0};
  tr.spans = {{MakeAction(0, ActionType::kF, 0), 0, 0.1, 0.3},                     // 200000 µs, printed short
              {MakeAction(0, ActionType::kB, 0), 1, 1.23456789e-3, 2.0000000004},  // ns rounding of both ends
              {MakeAction(0, ActionType::kW, 0), 2, 3.0, 2.5}};                    // end before start: dur 0
  tr.memory = {{0.0, 7}, {0.25, 9}};
  const std::string text = TraceJson(h, {tr});
  EXPECT_NE(text.find("\"ts\":100000.0,\"dur\":200000.0"), std::string::npos) << text;
  json doc = json::parse(text);
  std::vector<json> xs, cs;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X") xs.push_back(e);
    if (e["ph"] == "C") cs.push_back(e);
  }
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_DOUBLE_EQ(xs[1]["ts"].get<double>(), 1234.568);
  EXPECT_DOUBLE_EQ(xs[1]["dur"].get<double>(), 2000000.0 - 1234.568);
  EXPECT_DOUBLE_EQ(xs[2]["dur"].get<double>(), 0.0);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[1],
            json({{"name", kTraceMemoryCounter}, {"ph", "C"}, {"pid", 0}, {"ts", 250000.0}, {"args", {{"bytes", 9}}}}));
}

TEST(TraceWriter, NamesCategoriesThreadsAndArgs) {
  auto pl = RunPipeline("zb-v", 2, 4);
  ASSERT_TRUE(pl.ok()) << pl.status().ToString();
  const Program& p = pl->lowered;
  json doc = json::parse(TraceJson(HeaderOf(p), RanksOf(p)));
  std::map<std::pair<int, std::string>, int> meta;  // (pid, "process_name"/"thread_name <tid>") -> count
  size_t complete = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M") {
      std::string key = e["name"].get<std::string>();
      if (e.contains("tid"))
        key += " " + std::to_string(e["tid"].get<int>()) + " " + e["args"]["name"].get<std::string>();
      ++meta[{e["pid"].get<int>(), key}];
      continue;
    }
    ASSERT_EQ(e["ph"], "X");
    ++complete;
    const int r = e["pid"], i = e["args"]["index"];
    const Action& a = p.ranks[r][i];
    EXPECT_EQ(e["name"], a.ToString());
    EXPECT_EQ(e["args"]["action"], e["name"]);
    EXPECT_EQ(e["args"]["stage"], a.stage);
    EXPECT_EQ(e["args"]["microbatch"], a.microbatch);
    EXPECT_EQ(e["tid"], IsCompute(a.type) ? kTraceComputeTid : kTraceCommTid);
    EXPECT_EQ(e["cat"], IsCompute(a.type) ? std::string(ActionTypeName(a.type)) : std::string("comm"));
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1000.0 * i);
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 500.0);
    if (IsComm(a.type)) {
      const int peer_stage = a.type == ActionType::kSendF || a.type == ActionType::kRecvB ? a.stage + 1 : a.stage - 1;
      EXPECT_EQ(e["args"]["peer_rank"], p.stage_to_rank[peer_stage]) << e.dump();
    } else {
      EXPECT_FALSE(e["args"].contains("peer_rank"));
      EXPECT_FALSE(e.contains("bind_id"));
    }
  }
  EXPECT_EQ(complete, p.NumActions());
  for (int r = 0; r < p.pp_size; ++r) {
    EXPECT_EQ((meta[{r, "process_name"}]), 1);
    EXPECT_EQ((meta[{r, "process_sort_index"}]), 1);
    EXPECT_EQ((meta[{r, "thread_name 0 compute"}]), 1);
    EXPECT_EQ((meta[{r, "thread_name 1 comm"}]), 1);
  }
  EXPECT_EQ(doc["traceEvents"][0]["args"]["name"], "rank 0 (stages 0,3)");
}

TEST(TraceWriter, FlowIdsPairEachSendWithItsReceive) {
  for (const char* schedule : {"1f1b", "interleaved-1f1b", "zb-v"}) {
    auto pl = RunPipeline(schedule, 4, 8);
    ASSERT_TRUE(pl.ok()) << schedule << ": " << pl.status().ToString();
    const Program& p = pl->lowered;
    json doc = json::parse(TraceJson(HeaderOf(p), RanksOf(p)));
    std::map<int64_t, std::multiset<std::string>> ends;
    std::set<std::string> sends;
    for (const json& e : doc["traceEvents"]) {
      if (e["ph"] != "X" || e["tid"] != kTraceCommTid) continue;
      ASSERT_TRUE(e.contains("bind_id")) << schedule << ": " << e.dump();
      const int64_t id = e["bind_id"];
      EXPECT_GE(id, 1);
      const bool send = e.contains("flow_out");
      EXPECT_NE(send, e.contains("flow_in")) << e.dump();
      ends[id].insert(send ? "out" : "in");
      if (send) sends.insert(e["name"].get<std::string>());
    }
    EXPECT_EQ(ends.size(), sends.size()) << schedule << ": one id per message";
    for (const auto& [id, e] : ends)
      EXPECT_EQ(e, (std::multiset<std::string>{"in", "out"})) << schedule << " flow " << id;
  }
  // The formula, and no flow for compute or out-of-range messages.
  EXPECT_EQ(TraceFlowId(MakeAction(1, ActionType::kSendF, 2), 4, 8), 1 + 1 * 8 + 2);
  EXPECT_EQ(TraceFlowId(MakeAction(2, ActionType::kRecvF, 2), 4, 8), 1 + 1 * 8 + 2);
  EXPECT_EQ(TraceFlowId(MakeAction(2, ActionType::kSendB, 3), 4, 8), 1 + (4 + 2) * 8 + 3);
  EXPECT_EQ(TraceFlowId(MakeAction(1, ActionType::kRecvB, 3), 4, 8), 1 + (4 + 2) * 8 + 3);
  EXPECT_EQ(TraceFlowId(MakeAction(1, ActionType::kF, 3), 4, 8), 0);
  EXPECT_EQ(TraceFlowId(MakeAction(0, ActionType::kRecvF, 0), 4, 8), 0);
  EXPECT_EQ(TraceFlowId(MakeAction(3, ActionType::kRecvB, 0), 4, 8), 0);
  EXPECT_EQ(TraceFlowId(MakeAction(0, ActionType::kSendF, 8), 4, 8), 0);
}

TEST(TraceWriter, OneEventPerLineInAFixedKeyOrder) {
  auto pl = RunPipeline("1f1b", 2, 2);
  ASSERT_TRUE(pl.ok());
  const Program& p = pl->lowered;
  std::vector<TraceRank> ranks = RanksOf(p);
  ranks[0].memory = {{0.0, 1}};
  const std::string text = TraceJson(HeaderOf(p), ranks);
  EXPECT_EQ(text, TraceJson(HeaderOf(p), ranks)) << "deterministic";
  ASSERT_EQ(text.back(), '\n');
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0], "{\"displayTimeUnit\": \"ms\",");
  EXPECT_EQ(lines[1].rfind("\"otherData\": {\"format\":\"pipewright-trace\",\"version\":1,\"kind\":", 0), 0u)
      << lines[1];
  EXPECT_EQ(lines[2], "\"traceEvents\": [");
  EXPECT_EQ(lines.back(), "]}");
  size_t events = 0;
  for (size_t i = 3; i + 1 < lines.size(); ++i, ++events) {
    EXPECT_EQ(lines[i].rfind("{\"name\":", 0), 0u) << lines[i];
    EXPECT_EQ(lines[i].back(), i + 2 < lines.size() ? ',' : '}') << lines[i];
  }
  EXPECT_EQ(events, json::parse(text)["traceEvents"].size());
  const std::string& x = lines[3 + 4];  // after rank 0's four metadata events
  EXPECT_EQ(x.rfind("{\"name\":\"0F0\",\"cat\":\"F\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":0.0,\"dur\":500.0,"
                    "\"args\":{\"action\":\"0F0\",\"stage\":0,\"microbatch\":0,\"index\":0}}",
                    0),
            0u)
      << x;
}

}  // namespace
}  // namespace pw::testing
