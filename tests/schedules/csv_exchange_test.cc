// PyTorch CSV exchange both ways (schedules/csv.h, docs/PLAN_FORMAT.md
// "PyTorch CSV"): our compute_comms export follows PyTorch's loader rules and
// reads back to the same program; files PyTorch itself wrote
// (tests/testdata/torch/, made by tests/schedules/torch_csv.py with torch
// 2.15.0) import, validate and simulate; the Schedule1F1B numbering defect is
// reported; malformed input names the row and column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "schedules/csv.h"
#include "schedules/simulate.h"
#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

std::string Fixture(const std::string& name) { return std::string(PW_SOURCE_DIR) + "/tests/testdata/torch/" + name; }

std::vector<std::vector<std::string>> Cells(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    rows.emplace_back();
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, ',');) rows.back().push_back(c);
  }
  return rows;
}

// PyTorch's compute_comms rules, restated from torch 2.15's
// `_validate_send_waits` and `_prepare_schedule_with_comms`: no empty cell;
// on each row every SEND_F/SEND_B (stage s, microbatch k) is followed later
// by exactly one sWAIT_SEND_F<k>/sWAIT_SEND_B<k> and no wait comes without
// its send; REDUCE_GRAD is followed by its stage's WAIT_REDUCE_GRAD before
// any other REDUCE_GRAD and before the row ends. Returns "" or the breach.
std::string TorchCommsRuleBreach(const std::string& csv) {
  const auto rows = Cells(csv);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::set<std::string> pending;
    std::string reducing;
    for (const std::string& c : rows[r]) {
      if (c.empty()) return "row " + std::to_string(r + 1) + ": empty cell";
      for (const char* kind : {"SEND_F", "SEND_B"}) {
        const std::string k(kind), wait = "WAIT_" + k;
        size_t w = c.find(wait), s = c.find(k);
        if (w != std::string::npos) {
          const std::string key = c.substr(0, w) + k + c.substr(w + wait.size());
          if (!pending.erase(key)) return "row " + std::to_string(r + 1) + ": " + c + " without its send";
        } else if (s != std::string::npos && c.find("RECV") == std::string::npos) {
          if (!pending.insert(c).second) return "row " + std::to_string(r + 1) + ": duplicate " + c;
        }
      }
      if (c.find("WAIT_REDUCE_GRAD") != std::string::npos) {
        if (reducing != c.substr(0, c.find('W'))) return "row " + std::to_string(r + 1) + ": unmatched " + c;
        reducing.clear();
      } else if (c.find("REDUCE_GRAD") != std::string::npos) {
        if (!reducing.empty()) return "row " + std::to_string(r + 1) + ": two reductions pending at " + c;
        reducing = c.substr(0, c.find('R'));
      }
    }
    if (!pending.empty()) return "row " + std::to_string(r + 1) + ": no wait for " + *pending.begin();
    if (!reducing.empty()) return "row " + std::to_string(r + 1) + ": no WAIT_REDUCE_GRAD for stage " + reducing;
  }
  return "";
}

void ExpectSameProgram(const Program& a, const Program& b) {
  EXPECT_EQ(a.pp_size, b.pp_size);
  EXPECT_EQ(a.num_stages, b.num_stages);
  EXPECT_EQ(a.num_microbatches, b.num_microbatches);
  EXPECT_EQ(a.stage_to_rank, b.stage_to_rank);
  EXPECT_EQ(a.dp_size, b.dp_size);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) EXPECT_TRUE(a.ranks[r] == b.ranks[r]) << "rank " << r;
}

TEST(CsvExchange, ComputeCommsRoundTripKeepsActionsAndMakespan) {
  const std::vector<std::tuple<std::string, int, int>> cases = {
      {"1f1b", 4, 8}, {"interleaved-1f1b", 4, 8}, {"zb-h1", 4, 8}, {"zb-v", 4, 8}, {"dualpipev", 4, 8}, {"1f1b", 3, 2}};
  for (const auto& [name, P, m] : cases) {
    SCOPED_TRACE(name);
    auto pl = RunPipeline(name, P, m);
    ASSERT_TRUE(pl.ok()) << pl.status().ToString();
    const std::string csv = ScheduleToCsv(pl->lowered, CsvFormat::kComputeComms);
    EXPECT_EQ(TorchCommsRuleBreach(csv), "");
    std::vector<std::string> notes;
    auto back = ParseScheduleCsv(csv, name + ".csv", &notes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ExpectSameProgram(pl->lowered, *back);
    ASSERT_EQ(notes.size(), 1u);  // the dropped waits, and nothing else
    EXPECT_NE(notes[0].find("WAIT_SEND_F"), std::string::npos) << notes[0];
    ValidateOptions eager;
    eager.rendezvous = false;
    PW_ASSERT_OK(ValidateProgram(*back, eager));
    auto sim = Simulate(*back, UniformCosts(back->num_stages));
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    std::printf("%-17s P=%d m=%d: makespan %.4g s (plan) vs %.4g s (read back), |diff| %.3g\n", name.c_str(), P, m,
                pl->sim.makespan_s, sim->makespan_s, std::fabs(pl->sim.makespan_s - sim->makespan_s));
    EXPECT_DOUBLE_EQ(sim->makespan_s, pl->sim.makespan_s);
    // compute_only of the same program is the compute subsequence.
    auto only = ParseScheduleCsv(ScheduleToCsv(pl->lowered, CsvFormat::kComputeOnly));
    ASSERT_TRUE(only.ok());
    ExpectSameProgram(pl->compute, *only);
  }
}

TEST(CsvExchange, ReduceGradGetsItsWaitAndIsKeptWithDataParallel) {
  auto pl = RunPipeline("interleaved-1f1b", 2, 4);
  ASSERT_TRUE(pl.ok());
  Program dp = pl->lowered;
  dp.dp_size = 2;
  auto with_reduce = AddReduceGrad(dp);
  ASSERT_TRUE(with_reduce.ok()) << with_reduce.status().ToString();
  const std::string csv = ScheduleToCsv(*with_reduce, CsvFormat::kComputeComms);
  EXPECT_EQ(TorchCommsRuleBreach(csv), "");
  EXPECT_NE(csv.find("0REDUCE_GRAD,0WAIT_REDUCE_GRAD"), std::string::npos) << csv;
  CsvReadOptions keep;
  keep.dp_size = 2;
  auto back = ParseScheduleCsv(csv, "dp.csv", nullptr, keep);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameProgram(*with_reduce, *back);
  // Read with one replica, the reductions are dropped with a note.
  std::vector<std::string> notes;
  auto dropped = ParseScheduleCsv(csv, "dp.csv", &notes);
  ASSERT_TRUE(dropped.ok());
  ExpectSameProgram(pl->lowered, *dropped);
  bool said = false;
  for (const auto& n : notes) said |= n.find("dropped 4 REDUCE_GRAD (stages 0,1,2,3)") != std::string::npos;
  EXPECT_TRUE(said);
}

// Every PyTorch-made fixture imports, validates and simulates, and its
// compute_only and compute_comms dumps hold the same compute order (two
// outputs of PyTorch's lowering, read by our importer, agree).
TEST(CsvExchange, TorchMadeFixturesImportValidateAndAgree) {
  for (const std::string name :
       {"interleaved1f1b_p4_v2_m8", "interleavedzb_p4_v2_m8", "zbv_p4_m8", "dualpipev_p4_m8"}) {
    SCOPED_TRACE(name);
    std::vector<std::string> notes;
    auto comms = ReadScheduleCsv(Fixture("torch_" + name + "_compute_comms.csv"), &notes);
    ASSERT_TRUE(comms.ok()) << comms.status().ToString();
    auto only = ReadScheduleCsv(Fixture("torch_" + name + "_compute_only.csv"));
    ASSERT_TRUE(only.ok()) << only.status().ToString();
    std::string all_notes;
    for (const auto& n : notes) all_notes += n + "\n";
    EXPECT_NE(all_notes.find("UNSHARD"), std::string::npos) << all_notes;
    EXPECT_NE(all_notes.find("WAIT_SEND_B"), std::string::npos) << all_notes;
    EXPECT_NE(all_notes.find("REDUCE_GRAD (stages 0,1,2,3,4,5,6,7)"), std::string::npos) << all_notes;
    EXPECT_EQ(comms->num_stages, 8);
    EXPECT_EQ(comms->num_microbatches, 8);
    EXPECT_TRUE(comms->HasComms());
    ValidateOptions eager;
    eager.rendezvous = false;
    PW_ASSERT_OK(ValidateProgram(*comms, eager));
    for (int r = 0; r < comms->pp_size; ++r) {
      std::vector<Action> compute;
      for (const Action& a : comms->ranks[r])
        if (IsCompute(a.type)) compute.push_back(a);
      EXPECT_TRUE(compute == only->ranks[r]) << "rank " << r;
    }
    const StageCosts unit = UniformCosts(8);
    auto sim_comms = Simulate(*comms, unit);
    ASSERT_TRUE(sim_comms.ok()) << sim_comms.status().ToString();
    auto run_only = SimulateOrder(*only, unit);
    ASSERT_TRUE(run_only.ok()) << run_only.status().ToString();
    std::printf("torch %-26s makespan %.4g s (PyTorch's lowering) vs %.4g s (ours), bubble %.4f\n", name.c_str(),
                sim_comms->makespan_s, run_only->sim.makespan_s, sim_comms->bubble_ratio);
    // Same compute order and unit costs: lowering changes no compute time.
    EXPECT_DOUBLE_EQ(sim_comms->makespan_s, run_only->sim.makespan_s);
  }
}

TEST(CsvExchange, DualPipeVFixtureKeepsItsOverlappedPairs) {
  auto p = ReadScheduleCsv(Fixture("torch_dualpipev_p4_m8_compute_comms.csv"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  int pairs = 0;
  for (const auto& list : p->ranks)
    for (const Action& a : list) pairs += IsOverlap(a.type);
  EXPECT_GT(pairs, 0);
  // Written back, PyTorch's spelling is kept.
  EXPECT_NE(ScheduleToCsv(*p, CsvFormat::kComputeComms).find("(0F7;7B3)OVERLAP_F_B"), std::string::npos);
}

// PyTorch's Schedule1F1B._get_pipeline_order (torch 2.15.0) numbers the last
// rank's forwards 3F1..3F8 (P = 4, m = 8) while its backwards are 3B0..3B7.
TEST(CsvExchange, Torch1F1BLastRankNumberingIsReportedAndRepaired) {
  std::vector<std::string> notes;
  auto p = ReadScheduleCsv(Fixture("torch_1f1b_p4_m8_compute_only.csv"), &notes);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::string warning;
  for (const auto& n : notes)
    if (n.rfind("warning: ", 0) == 0) warning += n;
  std::printf("%s\n", warning.c_str());
  for (const char* want : {"row 4, column 1", "stage 3 (rank 3)", "'3F1' where '3F0' is expected", "3F1..3F8",
                           "Schedule1F1B._get_pipeline_order", "read as 3F0..3F7"})
    EXPECT_NE(warning.find(want), std::string::npos) << want << "\n" << warning;
  EXPECT_EQ(p->num_microbatches, 8);
  // After the repair it is exactly our 1F1B.
  auto ours = RunPipeline("1f1b", 4, 8);
  ASSERT_TRUE(ours.ok());
  ExpectSameProgram(ours->compute, *p);
  // The same numbering in a file with messages is refused, not repaired.
  auto comms = ParseScheduleCsv("0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F1,1B0,1SEND_B0\n", "c.csv");
  ASSERT_FALSE(comms.ok());
  EXPECT_NE(comms.status().message().find("c.csv: row 2, column 2: stage 1 (rank 1)"), std::string::npos)
      << comms.status().message();
}

TEST(CsvExchange, MalformedRuntimeActionsNameRowAndColumn) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"0F0,0SEND_F0,0WAIT_SEND_F1\n1RECV_F0,1F0\n", "m.csv: row 1, column 3: '0WAIT_SEND_F1' waits for '0SEND_F1'"},
      {"0F0,0WAIT_SEND_F0,0SEND_F0\n1RECV_F0,1F0\n", "m.csv: row 1, column 2: '0WAIT_SEND_F0' waits for '0SEND_F0'"},
      {"0UNSHARD3,0F0\n", "m.csv: row 1, column 1: bad action '0UNSHARD3': UNSHARD takes no microbatch"},
      {"0F0,0WAIT_SEND_B\n", "m.csv: row 1, column 2: bad action '0WAIT_SEND_B': WAIT_SEND_B is written"},
      {"0F0,,1UNSHARD\n1F0\n", "m.csv: row 2, column 1: stage 1 appears on rows 1 and 2"},
      {"0F0,0REDUCE_GRAD3\n", "m.csv: row 1, column 2: bad action '0REDUCE_GRAD3'"},
      {"0F0,(0F1;1F0)OVERLAP_F_B\n", "m.csv: row 1, column 2: bad action"},
  };
  for (const Case& c : cases) {
    auto p = ParseScheduleCsv(c.text, "m.csv");
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_NE(p.status().message().find(c.want), std::string::npos) << p.status().message();
  }
}

// Found by the csv fuzz target (30-minute run): a stage named only by a
// dropped runtime action (3WAIT_REDUCE_GRAD) was accepted, vanished from the
// program, and the CSV written from it did not read back. It is refused.
TEST(CsvExchange, StageWithOnlyDroppedRuntimeActionsIsRefused) {
  const std::string text = "0F0,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n1F0,1B0\n4F0,2F0,2B0,3WAIT_REDUCE_GRAD\n";
  auto p = ParseScheduleCsv(text, "fz.csv");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("stage 3 (row 3) has only runtime actions that pipewright drops"),
            std::string::npos)
      << p.status().message();
}

// Fuzzing found it: a last row holding only a dropped WAIT_REDUCE_GRAD, of a
// stage above every stage with compute, after empty rows, read as extra ranks
// with no actions, and the written CSV (without those rows) did not read back
// as the same program.
TEST(CsvExchange, TrailingRowWithOnlyDroppedRuntimeActionsIsRefused) {
  const std::string text =
      "0F0,0F1,0B0,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\r\n1F0,1B0,1F1,1B1\r\n\r\n\r\n\r\n3WAIT_REDUCE_GRAD\r\n";
  auto p = ParseScheduleCsv(text, "fz.csv");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("fz.csv: stage 3 (row 6) has only runtime actions that pipewright drops"),
            std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("stages with compute: 0..1"), std::string::npos) << p.status().message();
  // Without that row the same file reads, and its written form reads back
  // as the same program (interior empty rows included).
  const std::string kept = "0F0,0F1,0B0,0B1\n\n1F0,1B0,1F1,1B1\n";
  auto q = ParseScheduleCsv(kept, "ok.csv");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->pp_size, 3);
  auto back = ParseScheduleCsv(ScheduleToCsv(*q, CsvFormat::kComputeOnly), "back.csv");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pp_size, q->pp_size);
  EXPECT_EQ(back->ranks, q->ranks);
}

}  // namespace
}  // namespace pw::testing
