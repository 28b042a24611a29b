// Unit tests of the Llama building blocks (models/torch/llama.h) against
// closed forms: RoPE as a 2x2 rotation per channel pair (Su et al. 2021,
// "RoFormer" §3.4, HF's rotate_half layout), the scaled inverse frequencies
// (linear; Llama 3.1's three bands), and the RMSNorm custom backward against
// LibTorch autograd of the plain formula (Zhang & Sennrich 2019). And the
// family table's LibTorch side: one builder row per registry family, in its
// order; the Qwen3 block (qwen3.cc) against the formula of transformers'
// Qwen3Attention written here with plain tensor ops from the block's own
// parameters (per-head RMSNorm of q and k before RoPE), output and input
// gradient in fp64.
#include "models/torch/llama.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "models/spec/model_family.h"
#include "models/torch/gpt.h"

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
    torch::Tensor x = torch::randn({2, T, 3, D}, torch::kDouble);        // (b, T, heads, D)
    torch::Tensor y = ApplyRope(x, cos.unsqueeze(1), sin.unsqueeze(1));  // (b, T, heads, D)
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

TEST(FamilyLayers, OneBuilderPerRegistryFamilyInItsOrder) {
  const auto& spec = ModelFamilies();
  const auto& torch_side = FamilyLayerBuilders();
  ASSERT_EQ(torch_side.size(), spec.size());
  for (size_t i = 0; i < spec.size(); ++i) {
    EXPECT_EQ(torch_side[i].family, spec[i].family) << spec[i].name;
    EXPECT_NE(torch_side[i].build, nullptr) << spec[i].name;
  }
}

ModelConfig TinyQwen3(bool tied) {
  ModelConfig m;
  m.family = ModelFamily::kQwen3;
  m.num_layers = 2;
  m.hidden = 24;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 10;  // H D = 40 != C = 24
  m.ffn = 32;
  m.vocab = 50;
  m.max_positions = 16;
  m.tied = tied;
  m.gated_mlp = true;
  m.layer_norm = false;
  m.norm_eps = 1e-6;
  m.rope_theta = 1000000.0;
  return m;
}

// The parameters of the Qwen3 layers: Llama's plus q_norm and k_norm (D) in
// each block, and every HF name they map to is distinct.
TEST(Qwen3Layers, ParametersAreLlamasPlusPerHeadNorms) {
  const ModelConfig m = TinyQwen3(false);
  GptStage stage(m, 0, LayerCount(m), 1, torch::kDouble);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, t] : stage->NamedParameters()) shapes[name] = t.sizes().vec();
  EXPECT_EQ(shapes.at("block.1.q_norm.weight"), (std::vector<int64_t>{10}));
  EXPECT_EQ(shapes.at("block.0.k_norm.weight"), (std::vector<int64_t>{10}));
  EXPECT_EQ(shapes.at("block.0.q_proj.weight"), (std::vector<int64_t>{40, 24}));
  EXPECT_EQ(shapes.at("block.0.k_proj.weight"), (std::vector<int64_t>{20, 24}));
  EXPECT_EQ(shapes.at("block.0.o_proj.weight"), (std::vector<int64_t>{24, 40}));
  EXPECT_EQ(shapes.count("block.0.q_proj.bias"), 0u);
  EXPECT_EQ(shapes.size(), 1u + 2u * 11u + 2u);  // embed_tokens; 11 per block; norm, lm_head
}

// Qwen3Attention's formula (transformers modeling_qwen3.py), from the block's
// parameters: plain ops, repeated K/V heads, float64. Without `qk_norm`:
// Llama's.
torch::Tensor Qwen3BlockFormula(const ModelConfig& m, const std::map<std::string, torch::Tensor>& p,
                                const torch::Tensor& x, bool qk_norm = true) {
  const int64_t b = x.size(0), T = x.size(1), H = m.num_heads, K = m.num_kv_heads, D = m.head_dim;
  auto rms = [&](const torch::Tensor& v, const torch::Tensor& w) {
    return v / torch::sqrt(v.pow(2).mean(-1, true) + m.norm_eps) * w;
  };
  auto rope = [&](const torch::Tensor& v) {  // v (b, heads, T, D)
    torch::Tensor inv = torch::pow(m.rope_theta, -torch::arange(0, D, 2, torch::kDouble) / double(D));  // (D/2)
    torch::Tensor ang = torch::outer(torch::arange(T, torch::kDouble), inv);                            // (T, D/2)
    torch::Tensor cos = torch::cat({ang, ang}, -1).cos(), sin = torch::cat({ang, ang}, -1).sin();       // (T, D)
    torch::Tensor half = torch::cat({-v.narrow(-1, D / 2, D / 2), v.narrow(-1, 0, D / 2)}, -1);
    return v * cos + half * sin;
  };
  torch::Tensor n1 = rms(x, p.at("input_layernorm.weight"));
  torch::Tensor q = torch::matmul(n1, p.at("q_proj.weight").t()).view({b, T, H, D});
  torch::Tensor k = torch::matmul(n1, p.at("k_proj.weight").t()).view({b, T, K, D});
  if (qk_norm) {
    q = rms(q, p.at("q_norm.weight"));
    k = rms(k, p.at("k_norm.weight"));
  }
  torch::Tensor v = torch::matmul(n1, p.at("v_proj.weight").t()).view({b, T, K, D}).transpose(1, 2);
  q = rope(q.transpose(1, 2));                              // (b, H, T, D)
  k = rope(k.transpose(1, 2)).repeat_interleave(H / K, 1);  // (b, H, T, D)
  v = v.repeat_interleave(H / K, 1);                        // (b, H, T, D)
  torch::Tensor s = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(D));
  s = s.masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -INFINITY);
  torch::Tensor y = torch::matmul(torch::softmax(s, -1), v).transpose(1, 2).reshape({b, T, H * D});
  torch::Tensor h = x + torch::matmul(y, p.at("o_proj.weight").t());
  torch::Tensor n2 = rms(h, p.at("post_attention_layernorm.weight"));
  torch::Tensor g =
      torch::silu(torch::matmul(n2, p.at("gate_proj.weight").t())) * torch::matmul(n2, p.at("up_proj.weight").t());
  return h + torch::matmul(g, p.at("down_proj.weight").t());
}

TEST(Qwen3Layers, BlockEqualsTheFormula) {
  const ModelConfig m = TinyQwen3(true);
  auto block = MakeGptLayer(m, 1, 3, torch::kDouble);
  std::map<std::string, torch::Tensor> p;
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    for (auto& item : block->named_parameters()) {
      // Norm weights away from their initial 1, so that a swapped or missing
      // q/k norm shows.
      if (item.key().find("norm") != std::string::npos) item.value().copy_(torch::rand_like(item.value()) + 0.5);
      p[item.key()] = item.value().detach().clone();
    }
  }
  torch::Tensor x = torch::randn({2, 7, 24}, torch::kDouble).requires_grad_(true);
  torch::Tensor x2 = x.detach().clone().requires_grad_(true);
  torch::Tensor y = block->forward(x), y2 = Qwen3BlockFormula(m, p, x2);
  torch::Tensor dy = torch::randn(y.sizes(), torch::kDouble);
  torch::Tensor dx = torch::autograd::grad({y}, {x}, {dy})[0], dx2 = torch::autograd::grad({y2}, {x2}, {dy})[0];
  const double worst_y = (y - y2).abs().max().item<double>() / y2.abs().max().item<double>();
  const double worst_dx = (dx - dx2).abs().max().item<double>() / dx2.abs().max().item<double>();
  std::printf("qwen3 block vs formula, fp64: worst relative difference output %.3e, input gradient %.3e\n", worst_y,
              worst_dx);
  EXPECT_LE(worst_y, 1e-13);
  EXPECT_LE(worst_dx, 1e-12);
  // Without its q/k norms (Llama's block) it is another function.
  EXPECT_GT((Qwen3BlockFormula(m, p, x2, /*qk_norm=*/false) - y2).abs().max().item<double>(), 1e-3);
}

// ParamInit::Overwritten() (a model about to be loaded): the same
// parameters, names and shapes as a random init, the random ones zeros and
// the fixed ones (norm weights 1) unchanged, for every layer kind.
TEST(ParamInit, OverwrittenKeepsTheLayoutAndDrawsNothing) {
  const ModelConfig m = TinyQwen3(true);
  GptStage random(m, 0, LayerCount(m), /*seed=*/3, torch::kDouble);
  GptStage loaded(m, 0, LayerCount(m), ParamInit::Overwritten(), torch::kDouble);
  const auto r = random->NamedParameters(), l = loaded->NamedParameters();
  ASSERT_EQ(r.size(), l.size());
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].first, l[i].first);
    EXPECT_EQ(r[i].second.sizes(), l[i].second.sizes()) << r[i].first;
    EXPECT_EQ(r[i].second.scalar_type(), l[i].second.scalar_type()) << r[i].first;
    if (r[i].first.find("norm") != std::string::npos)
      EXPECT_TRUE(torch::equal(r[i].second, l[i].second)) << r[i].first;
    else
      EXPECT_EQ(l[i].second.abs().max().item<double>(), 0.0) << r[i].first;
  }
}

}  // namespace
}  // namespace pw::models
