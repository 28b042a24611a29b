// Partitioner: the public bug-report cases, optimality against brute force,
// memory predicate, first/last-stage overrides.
#include "planner/partition.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace pw {
namespace {

std::vector<int> Sizes(const Partition& p) {
  std::vector<int> s;
  for (size_t k = 0; k + 1 < p.boundaries.size(); ++k) s.push_back(p.boundaries[k + 1] - p.boundaries[k]);
  return s;
}

std::string Str(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += std::to_string(x) + ",";
  return s;
}

TEST(Partition, UniformBugReportCases) {
  // Megatron/PyTorch issues: 30 on 4 silently became 28; remainders piled on
  // the last stage; empty stages.
  static const struct {
    int layers, stages;
  } cases[] = {{30, 4}, {5, 4}, {42, 16}, {38, 8}, {32, 8}, {7, 7}, {100, 64}};
  for (const auto& c : cases) {
    auto p = PartitionLayers(std::vector<double>(c.layers, 1.0), c.stages);
    ASSERT_TRUE(p.ok()) << c.layers << " on " << c.stages << ": " << p.status().ToString();
    auto s = Sizes(*p);
    ASSERT_EQ(static_cast<int>(s.size()), c.stages);
    int total = 0, mx = 0, mn = 1 << 30;
    for (int x : s) {
      total += x;
      mx = std::max(mx, x);
      mn = std::min(mn, x);
    }
    const int ceil = (c.layers + c.stages - 1) / c.stages;
    EXPECT_EQ(total, c.layers) << "every layer covered: " << Str(s);
    EXPECT_GE(mn, 1) << "no empty stage: " << Str(s);
    EXPECT_EQ(mx, ceil) << "optimal bottleneck: " << Str(s);
    EXPECT_LE(mx - mn, 1) << "remainder spread, not piled: " << Str(s);
    EXPECT_LE(s.back(), ceil) << Str(s);
    EXPECT_EQ(p->boundaries.front(), 0);
    EXPECT_EQ(p->boundaries.back(), c.layers);
  }
  auto p30 = PartitionLayers(std::vector<double>(30, 1.0), 4);
  EXPECT_EQ(Sizes(*p30), (std::vector<int>{8, 8, 7, 7}));
}

// All splits of L layers into non-empty stages, as S boundaries (0 .. L).
void Enumerate(int L, int S, std::vector<int>& b, const std::function<void(const std::vector<int>&)>& fn) {
  if (static_cast<int>(b.size()) == S) {
    if (b.back() == L) fn(b);
    return;
  }
  const int k = static_cast<int>(b.size());                // choosing boundary k (end of stage k-1)
  for (int e = b.back() + 1; e <= L - (S - 1 - k); ++e) {  // S boundaries: S - 1 - k stages follow
    b.push_back(e);
    Enumerate(L, S, b, fn);
    b.pop_back();
  }
}

TEST(Partition, CostWeightedMatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.1, 3.0);
  std::uniform_int_distribution<int> mem(1, 9);
  for (int trial = 0; trial < 300; ++trial) {
    const int L = 3 + trial % 9, S = 1 + trial % std::min(L, 5);
    std::vector<double> t(L);
    std::vector<int> m(L);
    for (int l = 0; l < L; ++l) {
      t[l] = cost(rng);
      m[l] = mem(rng);
    }
    const int cap = 8 + trial % 12;
    StageFits fits = [&](int, int i, int j) {
      int s = 0;
      for (int l = i; l < j; ++l) s += m[l];
      return s <= cap;
    };
    for (bool with_mem : {false, true}) {
      double brute = std::numeric_limits<double>::infinity();
      std::vector<int> start{0};
      Enumerate(L, S + 1, start, [&](const std::vector<int>& b) {
        double worst = 0;
        for (int k = 0; k < S; ++k) {
          if (with_mem && !fits(k, b[k], b[k + 1])) return;
          double s = 0;
          for (int l = b[k]; l < b[k + 1]; ++l) s += t[l];
          worst = std::max(worst, s);
        }
        brute = std::min(brute, worst);
      });
      auto p = PartitionLayers(t, S, with_mem ? fits : StageFits{});
      if (brute == std::numeric_limits<double>::infinity()) {
        ASSERT_FALSE(p.ok()) << "trial " << trial;
        EXPECT_EQ(p.status().code(), StatusCode::kInfeasible);
        continue;
      }
      ASSERT_TRUE(p.ok()) << "trial " << trial << ": " << p.status().ToString();
      EXPECT_NEAR(p->bottleneck_s, brute, 1e-12)
          << "trial " << trial << " L=" << L << " S=" << S << " mem=" << with_mem << " split " << Str(Sizes(*p));
      for (int k = 0; with_mem && k < S; ++k)
        EXPECT_TRUE(fits(k, p->boundaries[k], p->boundaries[k + 1])) << "trial " << trial << " stage " << k;
    }
  }
}

TEST(Partition, HeavyLayersAreIsolated) {
  // A cheap embedding, 8 blocks, a head as heavy as 3 blocks, on 4 stages:
  // optimal bottleneck is 3 (the head alone), never a stage with head + block.
  std::vector<double> t{0.1, 1, 1, 1, 1, 1, 1, 1, 1, 3};
  auto p = PartitionLayers(t, 4);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->bottleneck_s, 3.0) << Str(Sizes(*p));
  EXPECT_EQ(Sizes(*p).back(), 1);
}

TEST(Partition, RefusesTooManyStages) {
  auto p = PartitionLayers(std::vector<double>(3, 1.0), 4);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
}

LayerCostTable Model(int blocks) {
  LayerCostTable t;
  t.layers.push_back({"embedding", "embedding", 0.1, 0, 0.1, 0, 0, 0, 0, 0});
  for (int i = 0; i < blocks; ++i) t.layers.push_back({"block." + std::to_string(i), "block", 1, 1, 1, 0, 0, 0, 0, 0});
  t.layers.push_back({"head", "head", 1, 1, 1, 0, 0, 0, 0, 0});
  return t;
}

TEST(Partition, FirstLastStageOverrides) {
  LayerCostTable t = Model(30);
  auto ov = ResolveStageOverrides(t, 4, 6, 6);
  ASSERT_TRUE(ov.ok()) << ov.status().ToString();
  auto p = PartitionLayers(LayerSeconds(t), 4, {}, *ov);
  ASSERT_TRUE(p.ok());
  auto s = Sizes(*p);
  EXPECT_EQ(s.front(), 7) << "embedding + 6 blocks: " << Str(s);
  EXPECT_EQ(s.back(), 7) << "6 blocks + head: " << Str(s);
  EXPECT_EQ(s[1] + s[2], 18);

  static const struct {
    int stages;
    std::optional<int> first, last;
    const char* flag;
  } bad[] = {
      {4, 20, 20, "--first-stage-num-layers 20 and --last-stage-num-layers 20"},
      {8, 14, 14, "--first-stage-num-layers 14 and --last-stage-num-layers 14"},  // 2 left for 6 stages
      {2, 10, 10, "--first-stage-num-layers 10 and --last-stage-num-layers 10"},  // must sum to 30
      {4, 0, std::nullopt, "--first-stage-num-layers"},
      {1, std::nullopt, 3, "--last-stage-num-layers"},
      {31, 3, std::nullopt, "--first-stage-num-layers 3"},
  };
  for (const auto& c : bad) {
    auto r = ResolveStageOverrides(t, c.stages, c.first, c.last);
    ASSERT_FALSE(r.ok()) << c.flag;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.flag), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace pw
