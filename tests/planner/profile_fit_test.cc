// Profile fitting: least squares recovers known coefficients from synthetic
// points and reports its error; a profile round-trips through JSON and gives
// the planner per-layer costs for any shape; `plan --profile` semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "planner/planner.h"
#include "planner/profile_fit.h"

namespace pw {
namespace {

const nlohmann::json kModel = {{"n_layer", 4}, {"n_embd", 64}, {"n_head", 4}, {"n_inner", 256},
                               {"n_positions", 128}, {"vocab_size", 256}};

TEST(FitLeastSquares, RecoversExactCoefficients) {
  // y = 3e-6 tokens + 2e-9 tokens*s + 5e-4, noise-free.
  const double a = 3e-6, q = 2e-9, c = 5e-4;
  std::vector<FitPoint> pts;
  for (int64_t b : {1, 2, 4})
    for (int64_t s : {16, 32, 64}) pts.push_back({b, s, a * b * s + q * b * s * s + c});
  auto fit = FitLeastSquares(pts, {"tokens", "tokens_x_seq", "one"});
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->coefficients[0], a, 1e-12) << "tokens";
  EXPECT_NEAR(fit->coefficients[1], q, 1e-15) << "tokens_x_seq";
  EXPECT_NEAR(fit->coefficients[2], c, 1e-10) << "one";
  EXPECT_LT(fit->rel_rms_error, 1e-9);
  EXPECT_LT(fit->max_rel_error, 1e-9);
  EXPECT_EQ(fit->points, 9);
}

TEST(FitLeastSquares, NoisyPointsReportTheirError) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.02);  // 2 % multiplicative noise
  const double a = 1e-5, c = 2e-3;
  std::vector<FitPoint> pts;
  for (int rep = 0; rep < 20; ++rep)
    for (int64_t b : {1, 2, 4, 8}) pts.push_back({b, 64, (a * b * 64 + c) * (1.0 + noise(rng))});
  auto fit = FitLeastSquares(pts, {"tokens", "one"});
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->coefficients[0], a, 0.03 * a);
  EXPECT_NEAR(fit->coefficients[1], c, 0.05 * c);
  EXPECT_GT(fit->rel_rms_error, 0.01) << "the noise must show in the reported error";
  EXPECT_LT(fit->rel_rms_error, 0.03);
  EXPECT_GE(fit->max_rel_error, fit->rel_rms_error);
}

TEST(FitLeastSquares, RefusesUnderdeterminedAndCollinear) {
  auto few = FitLeastSquares({{1, 16, 1.0}}, {"tokens", "one"});
  EXPECT_EQ(few.status().code(), StatusCode::kInvalidArgument);
  // One sequence length: tokens and tokens_x_seq are proportional.
  auto collinear = FitLeastSquares({{1, 16, 1.0}, {2, 16, 2.0}, {4, 16, 4.1}}, {"tokens", "tokens_x_seq", "one"});
  ASSERT_FALSE(collinear.ok());
  EXPECT_NE(collinear.status().message().find("collinear"), std::string::npos) << collinear.status().ToString();
  auto unknown = FitLeastSquares({{1, 16, 1.0}, {2, 16, 2.0}}, {"flops"});
  EXPECT_NE(unknown.status().message().find("flops"), std::string::npos);
}

// A synthetic profile whose samples follow known linear laws.
Profile SyntheticProfile() {
  Profile p;
  p.model = kModel;
  p.micro_batch_size = 2;
  p.seq_length = 32;
  for (const char* kind : {"embedding", "block", "head"}) {
    const double k = std::string(kind) == "block" ? 1.0 : 0.25;
    for (int64_t b : {1, 2, 4})
      for (int64_t s : {16, 32, 64}) {
        ProfileSample x;
        x.kind = kind;
        x.micro_batch_size = b;
        x.seq_length = s;
        const double tokens = static_cast<double>(b * s);
        const double attn = std::string(kind) == "block" ? 1e-9 * tokens * s : 0.0;
        x.f = k * (2e-6 * tokens + 1e-4) + attn;
        x.i = k * (3e-6 * tokens + 1e-4) + 2 * attn;
        x.w = k * (2e-6 * tokens + 5e-5);
        x.b = x.i + x.w;
        x.activation_bytes = static_cast<int64_t>(k * 1000 * tokens) + (std::string(kind) == "block" ? 16 * b * s * s : 0);
        x.wstash_bytes = static_cast<int64_t>(k * 512 * tokens + 64);
        x.output_bytes = b * s * 64 * 4;
        p.samples.push_back(x);
      }
  }
  for (int64_t bytes : {1024, 65536, 1 << 20}) p.comm_samples.push_back({bytes, 2e-5 + bytes / 1e9});
  return p;
}

TEST(FitProfile, EveryKindAndCommFitted) {
  Profile p = SyntheticProfile();
  ASSERT_TRUE(FitProfile(p, {{"embedding", 100}, {"block", 1000}, {"head", 200}}).ok());
  ASSERT_EQ(p.fits.size(), 3u);
  const KindFit& block = p.fits.at("block");
  EXPECT_EQ(block.f.features.size(), 3u) << "blocks measured at several s fit the attention term";
  EXPECT_LT(block.f.max_rel_error, 1e-6);
  EXPECT_LT(block.activation_bytes.max_rel_error, 1e-6);
  EXPECT_LT(p.fits.at("head").i.max_rel_error, 1e-6);
  ASSERT_TRUE(p.comm.has_value());
  EXPECT_NEAR(p.comm->latency_s, 2e-5, 1e-9);
  EXPECT_NEAR(p.comm->bandwidth_bytes_per_s, 1e9, 1e3);
  // Evaluated at an unmeasured shape (b=3, s=48) the laws still hold.
  EXPECT_NEAR(block.f.Evaluate(3, 48), 2e-6 * 144 + 1e-4 + 1e-9 * 144 * 48, 1e-9);
}

TEST(FitProfile, RoundTripsAndFeedsThePlanner) {
  Profile p = SyntheticProfile();
  ASSERT_TRUE(FitProfile(p, {{"embedding", 100}, {"block", 1000}, {"head", 200}}).ok());
  auto j = ProfileToJson(p);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_TRUE(IsLayerCostDocument(*j)) << "a profile is also a layer-cost document";
  auto back = ParseProfile(*j, "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_DOUBLE_EQ(back->fits.at("block").i.coefficients[0], p.fits.at("block").i.coefficients[0]);

  // Costs for a model with 6 blocks (same width) at b=4, s=64.
  nlohmann::json deeper = kModel;
  deeper["n_layer"] = 6;
  auto t = ProfileLayerCosts(*back, deeper, 4, 64);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->layers.size(), 8u);
  EXPECT_EQ(t->layers[3].kind, "block");
  EXPECT_NEAR(t->layers[3].f, 2e-6 * 256 + 1e-4 + 1e-9 * 256 * 64, 1e-9);
  EXPECT_NEAR(t->layers[3].b, t->layers[3].i + t->layers[3].w, 1e-9) << "measured B is carried";
  EXPECT_EQ(t->layers[3].static_bytes, 1000);
  EXPECT_EQ(t->layers[3].output_bytes, 4 * 64 * 64 * 4);

  // A model of another width is refused, naming the key.
  nlohmann::json wider = kModel;
  wider["n_embd"] = 128;
  wider["n_inner"] = 512;
  auto bad = ProfileLayerCosts(*back, wider, 1, 16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("n_embd"), std::string::npos) << bad.status().ToString();

  // The planner plans from the profile at any micro-batch size.
  PlannerModel model;
  model.profile = *back;
  PlannerOptions o;
  o.pp_size = 2;
  o.global_batch_size = 16;
  o.schedules = {"1f1b", "zb-h1"};
  o.find_min_pp = false;
  auto r = SearchPlans(model, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto plan = BuildPlan(*r, model, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->extra["training"]["seq_length"], 32) << "default s = the profile's";
  EXPECT_EQ(plan->extra["model"]["n_embd"], 64);
}

TEST(ParseProfile, ErrorsNameTheField) {
  Profile p = SyntheticProfile();
  ASSERT_TRUE(FitProfile(p, {}).ok());
  nlohmann::json j = *ProfileToJson(p);
  j["fits"]["block"]["F"]["coefficients"] = {1.0};
  auto r = ParseProfile(j, "p.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fits.block.F.coefficients"), std::string::npos) << r.status().ToString();
  j = *ProfileToJson(p);
  j["fits"]["decoder"] = j["fits"]["block"];
  r = ParseProfile(j, "p.json");
  EXPECT_NE(r.status().message().find("fits.decoder"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace pw
