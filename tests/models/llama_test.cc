// Unit tests of the Llama building blocks (models/torch/llama.h) against
// closed forms: RoPE as a 2x2 rotation per channel pair (Su et al. 2021,
// "RoFormer" §3.4, HF's rotate_half layout), the scaled inverse frequencies
// (linear; Llama 3.1's three bands), and the RMSNorm custom backward against
// LibTorch autograd of the plain formula (Zhang & Sennrich 2019).
#include <gtest/gtest.h>

#include <cmath>

#include "models/torch/llama.h"

namespace pw::models {
namespace {

TEST(Rope, RotatesEachChannelPairByPositionTimesFrequency) {
  const int64_t T = 6, D = 8;
  const double theta = 10000.0;
  for (RopeScaling::Type type : {RopeScaling::Type::kDefault, RopeScaling::Type::kLinear}) {
    RopeScaling s;
    s.type = type;
    s.factor = 4.0;
    auto [cos, sin] = RopeCosSin(T, D, theta, s, torch::kDouble);  // (T, D)
    torch::manual_seed(3);
    torch::Tensor x = torch::randn({2, T, 3, D}, torch::kDouble);              // (b, T, heads, D)
    torch::Tensor y = ApplyRope(x, cos.unsqueeze(1), sin.unsqueeze(1));       // (b, T, heads, D)
    auto xa = x.accessor<double, 4>();
    auto ya = y.accessor<double, 4>();
    double worst = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t p = 0; p < T; ++p)
        for (int64_t h = 0; h < 3; ++h)
          for (int64_t i = 0; i < D / 2; ++i) {
            // Closed form: angle p * theta^(-2i/D) (linear: positions / factor).
            double angle = static_cast<double>(p) * std::pow(theta, -2.0 * static_cast<double>(i) / D);
            if (type == RopeScaling::Type::kLinear) angle /= s.factor;
            const double x1 = xa[b][p][h][i], x2 = xa[b][p][h][i + D / 2];
            worst = std::max(worst, std::fabs(ya[b][p][h][i] - (x1 * std::cos(angle) - x2 * std::sin(angle))));
            worst = std::max(worst, std::fabs(ya[b][p][h][i + D / 2] - (x1 * std::sin(angle) + x2 * std::cos(angle))));
          }
    EXPECT_LT(worst, 1e-14) << RopeScalingTypeName(type);
    // Position 0 is the identity; norms are preserved.
    EXPECT_TRUE(torch::allclose(y.select(1, 0), x.select(1, 0), 0, 0));
    EXPECT_TRUE(torch::allclose(y.norm(2, -1), x.norm(2, -1), 1e-14, 1e-14));
  }
}

TEST(Rope, ScoresDependOnTheRelativePositionOnly) {
  const int64_t T = 9, D = 6;
  auto [cos, sin] = RopeCosSin(T, D, 10000.0, RopeScaling{}, torch::kDouble);
  torch::manual_seed(5);
  torch::Tensor q = torch::randn({D}, torch::kDouble), k = torch::randn({D}, torch::kDouble);
  auto rot = [&](const torch::Tensor& v, int64_t p) { return ApplyRope(v, cos[p], sin[p]); };
  const double s03 = rot(q, 3).dot(rot(k, 0)).item<double>();
  const double s85 = rot(q, 8).dot(rot(k, 5)).item<double>();
  EXPECT_NEAR(s03, s85, 1e-13);
}

TEST(Rope, Llama3FrequencyBands) {
  // Llama 3.1 (8B/70B/405B config.json): theta 500000, factor 8, low 1, high 4, original 8192.
  RopeScaling s;
  s.type = RopeScaling::Type::kLlama3;
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 8192;
  const int64_t D = 128;
  torch::Tensor base = RopeInverseFrequencies(D, 500000.0, RopeScaling{});
  torch::Tensor scaled = RopeInverseFrequencies(D, 500000.0, s);
  const double kPi = 3.14159265358979323846;
  int kept = 0, divided = 0, smoothed = 0;
  for (int64_t i = 0; i < D / 2; ++i) {
    const double f = base[i].item<double>(), g = scaled[i].item<double>();
    EXPECT_NEAR(f, std::pow(500000.0, -2.0 * i / D), 1e-15 * std::max(1.0, f));
    const double wavelen = 2 * kPi / f;
    if (wavelen < 8192.0 / 4.0) {  // high-frequency band: unchanged
      EXPECT_EQ(g, f) << i;
      ++kept;
    } else if (wavelen > 8192.0 / 1.0) {  // low-frequency band: divided by the factor
      EXPECT_NEAR(g, f / 8.0, 1e-18) << i;
      ++divided;
    } else {  // between: strictly between f / 8 and f, and the smoothing weight is linear in 1 / wavelength
      EXPECT_GT(g, f / 8.0) << i;
      EXPECT_LT(g, f) << i;
      const double t = (g - f / 8.0) / (f - f / 8.0);
      EXPECT_NEAR(t, (8192.0 / wavelen - 1.0) / 3.0, 1e-12) << i;
      ++smoothed;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
}

TEST(RmsNormTest, CustomBackwardEqualsAutogradOfTheFormula) {
  torch::manual_seed(7);
  const double eps = 1e-5;
  torch::Tensor x = torch::randn({3, 5, 16}, torch::kDouble).requires_grad_(true);
  torch::Tensor w = (torch::randn({16}, torch::kDouble) + 1.0).requires_grad_(true);
  torch::Tensor dy = torch::randn({3, 5, 16}, torch::kDouble);
  torch::Tensor y = RmsNorm(x, w, eps);
  auto g = torch::autograd::grad({y}, {x, w}, {dy});
  torch::Tensor x2 = x.detach().clone().requires_grad_(true), w2 = w.detach().clone().requires_grad_(true);
  torch::Tensor y2 = x2 / torch::sqrt(x2.pow(2).mean(-1, true) + eps) * w2;
  auto g2 = torch::autograd::grad({y2}, {x2, w2}, {dy});
  EXPECT_TRUE(torch::allclose(y, y2, 1e-14, 1e-14));
  EXPECT_TRUE(torch::allclose(g[0], g2[0], 1e-12, 1e-13)) << (g[0] - g2[0]).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(g[1], g2[1], 1e-12, 1e-13)) << (g[1] - g2[1]).abs().max().item<double>();
}

}  // namespace
}  // namespace pw::models
