// `pipewright show` on bad inputs, through the real binary: a clear error
// naming the place, a non-zero exit, and no (partial) output file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "plan/plan.h"
#include "tests/viz/viz_util.h"
#include "viz/load.h"

#ifndef PW_CLI_PATH
#error "PW_CLI_PATH (the pipewright binary) must be defined by the build"
#endif

namespace pw::viz::testing {
namespace {

class ShowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pw_viz_cli_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // Runs pipewright with `args`; returns the exit code, stderr in *err.
  int Run(const std::string& args, std::string* err) {
    std::string err_path = dir_ + "/stderr.txt";
    int rc = std::system((std::string(PW_CLI_PATH) + " " + args + " > /dev/null 2> '" + err_path + "'").c_str());
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  bool Exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
  }
  std::string dir_;
};

std::string PlanText(const std::string& schedule, int P, int m) {
  auto s = SimulateSchedule(schedule, P, m);
  EXPECT_TRUE(s.ok());
  return PlanToJson(s->plan);
}

TEST_F(ShowCli, GoodInputsWriteEveryFormat) {
  std::string plan = Write("p.json", PlanText("1f1b", 4, 8));
  for (const char* f : {"ascii", "svg", "html", "trace"}) {
    std::string out = dir_ + "/out." + f, err;
    EXPECT_EQ(Run(std::string("show ") + plan + " --format " + f + " -o " + out, &err), 0) << f << ": " << err;
    EXPECT_TRUE(Exists(out)) << f;
  }
  // The written trace is itself a valid `show` input.
  std::string err;
  EXPECT_EQ(Run("show " + dir_ + "/out.trace --format ascii", &err), 0) << err;
}

TEST_F(ShowCli, TruncatedPlanNamesTheFileAndWritesNothing) {
  std::string text = PlanText("1f1b", 4, 8);
  std::string plan = Write("trunc.json", text.substr(0, text.size() / 2));
  std::string out = dir_ + "/out.html", err;
  EXPECT_EQ(Run("show " + plan + " --format html -o " + out, &err), 2);
  EXPECT_NE(err.find("trunc.json: not valid JSON (truncated or corrupt file?)"), std::string::npos) << err;
  EXPECT_FALSE(Exists(out));
}

TEST_F(ShowCli, UnknownActionInCsvNamesRowAndColumn) {
  std::string csv = Write("s.csv", "0F0,0F1,0B0,0B1\n1F0,1X1,1B0,1B1\n");
  std::string out = dir_ + "/out.svg", err;
  EXPECT_EQ(Run("show " + csv + " --format svg -o " + out, &err), 2);
  EXPECT_NE(err.find("s.csv: row 2, column 2"), std::string::npos) << err;
  EXPECT_NE(err.find("1X1"), std::string::npos) << err;
  EXPECT_FALSE(Exists(out));
}

TEST_F(ShowCli, PlanWhoseRanksDisagreeNamesRankAndAction) {
  // Rank 1 receives microbatch 1 before microbatch 0, but rank 0 sends 0
  // first: the FIFO channel pairs the wrong messages.
  auto s = SimulateSchedule("1f1b", 2, 2);
  ASSERT_TRUE(s.ok());
  Plan plan = s->plan;
  auto& r1 = plan.ranks[1];
  int first = -1, second = -1;
  for (int i = 0; i < static_cast<int>(r1.size()); ++i)
    if (r1[i].type == ActionType::kRecvF) (first < 0 ? first : second) = i;
  ASSERT_GE(second, 0);
  std::swap(r1[first].microbatch, r1[second].microbatch);
  std::string path = Write("disagree.json", PlanToJson(plan));
  std::string out = dir_ + "/out.txt", err;
  EXPECT_EQ(Run("show " + path + " -o " + out, &err), 2);
  EXPECT_NE(err.find("disagree.json: "), std::string::npos) << err;
  EXPECT_NE(err.find("rank 1, action"), std::string::npos) << err;
  EXPECT_NE(err.find("<-- ERROR HERE"), std::string::npos) << err;
  EXPECT_FALSE(Exists(out));
}

TEST_F(ShowCli, MeasuredTraceDiffAgainstItsPlan) {
  std::string plan = Write("p.json", PlanText("1f1b", 4, 8));
  std::string trace = dir_ + "/t.json", err;
  ASSERT_EQ(Run("show " + plan + " --format trace -o " + trace, &err), 0) << err;
  std::string out = dir_ + "/diff.html";
  EXPECT_EQ(Run("show " + trace + " --plan " + plan + " --format html -o " + out, &err), 0) << err;
  EXPECT_TRUE(Exists(out));
  EXPECT_EQ(Run("show " + trace + " --plan " + plan + " --format trace -o " + dir_ + "/x", &err), 2);
  EXPECT_NE(err.find("--format trace"), std::string::npos) << err;
  std::string other = Write("p2.json", PlanText("1f1b", 2, 8));
  EXPECT_EQ(Run("show " + trace + " --plan " + other, &err), 2);
  EXPECT_NE(err.find("the plan has 2 ranks, the trace 4"), std::string::npos) << err;
}

// `pipewright report -o DIR`: DIR (and its parents) need not exist.
TEST_F(ShowCli, ReportCreatesAMissingOutputDirectory) {
  const std::string out = dir_ + "/bench/new/results";
  std::string err;
  const std::string sweep = " --schedules 1f1b,zb-h1 --pp 4 --microbatches 8 --model none";
  ASSERT_EQ(Run("report -o " + out + sweep, &err), 0) << err;
  EXPECT_TRUE(Exists(out + "/schedule_report.md"));
  // Into the existing directory again: fine.
  EXPECT_EQ(Run("report -o " + out + sweep, &err), 0) << err;
  // A regular file where the directory should be: exit 2, the flag and path named, nothing written.
  std::string file = Write("taken", "x");
  EXPECT_EQ(Run("report -o " + file + "/results" + sweep, &err), 2);
  EXPECT_NE(err.find("-o/--output-dir " + file + "/results: '" + file + "' exists and is not a directory"),
            std::string::npos)
      << err;
}

// `show --format csv`: a PyTorch-made CSV (torch 2.15's Schedule1F1B, whose
// last rank numbers its forwards from 1) prints back repaired, with the
// warning on stderr; a trace has no schedule to write and is refused.
TEST_F(ShowCli, CsvFormatRepairsTorch1F1BAndRefusesTraces) {
  const std::string fixture = std::string(PW_SOURCE_DIR) + "/tests/testdata/torch/torch_1f1b_p4_m8_compute_only.csv";
  const std::string out = dir_ + "/out.csv";
  std::string err;
  ASSERT_EQ(Run("show " + fixture + " --format csv -o " + out, &err), 0) << err;
  EXPECT_NE(err.find("pipewright show: warning: "), std::string::npos) << err;
  EXPECT_NE(err.find("'3F1' where '3F0' is expected"), std::string::npos) << err;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string csv = ss.str();
  EXPECT_EQ(csv.rfind("0F0,0F1,0F2,0F3,0B0,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n3F0,3B0,3F1,3B1,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("3F8"), std::string::npos) << csv;
  std::string plan = Write("p.json", PlanText("1f1b", 2, 2));
  ASSERT_EQ(Run("show " + plan + " --format trace -o " + dir_ + "/t.trace", &err), 0) << err;
  EXPECT_EQ(Run("show " + dir_ + "/t.trace --format csv", &err), 2);
  EXPECT_NE(err.find("is a trace; a PyTorch CSV is written from a plan file or a CSV"), std::string::npos) << err;
}

}  // namespace
}  // namespace pw::viz::testing
