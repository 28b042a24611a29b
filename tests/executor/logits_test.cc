// The next-token choice of `generate` (executor/runtime/logits.h) against
// transformers' logits warpers: tests/testdata/generate/expected.json
// "warpers" holds logits vectors and, for several (temperature, top_k,
// top_p), the ids TemperatureLogitsWarper + TopKLogitsWarper +
// TopPLogitsWarper keep, in generate's order (make_fixtures.py there).
#include "executor/runtime/logits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace pw::exec {
namespace {

std::string Ids(const std::vector<int>& v) {
  std::string s;
  for (int i : v) s += std::to_string(i) + " ";
  return s;
}

TEST(Logits, KeepsWhatTransformersWarpersKeep) {
  std::ifstream in(std::string(PW_SOURCE_DIR) + "/tests/testdata/generate/expected.json");
  ASSERT_TRUE(in) << "missing tests/testdata/generate/expected.json";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& vec : fixture.at("warpers")) {
    const std::vector<double> logits = vec.at("logits").get<std::vector<double>>();
    for (const auto& c : vec.at("cases")) {
      SamplingParams p;
      p.temperature = c.at("temperature").get<double>();
      p.top_k = c.at("top_k").get<int>();
      p.top_p = c.at("top_p").get<double>();
      ASSERT_TRUE(ValidateSampling(p, static_cast<int64_t>(logits.size())).ok());
      std::vector<double> warped = logits;
      WarpLogits(p, warped);
      std::vector<int> kept;
      for (size_t v = 0; v < warped.size(); ++v)
        if (std::isfinite(warped[v])) kept.push_back(static_cast<int>(v));
      const std::vector<int> want = c.at("kept").get<std::vector<int>>();
      EXPECT_EQ(Ids(kept), Ids(want)) << "temperature " << p.temperature << " top_k " << p.top_k << " top_p " << p.top_p
                                      << " on vector " << checked / 8;
      // Every draw lands on a kept id.
      std::mt19937_64 rng(3);
      for (int draw = 0; draw < 50; ++draw) {
        const int64_t id = ChooseToken(p, logits, rng);
        EXPECT_TRUE(std::isfinite(warped[id])) << "drew removed id " << id;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 32);
}

TEST(Logits, GreedyIsTheFirstLargestAndTopKOneAgrees) {
  const std::vector<double> logits = {0.5, 2.0, -1.0, 2.0, 1.9};
  SamplingParams greedy;
  greedy.temperature = 0;
  std::mt19937_64 rng(1);
  EXPECT_EQ(ChooseToken(greedy, logits, rng), 1);  // the first of the tie, as torch.argmax
  SamplingParams k1;
  k1.temperature = 1.0;
  k1.top_k = 1;
  const std::vector<double> no_tie = {0.5, 2.0, -1.0, 1.0, 1.9};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 r(seed);
    EXPECT_EQ(ChooseToken(k1, no_tie, r), 1) << "seed " << seed;
  }
}

TEST(Logits, SameSeedSameDraws) {
  std::vector<double> logits(100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<double>(i));
  SamplingParams p;
  p.temperature = 0.9;
  p.top_k = 40;
  p.top_p = 0.8;
  std::mt19937_64 a(42), b(42);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(ChooseToken(p, logits, a), ChooseToken(p, logits, b)) << "draw " << i;
}

TEST(Logits, RefusesOutOfRangeNamingTheFlag) {
  struct Case {
    double temperature;
    int top_k;
    double top_p;
    const char* message;
  } cases[] = {
      {-0.1, 0, 1.0, "--temperature -0.1: must be finite and >= 0"},
      {NAN, 0, 1.0, "--temperature nan"},
      {1.0, -1, 1.0, "--top-k -1: must be between 0 (off) and the model's vocabulary size 100"},
      {1.0, 101, 1.0, "--top-k 101: must be between 0"},
      {1.0, 0, 1.5, "--top-p 1.5: must be in [0, 1]"},
      {1.0, 0, -0.2, "--top-p -0.2: must be in [0, 1]"},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    Status st = ValidateSampling(p, 100);
    EXPECT_FALSE(st.ok()) << c.message;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace pw::exec
