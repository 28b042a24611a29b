// The trace view and the trace reader: Chrome/Perfetto JSON with real µs
// durations, process/thread names, flows and memory counters, read back into
// the same timeline; and the measured-vs-simulated diff on a synthetic
// measured trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "schedules/trace_format.h"
#include "tests/viz/viz_util.h"
#include "viz/chrome_trace.h"
#include "viz/diff.h"
#include "viz/html_page.h"
#include "viz/load.h"
#include "viz/trace_reader.h"

namespace pw::viz::testing {
namespace {

TEST(ChromeTrace, EventsFollowTheTraceFormat) {
  auto s = SimulateSchedule("1f1b", 4, 8);
  ASSERT_TRUE(s.ok());
  nlohmann::json doc = nlohmann::json::parse(ChromeTraceJson(s->timeline, "abc"));
  EXPECT_EQ(doc["otherData"]["format"], kTraceFormat);
  EXPECT_EQ(doc["otherData"]["plan_hash"], "abc");
  int processes = 0, threads = 0, compute = 0, comm = 0, flow_out = 0, flow_in = 0, counters = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") ++processes;
    if (e["ph"] == "M" && e["name"] == "thread_name") ++threads;
    if (e["ph"] == "C") ++counters;
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["name"], e["args"]["action"]);
    if (e["tid"] == kTraceComputeTid) {
      ++compute;
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), e["cat"] == "B" ? 2e6 : 1e6) << e.dump();  // 1 s = 1e6 µs
    } else {
      ++comm;
      EXPECT_EQ(e["cat"], "comm");
      EXPECT_GE(e["bind_id"].get<int64_t>(), 1) << "flow ids are 1-based, as in measured traces: " << e.dump();
      EXPECT_TRUE(e["args"].contains("peer_rank")) << e.dump();
    }
    if (e.contains("flow_out")) ++flow_out;
    if (e.contains("flow_in")) ++flow_in;
  }
  EXPECT_EQ(processes, 4);
  EXPECT_EQ(threads, 8);
  EXPECT_EQ(compute, 4 * 8 * 2);
  EXPECT_EQ(comm, 2 * 2 * 3 * 8);  // SEND + RECV, forward + backward, 3 links, 8 microbatches
  EXPECT_EQ(flow_out, 48);
  EXPECT_EQ(flow_in, 48);
  EXPECT_EQ(counters, 4 * (1 + 16));  // start point + one per compute
}

TEST(ChromeTrace, RoundTripsThroughTheReader) {
  for (const char* name : {"1f1b", "interleaved-1f1b", "zb-v"}) {
    auto s = SimulateSchedule(name, 4, 8);
    ASSERT_TRUE(s.ok()) << name;
    const Timeline& a = s->timeline;
    StatusOr<Timeline> b = ParseTrace(ChromeTraceJson(a), "t.json");
    ASSERT_TRUE(b.ok()) << name << ": " << b.status().ToString();
    EXPECT_EQ(b->kind, "simulated");
    EXPECT_EQ(b->stage_to_rank, a.stage_to_rank) << name;
    EXPECT_DOUBLE_EQ(b->makespan_s, a.makespan_s) << name;
    EXPECT_DOUBLE_EQ(b->bubble_ratio, a.bubble_ratio) << name;
    EXPECT_EQ(b->messages.size(), a.messages.size()) << name;
    EXPECT_EQ(b->memory_unit_name, a.memory_unit_name);
    for (int r = 0; r < a.pp_size; ++r) {
      ASSERT_EQ(b->ranks[r].compute.size(), a.ranks[r].compute.size());
      for (size_t i = 0; i < a.ranks[r].compute.size(); ++i) {
        EXPECT_EQ(b->ranks[r].compute[i].action, a.ranks[r].compute[i].action) << name << " rank " << r;
        EXPECT_NEAR(b->ranks[r].compute[i].start, a.ranks[r].compute[i].start, 1e-9);
        EXPECT_NEAR(b->ranks[r].compute[i].end, a.ranks[r].compute[i].end, 1e-9);
      }
      EXPECT_EQ(b->ranks[r].peak_memory_bytes, a.ranks[r].peak_memory_bytes);
    }
    Program p = TimelineProgram(*b);
    EXPECT_EQ(p.ranks, s->pipeline.lowered.ranks) << name << ": the list order survives the trace";
  }
}

TEST(TraceReader, ErrorsNameThePlace) {
  struct {
    const char* text;
    const char* want;
  } cases[] = {
      {"{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 1", "not valid JSON"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 1}]}",
       "traceEvents[0]: 'X' event on the compute/comm thread without args.action"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"0Q0\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 1, "
       "\"args\": {\"action\": \"0Q0\"}}]}",
       "traceEvents[0].args.action"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"0F0\", \"pid\": 0, \"tid\": 1, \"ts\": 0, \"dur\": 1, "
       "\"args\": {\"action\": \"0F0\"}}]}",
       "traceEvents[0].tid"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"0F0\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 1, "
       "\"args\": {\"action\": \"0F0\"}}, {\"ph\": \"X\", \"name\": \"0F1\", \"pid\": 1, \"tid\": 0, \"ts\": 0, "
       "\"dur\": 1, \"args\": {\"action\": \"0F1\"}}]}",
       "stage 0 appears on ranks 0 and 1"},
  };
  for (const auto& c : cases) {
    StatusOr<Timeline> t = ParseTrace(c.text, "t.json");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.status().message().find(c.want), std::string::npos) << t.status().ToString();
    EXPECT_EQ(t.status().message().rfind("t.json: ", 0), 0u) << t.status().ToString();
  }
}

// TEST FIXTURE, not a measurement: a "measured" trace synthesised by
// simulating the same lowered 1F1B program with perturbed durations (stage 1
// forward 25% slower, stage 2 backward 10% faster), written in the trace
// format with kind "measured".
std::string SyntheticMeasuredTrace(const ::pw::testing::Pipeline& pl) {
  StageCosts costs = UniformCosts(pl.lowered.num_stages);
  costs.stages[1].f = 1.25;
  costs.stages[2].b = 1.8;
  StatusOr<SimResult> sim = Simulate(pl.lowered, costs);
  EXPECT_TRUE(sim.ok());
  Timeline t =
      TimelineFromSimulation(pl.lowered, costs, *sim, "TEST FIXTURE: synthetic measured 1F1B", "1f1b", std::nullopt);
  t.kind = "measured";
  return ChromeTraceJson(t);
}

TEST(Diff, MeasuredVsSimulatedOnASyntheticTrace) {
  auto s = SimulateSchedule("1f1b", 4, 8);
  ASSERT_TRUE(s.ok());
  StatusOr<Timeline> measured = ParseTrace(SyntheticMeasuredTrace(s->pipeline), "fixture.json");
  ASSERT_TRUE(measured.ok()) << measured.status().ToString();
  EXPECT_EQ(measured->kind, "measured");
  StatusOr<TimelineDiff> d = DiffTimelines(*measured, s->timeline);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->actions.size(), 64u);
  for (const ActionDiff& a : d->actions) {
    double want = a.action.type == ActionType::kB ? 2.0 : 1.0;
    if (a.action.stage == 1 && a.action.type == ActionType::kF) want = 1.25;
    if (a.action.stage == 2 && a.action.type == ActionType::kB) want = 1.8;
    EXPECT_NEAR(a.measured_dur, want, 1e-9) << a.action.ToString();
    EXPECT_NEAR(a.simulated_dur, a.action.type == ActionType::kB ? 2.0 : 1.0, 1e-9);
  }
  // Stage 1's slow forwards make the measured step longer than simulated;
  // ranks other than 1 wait more (larger bubble), rank 1 is busier.
  EXPECT_GT(d->measured_makespan_s, d->simulated_makespan_s);
  EXPECT_NEAR(d->ranks[1].measured_busy_s, 24 + 8 * 0.25, 1e-9);
  EXPECT_NEAR(d->ranks[2].measured_busy_s, 24 - 8 * 0.2, 1e-9);
  EXPECT_GT(d->ranks[0].measured_bubble, d->ranks[0].simulated_bubble);
  // Both critical paths end at the makespan, and run through time without gaps
  // the path does not explain.
  for (const auto* path : {&d->measured_critical, &d->simulated_critical}) {
    ASSERT_FALSE(path->empty());
    EXPECT_DOUBLE_EQ(path->front().start, 0.0);
    for (size_t i = 1; i < path->size(); ++i) EXPECT_LE((*path)[i - 1].end, (*path)[i].start + 1e-9);
  }
  EXPECT_DOUBLE_EQ(d->measured_critical.back().end, d->measured_makespan_s);
  EXPECT_DOUBLE_EQ(d->simulated_critical.back().end, d->simulated_makespan_s);
  bool through_stage1_f = false;
  for (const CriticalStep& c : d->measured_critical)
    through_stage1_f |= c.action.stage == 1 && c.action.type == ActionType::kF;
  EXPECT_TRUE(through_stage1_f) << "the slowed forwards of stage 1 are on the measured critical path:\n"
                                << RenderDiffText(*d);
  std::string text = RenderDiffText(*d);
  EXPECT_NE(text.find("1F3"), std::string::npos);
  EXPECT_NE(text.find("+25.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("critical path, measured"), std::string::npos);
  std::string html = RenderDiffHtml(*measured, s->timeline, *d);
  EXPECT_EQ(FindElements(html, "rect", "blk").size(), 128u);  // both timelines
}

TEST(Diff, RefusesDifferentSchedules) {
  auto a = SimulateSchedule("1f1b", 4, 8);
  auto b = SimulateSchedule("gpipe", 4, 8);
  auto c = SimulateSchedule("1f1b", 2, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  StatusOr<TimelineDiff> d = DiffTimelines(a->timeline, c->timeline);
  EXPECT_FALSE(d.ok());
  // Same compute actions per rank (GPipe and 1F1B differ only in order): fine.
  EXPECT_TRUE(DiffTimelines(a->timeline, b->timeline).ok());
  auto zb = SimulateSchedule("zb-h1", 4, 8);
  ASSERT_TRUE(zb.ok());
  d = DiffTimelines(zb->timeline, a->timeline);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("rank 0: '0I"), std::string::npos) << d.status().ToString();
}

}  // namespace
}  // namespace pw::viz::testing
