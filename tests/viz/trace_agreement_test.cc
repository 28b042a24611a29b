// The simulated trace (`pipewright show PLAN --format trace`,
// viz/chrome_trace.h) and the measured one (`pipewright run --trace`,
// executor/runtime/measured_trace.h) go through one writer: fed the same spans, they
// write the same events and headers, and the reader gets the same timeline
// back from both. Differences allowed by design: otherData.kind and title, and
// the memory counter/unit (the executor does not sample memory).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "executor/comm/loopback_communicator.h"
#include "executor/runtime/measured_trace.h"
#include "schedules/trace_format.h"
#include "tests/viz/viz_util.h"
#include "viz/chrome_trace.h"
#include "viz/trace_reader.h"

namespace pw::viz::testing {
namespace {

using nlohmann::json;

// Runs WriteMeasuredTrace on every rank (loopback threads) with the
// timeline's own spans; returns the file rank 0 wrote.
std::string MeasuredTraceOf(const Simulated& s, const std::string& path) {
  const Timeline& t = s.timeline;
  std::vector<std::vector<exec::ActionSpan>> spans(t.pp_size);
  for (int r = 0; r < t.pp_size; ++r) {
    spans[r].resize(s.pipeline.lowered.ranks[r].size());
    for (const auto* lane : {&t.ranks[r].compute, &t.ranks[r].comm})
      for (const TimelineBlock& b : *lane) spans[r][b.index] = {b.index, b.start, b.end};
  }
  auto hub = std::make_shared<exec::LoopbackHub>(t.pp_size, 60.0);
  std::vector<Status> st(t.pp_size, Status::Ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < t.pp_size; ++r)
    threads.emplace_back([&, r] {
      exec::LoopbackCommunicator comm(hub, r);
      st[r] = exec::WriteMeasuredTrace(s.plan, spans[r], comm, path, "measured title");
    });
  for (auto& th : threads) th.join();
  for (int r = 0; r < t.pp_size; ++r) EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r].ToString();
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<json> EventsExceptCounters(const json& doc) {
  std::vector<json> out;
  for (const json& e : doc["traceEvents"])
    if (e["ph"] != "C") out.push_back(e);
  return out;
}

TEST(TraceAgreement, SimulatedAndMeasuredWritersAgreeOnTheSameSpans) {
  const std::string dir = ::testing::TempDir() + "/pw_trace_agreement";
  std::filesystem::create_directories(dir);
  for (const char* schedule : {"1f1b", "interleaved-1f1b", "zb-v", "zb-h1"}) {
    SCOPED_TRACE(schedule);
    auto s = SimulateSchedule(schedule, 4, 8);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    const std::string hash = PlanHash(s->plan);
    const std::string simulated = ChromeTraceJson(s->timeline, hash);
    const std::string measured = MeasuredTraceOf(*s, dir + "/" + schedule + ".json");
    ASSERT_FALSE(measured.empty());

    // The files: same layout, same header fields, same events (memory
    // counters only in the simulated one).
    EXPECT_EQ(measured.rfind("{\"displayTimeUnit\": \"ms\",\n\"otherData\": {", 0), 0u) << measured.substr(0, 200);
    json sim = json::parse(simulated), mea = json::parse(measured);
    EXPECT_EQ(sim["otherData"]["kind"], "simulated");
    EXPECT_EQ(mea["otherData"]["kind"], "measured");
    EXPECT_EQ(mea["otherData"]["title"], "measured title");
    EXPECT_TRUE(sim["otherData"].contains("memory_unit")) << "unit costs: stage activations";
    for (const char* key : {"format", "version", "schedule", "pp_size", "num_stages", "num_microbatches",
                            "stage_to_rank", "memory_limit_bytes", "plan_hash"}) {
      ASSERT_TRUE(sim["otherData"].contains(key)) << key;
      EXPECT_EQ(sim["otherData"][key], mea["otherData"][key]) << key;
    }
    EXPECT_EQ(mea["otherData"]["plan_hash"], hash);
    const std::vector<json> se = EventsExceptCounters(sim), me = EventsExceptCounters(mea);
    ASSERT_EQ(se.size(), me.size());
    for (size_t i = 0; i < se.size(); ++i) ASSERT_EQ(se[i], me[i]) << "event " << i;
    size_t counters = 0;
    for (const json& e : mea["traceEvents"]) counters += e["ph"] == "C";
    EXPECT_EQ(counters, 0u);

    // What the reader gets from each: the same timeline.
    TraceInfo si, mi;
    StatusOr<Timeline> a = ParseTrace(simulated, "sim.json", &si);
    StatusOr<Timeline> b = ParseTrace(measured, "measured.json", &mi);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(a->kind, "simulated");
    EXPECT_EQ(b->kind, "measured");
    EXPECT_EQ(si.plan_hash, mi.plan_hash);
    EXPECT_EQ(a->schedule, b->schedule);
    EXPECT_EQ(a->pp_size, b->pp_size);
    EXPECT_EQ(a->num_stages, b->num_stages);
    EXPECT_EQ(a->num_microbatches, b->num_microbatches);
    EXPECT_EQ(a->stage_to_rank, b->stage_to_rank);
    EXPECT_EQ(a->memory_limit_bytes, b->memory_limit_bytes);
    EXPECT_EQ(a->makespan_s, b->makespan_s);
    EXPECT_EQ(a->steady_step_s, b->steady_step_s);
    EXPECT_EQ(a->bubble_ratio, b->bubble_ratio);
    ASSERT_EQ(a->messages.size(), b->messages.size());
    for (size_t k = 0; k < a->messages.size(); ++k) {
      EXPECT_EQ(a->messages[k].send, b->messages[k].send);
      EXPECT_EQ(a->messages[k].recv, b->messages[k].recv);
      EXPECT_EQ(a->messages[k].src_rank, b->messages[k].src_rank);
      EXPECT_EQ(a->messages[k].dst_rank, b->messages[k].dst_rank);
      EXPECT_EQ(a->messages[k].sent_s, b->messages[k].sent_s);
      EXPECT_EQ(a->messages[k].available_s, b->messages[k].available_s);
    }
    for (int r = 0; r < a->pp_size; ++r) {
      EXPECT_EQ(a->ranks[r].stages, b->ranks[r].stages);
      for (auto lane : {&TimelineRank::compute, &TimelineRank::comm}) {
        const auto& x = a->ranks[r].*lane;
        const auto& y = b->ranks[r].*lane;
        ASSERT_EQ(x.size(), y.size()) << "rank " << r;
        for (size_t i = 0; i < x.size(); ++i) {
          EXPECT_EQ(x[i].action, y[i].action) << "rank " << r;
          EXPECT_EQ(x[i].index, y[i].index);
          EXPECT_EQ(x[i].start, y[i].start);
          EXPECT_EQ(x[i].end, y[i].end);
        }
      }
      EXPECT_TRUE(b->ranks[r].memory.empty());
    }
    EXPECT_EQ(TimelineProgram(*b).ranks, s->pipeline.lowered.ranks);
  }
  std::filesystem::remove_all(dir);
}

// Measured spans are not on a grid: both writers round them the same way
// (µs to the nanosecond), and the measured file reads back within 1 ns.
TEST(TraceAgreement, MeasuredTimesRoundLikeSimulatedOnes) {
  auto s = SimulateSchedule("1f1b", 2, 4);
  ASSERT_TRUE(s.ok());
  // Perturb every block by an irrational-ish amount, in the timeline itself,
  // so both writers see the same spans.
  Simulated odd = *s;
  for (TimelineRank& tr : odd.timeline.ranks)
    for (auto* lane : {&tr.compute, &tr.comm})
      for (TimelineBlock& b : *lane) {
        b.start = b.start * 1.0000123456789 + 1e-7 / 3;
        b.end = b.end * 1.0000123456789 + 2e-7 / 3;
      }
  const std::string dir = ::testing::TempDir() + "/pw_trace_agreement_round";
  std::filesystem::create_directories(dir);
  json sim = json::parse(ChromeTraceJson(odd.timeline, PlanHash(odd.plan)));
  json mea = json::parse(MeasuredTraceOf(odd, dir + "/t.json"));
  EXPECT_EQ(EventsExceptCounters(sim), EventsExceptCounters(mea));
  StatusOr<Timeline> b = ParseTrace(mea.dump(), "m.json");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  for (int r = 0; r < b->pp_size; ++r)
    for (size_t i = 0; i < b->ranks[r].compute.size(); ++i) {
      EXPECT_NEAR(b->ranks[r].compute[i].start, odd.timeline.ranks[r].compute[i].start, 1e-9);
      EXPECT_NEAR(b->ranks[r].compute[i].end, odd.timeline.ranks[r].compute[i].end, 1e-9);
    }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw::viz::testing
