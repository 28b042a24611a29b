// Profile fitting: least squares recovers known coefficients from synthetic
// points and reports its error; a profile round-trips through JSON and gives
// the planner per-layer costs for any shape; `plan --profile` semantics.
#include "planner/profile_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "planner/cost_model.h"
#include "planner/planner.h"

namespace pw {
namespace {

const nlohmann::json kModel = {{"n_layer", 4},   {"n_embd", 64},       {"n_head", 4},
                               {"n_inner", 256}, {"n_positions", 128}, {"vocab_size", 256}};

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
        x.activation_bytes =
            static_cast<int64_t>(k * 1000 * tokens) + (std::string(kind) == "block" ? 16 * b * s * s : 0);
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
  ASSERT_TRUE(plan->training.has_value());
  EXPECT_EQ(plan->training->seq_length, 32) << "default s = the profile's";
  ASSERT_TRUE(plan->model.has_value()) << "the profiled model is the plan's model";
  EXPECT_EQ(plan->model->hidden, 64);
}

// Issue 23 item 8: the tensor-parallel collectives a profile measured are
// fitted per (kind, ranks), round-trip, and are what the planner costs TP
// collectives with: `plan --tp 2 --profile` = the whole layers scaled to a
// TP rank (the footprint's FLOP ratio) + the measured collectives.
TEST(FitProfile, TensorParallelCollectivesCostThePlan) {
  Profile p = SyntheticProfile();
  for (const char* kind : {"all-reduce", "reduce-scatter", "all-gather"})
    for (int64_t bytes : {16384, 65536, 1 << 20}) p.collective_samples.push_back({kind, 2, bytes, 1e-5 + bytes / 2e9});
  ASSERT_TRUE(FitProfile(p, {{"embedding", 100}, {"block", 1000}, {"head", 200}}).ok());
  ASSERT_EQ(p.collective_fits.size(), 3u);
  for (const CollectiveFit& f : p.collective_fits) {
    EXPECT_EQ(f.ranks, 2);
    EXPECT_NEAR(f.model.latency_s, 1e-5, 1e-10) << f.kind;
    EXPECT_NEAR(f.model.bandwidth_bytes_per_s, 2e9, 1e3) << f.kind;
  }
  auto j = ProfileToJson(p);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto back = ParseProfile(*j, "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->collective_fits.size(), 3u) << "the samples are read back and fitted";

  // The one cost derivation: a measured fit replaces the ring on the link.
  const CommModel slow_link{1.0, 1.0};
  const std::vector<Collective> two = {{CollectiveKind::kAllReduce, 1 << 20}, {CollectiveKind::kAllGather, 65536}};
  EXPECT_NEAR(TensorParallelSeconds(two, 2, slow_link, back->collective_fits), 2e-5 + ((1 << 20) + 65536) / 2e9, 1e-12);
  EXPECT_GT(TensorParallelSeconds(two, 4, slow_link, back->collective_fits), 1.0) << "no fit at 4 ranks: the link";

  // Planned at T = 2: each layer's compute is the whole layer's times the
  // footprint's per-rank FLOP ratio, plus its collectives.
  auto whole = ProfileLayerCosts(*back, kModel, 4, 32);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  auto model = ParseModelConfig(kModel, "kModel");
  ASSERT_TRUE(model.ok());
  TrainingShape shape;
  shape.micro_batch_size = 4;
  shape.seq_length = 32;
  shape.precision = Precision::kFp32;
  shape.tp_size = 2;
  shape.sequence_parallel = true;
  auto tp = TensorParallelProfileCosts(*whole, *model, shape, back->collective_fits, std::nullopt);
  ASSERT_TRUE(tp.ok()) << tp.status().ToString();
  const std::vector<LayerSpec> specs = BuildLayerList(*model);
  TrainingShape one = shape;
  one.tp_size = 1;
  one.sequence_parallel = false;
  for (size_t l = 0; l < specs.size(); ++l) {
    const LayerFootprint ft = ComputeFootprint(*model, specs[l], shape), f1 = ComputeFootprint(*model, specs[l], one);
    if (f1.flops_i <= 0) continue;
    EXPECT_NEAR(tp->layers[l].i,
                whole->layers[l].i * ft.flops_i / f1.flops_i +
                    TensorParallelSeconds(ft.tp_comm_i, 2, CommModel{}, back->collective_fits),
                1e-12)
        << specs[l].name;
    if (specs[l].name.rfind("block.", 0) == 0) {
      EXPECT_LT(tp->layers[l].static_bytes, whole->layers[l].static_bytes) << specs[l].name << ": weights split";
    }
  }
  // Without a fit at T ranks and without a link: refused, naming the fix.
  auto refused = TensorParallelProfileCosts(
      *whole, *model,
      [&] {
        TrainingShape s4 = shape;
        s4.tp_size = 4;
        return s4;
      }(),
      back->collective_fits, std::nullopt);
  if (model->num_heads % 4 == 0) {
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("pipewright profile"), std::string::npos) << refused.status().ToString();
  }
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
  // Wrong JSON types and numbers out of range: an error naming the field,
  // never an abort or an undefined conversion (the hardening issue's cases).
  const nlohmann::json good = *ProfileToJson(p);
  ASSERT_TRUE(good.contains("samples") && !good["samples"].empty());
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  } cases[] = {
      {[](nlohmann::json& d) { d["fits"]["block"]["F"]["rel_rms_error"] = "x"; },
       "fits.block.F.rel_rms_error must be a finite number, got \"x\""},
      {[](nlohmann::json& d) { d["fits"]["block"]["F"]["points"] = 1e300; }, "fits.block.F.points must be an integer"},
      {[](nlohmann::json& d) { d["element_bytes"] = "4"; }, "element_bytes must be an integer in [1, 16]"},
      {[](nlohmann::json& d) { d["fits"]["head"] = 7; }, "fits.head must be an object of fits"},
      {[](nlohmann::json& d) { d["samples"][0]["kind"] = 3; }, "samples[0].kind must be a string, got 3"},
      {[](nlohmann::json& d) { d["samples"][0]["W"] = "fast"; }, "samples[0].W must be a finite number"},
      {[](nlohmann::json& d) { d["samples"][0]["output_bytes"] = 1e300; },
       "samples[0].output_bytes must be an integer"},
      {[](nlohmann::json& d) { d["samples"][0]["micro_batch_size"] = int64_t{1} << 40; },
       "samples[0].micro_batch_size must be an integer in [0, 16777216]"},
      {[](nlohmann::json& d) { d["seq_length"] = 0; }, "seq_length must be an integer in [1, 16777216]"},
  };
  for (const Case& c : cases) {
    nlohmann::json d = good;
    c.edit(d);
    auto bad = ParseProfile(d, "p.json");
    ASSERT_FALSE(bad.ok()) << c.expect;
    EXPECT_NE(bad.status().message().find("p.json: " + c.expect), std::string::npos) << bad.status().message();
  }
}

// --- Extrapolation: the measured range is recorded, shapes outside it are
// reported, and a fit that predicts <= 0 there is an error, not a silent 0.

Profile FittedProfile() {
  Profile p = SyntheticProfile();
  EXPECT_TRUE(FitProfile(p, {{"embedding", 100}, {"block", 1000}, {"head", 200}}).ok());
  return p;
}

TEST(ProfileExtrapolation, MeasuredTokensRangeIsRecordedAndRoundTrips) {
  Profile p = FittedProfile();
  // Samples: b in {1, 2, 4} x s in {16, 32, 64}: tokens 16..256.
  for (const auto& [kind, k] : p.fits)
    for (const LinearFit* f : {&k.f, &k.i, &k.w, &k.b, &k.activation_bytes, &k.wstash_bytes}) {
      EXPECT_EQ(f->min_tokens, 16) << kind;
      EXPECT_EQ(f->max_tokens, 256) << kind;
    }
  EXPECT_EQ(p.comm_fit->max_tokens, 0) << "comm fits have no tokens range";
  nlohmann::json j = *ProfileToJson(p);
  EXPECT_EQ(j["fits"]["block"]["F"]["tokens_range"], nlohmann::json({16, 256})) << j["fits"]["block"]["F"].dump();
  auto back = ParseProfile(j, "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->fits.at("head").wstash_bytes.max_tokens, 256);
  EXPECT_EQ(back->source, "p.json");
  // A file written before the range was recorded: taken from its samples.
  for (auto& [kind, k] : j["fits"].items())
    for (const char* q : {"F", "I", "W", "B", "activation_bytes", "wstash_bytes"}) k[q].erase("tokens_range");
  back = ParseProfile(j, "old.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->fits.at("block").i.min_tokens, 16);
  EXPECT_EQ(back->fits.at("block").i.max_tokens, 256);
  // A bad range names the field and the value.
  j["fits"]["block"]["W"]["tokens_range"] = {0, 5};
  auto bad = ParseProfile(j, "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fits.block.W.tokens_range must be [min, max]"), std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("[0,5]"), std::string::npos) << bad.status().ToString();
}

TEST(ProfileExtrapolation, ShapesOutsideTheMeasuredTokensAreFoundAndNamed) {
  const Profile p = FittedProfile();
  static const struct {
    int64_t b, s;
    bool outside;
  } cases[] = {{1, 16, false}, {2, 32, false}, {4, 64, false}, {3, 48, false},
               {1, 8, true},   {8, 64, true},  {16, 128, true}};
  for (const auto& c : cases) {
    auto found = FindExtrapolations(p, c.b, c.s);
    EXPECT_EQ(found.size(), c.outside ? 18u : 0u) << "b=" << c.b << " s=" << c.s;  // 3 kinds x 6 quantities
    for (const Extrapolation& e : found) {
      EXPECT_EQ(e.micro_batch_size, c.b);
      EXPECT_EQ(e.seq_length, c.s);
      EXPECT_EQ(e.min_tokens, 16) << e.kind << " " << e.quantity;
      EXPECT_EQ(e.max_tokens, 256) << e.kind << " " << e.quantity;
    }
  }
  auto found = FindExtrapolations(p, 8, 64);
  ASSERT_EQ(found.size(), 18u);
  EXPECT_EQ(found[0].kind, "embedding");
  EXPECT_EQ(found[0].quantity, "F");
  EXPECT_EQ(found[5].quantity, "wstash_bytes");
  auto more = FindExtrapolations(p, 16, 64);
  found.insert(found.end(), more.begin(), more.end());
  std::vector<std::string> lines = FormatExtrapolationWarnings(found, "--profile p.json");
  ASSERT_EQ(lines.size(), 3u) << "one line per kind";
  EXPECT_EQ(lines[1],
            "--profile p.json: block F time, I time, W time, B time, activation bytes, wstash bytes extrapolated to "
            "micro-batch size x seq length 8x64 (512 tokens), 16x64 (1024 tokens), outside the measured 16..256 "
            "tokens: these costs are a linear fit's guess (pipewright profile can measure the shape)");
  EXPECT_TRUE(FormatExtrapolationWarnings({}, "x").empty());
}

TEST(ProfileExtrapolation, NonPositivePredictionIsAnErrorNamingKindQuantityAndShape) {
  Profile p = FittedProfile();
  p.source = "--profile p.json";
  // A tiny quantity whose noisy fit slopes down: positive over the measured
  // 16..256 tokens, negative beyond 2000 tokens.
  p.fits.at("embedding").i.coefficients = {-1e-9, 2e-6};
  auto inside = ProfileLayerCosts(p, kModel, 2, 32);
  ASSERT_TRUE(inside.ok()) << inside.status().ToString();
  EXPECT_NEAR(inside->layers[0].i, 2e-6 - 64e-9, 1e-15);
  auto still_positive = ProfileLayerCosts(p, kModel, 16, 64);  // 1024 tokens: extrapolated, but > 0
  ASSERT_TRUE(still_positive.ok()) << still_positive.status().ToString();
  EXPECT_GT(still_positive->layers[0].i, 0);

  auto far = ProfileLayerCosts(p, kModel, 64, 64);  // 4096 tokens: -2.1e-6 s
  ASSERT_FALSE(far.ok()) << "predicted " << far->layers[0].i << " s, silently";
  EXPECT_EQ(far.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = far.status().message();
  for (const char* want : {"--profile p.json: ", "embedding I time fit predicts -2.096e-06 s",
                           "micro-batch size 64 x seq length 64", "4096 tokens; measured 16..256 tokens"})
    EXPECT_NE(msg.find(want), std::string::npos) << "missing '" << want << "' in: " << msg;

  // Bytes too.
  p = FittedProfile();
  p.fits.at("block").activation_bytes.coefficients = {-10.0, 0.0, 1000.0};
  auto bytes = ProfileLayerCosts(p, kModel, 4, 64);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("block activation bytes fit predicts -1560 B at micro-batch size 4 x seq "
                                          "length 64"),
            std::string::npos)
      << bytes.status().ToString();

  // A quantity measured as 0 everywhere fits to 0: that is no extrapolation.
  p = FittedProfile();
  p.fits.at("head").wstash_bytes.coefficients = {0.0, 0.0};
  auto zero = ProfileLayerCosts(p, kModel, 64, 64);
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_EQ(zero->layers.back().wstash_bytes, 0);
}

TEST(ProfileExtrapolation, PlannerRefusesTheShapeAndKeepsTheOthers) {
  Profile p = FittedProfile();
  p.source = "--profile p.json";
  p.fits.at("embedding").i.coefficients = {-1e-9, 2e-6};  // <= 0 beyond 2000 tokens
  PlannerModel model;
  model.profile = p;
  PlannerOptions o;
  o.pp_size = 2;
  o.schedules = {"1f1b"};
  o.find_min_pp = false;
  o.seq_length = 64;
  // The asked-for shape: an error naming --profile and the shape.
  o.num_microbatches = 4;
  o.micro_batch_size = 64;
  auto r = SearchPlans(model, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--profile p.json: the embedding I time fit predicts"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("micro-batch size 64 x seq length 64"), std::string::npos);
  // Micro-batch sizes searched (1, 2, 4, 8 at s = 64: up to 512 tokens) are
  // all positive: the plan is made.
  o.micro_batch_size.reset();
  o.num_microbatches.reset();
  o.global_batch_size = 16;
  r = SearchPlans(model, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

}  // namespace
}  // namespace pw
