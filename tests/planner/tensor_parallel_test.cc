// Tensor parallelism (#23), torch-free: the per-TP-rank footprint against
// Korthikanti et al. 2022 Table 2 and against t = 1 (FLOPs, parameters,
// padded vocabulary), the TP collectives' time against the ring closed form,
// plan version 3 (round trip, version 2 read as T = 1, field errors), the
// planner's refusals before any compute, and the --num-devices branch and
// bound against an exhaustive search of every T x P x D x ZeRO-1 split.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "models/spec/device.h"
#include "models/spec/footprint.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/candidate_search.h"
#include "planner/cost_model.h"
#include "planner/data_parallel.h"
#include "planner/explain.h"
#include "planner/planner.h"

namespace pw {
namespace {

TEST(TensorParallelFootprint, KorthikantiTable2) {
  // GPT-2 small is Korthikanti's GPT block: e = 2, MHA, f = 4h, dropout.
  const ModelConfig m = *LoadModelConfig("gpt2");
  const auto layers = BuildLayerList(m);
  const double s = 1024, b = 2, h = 768, a = 12;
  double worst = 0;
  for (int t : {1, 2, 4}) {
    for (bool sp : {false, true}) {
      if (sp && t == 1) continue;
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective}) {
        TrainingShape shape;
        shape.micro_batch_size = 2;
        shape.seq_length = 1024;
        shape.tp_size = t;
        shape.sequence_parallel = sp;
        shape.recompute = rc;
        const double scores = rc == Recompute::kNone ? 5 * a * s / h : 0.0;
        // Table 2: tensor parallel sbh (10 + 24/t + 5as/(ht)); + sequence
        // parallel sbh (34 + 5as/h) / t; selective recompute drops 5as/h.
        const double want = sp ? s * b * h * (34 + scores) / t : s * b * h * (10 + 24.0 / t + scores / t);
        const double got = static_cast<double>(ComputeFootprint(m, layers[1], shape).activation_bytes);
        worst = std::max(worst, std::fabs(got - want) / want);
      }
    }
  }
  std::printf("worst relative difference to Korthikanti Table 2: %.3g\n", worst);
  EXPECT_EQ(worst, 0.0);
}

TEST(TensorParallelFootprint, FlopsAndParametersSplitByT) {
  double worst_flops = 0;
  int64_t worst_params = 0;
  for (const char* name : {"gpt2", "llama-2-7b", "llama-3-70b", "gpt3-175b"}) {
    const ModelConfig m = *LoadModelConfig(name);
    const auto layers = BuildLayerList(m);
    for (int t : {2, 4, 8}) {
      if (CheckTensorParallel(m, t, true, 2048).ok() == false) continue;
      TrainingShape one, tp;
      one.seq_length = tp.seq_length = 2048;
      tp.tp_size = t;
      tp.sequence_parallel = true;
      for (Recompute rc : {Recompute::kNone, Recompute::kFull}) {
        one.recompute = tp.recompute = rc;
        const LayerFootprint f1 = ComputeFootprint(m, layers[1], one), ft = ComputeFootprint(m, layers[1], tp);
        for (auto [x1, xt] : {std::pair{f1.flops_f, ft.flops_f}, {f1.flops_i, ft.flops_i}, {f1.flops_w, ft.flops_w}})
          worst_flops = std::max(worst_flops, std::fabs(xt * t - x1) / x1);
      }
      // The T ranks together hold every block parameter once, plus T - 1
      // more copies of the replicated ones (norms, row-parallel biases).
      const int64_t norm = m.layer_norm ? 2 * m.hidden : m.hidden;
      const int64_t row_bias = (m.attention_bias ? m.hidden : 0) + (m.mlp_bias ? m.hidden : 0);
      const int64_t block = HeldParamsPerTensorRank(m, layers[1], t);
      worst_params =
          std::max(worst_params, std::abs(t * block - (t - 1) * (2 * norm + row_bias) - layers[1].held_params));
      // Vocabulary-parallel embedding: V padded to a multiple of 128 t.
      const int64_t vp = PaddedVocab(m.vocab, t);
      EXPECT_EQ(vp % (128 * t), 0) << name;
      EXPECT_LT(vp - m.vocab, 128 * t) << name;
      const int64_t pos = m.learned_positions ? m.max_positions * m.hidden : 0;
      EXPECT_EQ(HeldParamsPerTensorRank(m, layers[0], t), vp * m.hidden / t + pos) << name;
      EXPECT_EQ(HeldParamsPerTensorRank(m, layers.back(), t), norm + vp * m.hidden / t) << name;
    }
  }
  std::printf("worst relative FLOP difference (t x per-rank vs t = 1): %.3g; worst parameter difference: %lld\n",
              worst_flops, static_cast<long long>(worst_params));
  EXPECT_LT(worst_flops, 1e-12);
  EXPECT_EQ(worst_params, 0);
  EXPECT_EQ(PaddedVocab(50257, 1), 50257) << "t = 1 keeps V unpadded";
  EXPECT_EQ(PaddedVocab(50257, 4), 50688);
  EXPECT_EQ(PaddedVocab(128256, 8), 129024);
}

TEST(TensorParallelCosts, CollectivesMatchTheRingClosedForm) {
  const ModelConfig m = *LoadModelConfig("llama-3-70b");
  const DeviceSpec d = *LoadDeviceSpec("H100-80GB");
  TrainingShape one;
  one.seq_length = 8192;
  const LayerCostTable base = BuildLayerCosts(m, d, one);
  const double n = 8192.0 * 1 * 8192 * 2;  // s b h e
  const double bw = 4.5e11, alpha = 1e-5;
  double worst = 0;
  for (int t : {2, 4, 8})
    for (bool sp : {false, true})
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        TrainingShape shape = one;
        shape.tp_size = t;
        shape.sequence_parallel = sp;
        shape.recompute = rc;
        TrainingShape ref = one;
        ref.recompute = rc;
        const LayerCostTable tab = BuildLayerCosts(m, d, shape), r1 = BuildLayerCosts(m, d, ref);
        // Two all-reduces (2(t-1)/t n/bw + alpha each), or with SP two
        // reduce-scatter + all-gather pairs ((t-1)/t n/bw + alpha each).
        const double fwd = sp ? 4 * ((t - 1.0) / t * n / bw + alpha) : 2 * (2.0 * (t - 1) / t * n / bw + alpha);
        const double want_f = r1.layers[1].f / t + fwd;
        const double want_i = r1.layers[1].i / t + fwd * (rc == Recompute::kFull ? 2 : 1);
        const double want_w = r1.layers[1].w / t;
        worst = std::max({worst, std::fabs(tab.layers[1].f - want_f) / want_f,
                          std::fabs(tab.layers[1].i - want_i) / want_i, std::fabs(tab.layers[1].w - want_w) / want_w});
      }
  std::printf("worst relative difference of block F/I/W to the ring closed form: %.3g\n", worst);
  EXPECT_LT(worst, 1e-12);
  EXPECT_GT(base.layers[1].f, 0);
  // T = 8 ranks of a node: the intra-node link; 16 would cross nodes.
  EXPECT_EQ(TensorParallelLink(d, 8).bandwidth_bytes_per_s, 4.5e11);
  EXPECT_EQ(TensorParallelLink(d, 16).bandwidth_bytes_per_s, 5e10);
}

PlannerModel Model(const char* config, const char* device) {
  PlannerModel m;
  m.config = *LoadModelConfig(config);
  m.device = *LoadDeviceSpec(device);
  return m;
}

TEST(TensorParallelPlanner, BadInputIsRefusedBeforeAnyCompute) {
  PlannerModel m = Model("llama-2-7b", "H100-80GB");
  PlannerOptions o;
  o.pp_size = 2;
  o.global_batch_size = 8;
  o.seq_length = 4096;
  auto expect_error = [&](const PlannerOptions& opt, const std::string& text) {
    auto r = EvaluateCandidates(m, opt);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
  };
  o.tp_size = 3;
  expect_error(o, "--tensor-model-parallel-size 3 does not divide the model's 32 attention heads");
  o.tp_size = 16;
  expect_error(o, "--tensor-model-parallel-size 16 is more than H100-80GB's 8 devices per node");
  o.tp_size = 0;
  expect_error(o, "--tensor-model-parallel-size must be >= 1, got 0");
  o.tp_size = 1;
  o.sequence_parallel = true;
  expect_error(o, "--sequence-parallel needs --tensor-model-parallel-size > 1");
  o.sequence_parallel.reset();
  o.tp_size = 2;
  o.seq_length = 4095;
  expect_error(o, "the sequence length 4095 is not a multiple of 2");
  // A cost table holds whole layers on one device.
  PlannerModel table;
  table.table = BuildLayerCosts(*m.config, *m.device, TrainingShape{});
  o.seq_length = 0;
  auto r = EvaluateCandidates(table, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs a HF --model-config"), std::string::npos) << r.status().message();
  // --num-devices not a multiple of --tp.
  PlannerOptions n = o;
  n.tp_size = 4;
  auto s = SearchDeviceSplits(m, n, 6);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--num-devices 6 is not a multiple of --tensor-model-parallel-size 4"),
            std::string::npos)
      << s.status().message();
  // On the CPU-core device T above gpus_per_node is allowed, with a note.
  PlannerModel cpu = Model("gpt2", "CPU-core");
  PlannerOptions c;
  c.pp_size = 2;
  c.tp_size = 2;
  c.global_batch_size = 4;
  c.seq_length = 128;
  c.schedules = {"1f1b"};
  auto ok = EvaluateCandidates(cpu, c);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->notes.size(), 1u);
  EXPECT_NE(ok->notes[0].find("allowed on a CPU device"), std::string::npos) << ok->notes[0];
}

TEST(TensorParallelPlan, VersionThreeRoundTripAndVersionTwo) {
  PlannerModel m = Model("gpt2", "A100-40GB");
  PlannerOptions o;
  o.pp_size = 2;
  o.dp_size = 2;
  o.tp_size = 4;
  o.global_batch_size = 16;
  o.seq_length = 512;
  o.schedules = {"1f1b"};
  auto r = SearchPlans(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto plan = BuildPlan(*r, m, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->tp_size, 4);
  EXPECT_TRUE(plan->sequence_parallel) << "on by default with T > 1";
  const std::string text = PlanToJson(*plan);
  auto back = ParsePlan(text, "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(PlanToJson(*back), text);
  nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["version"], 3);
  // A version-2 file has no tensor parallelism.
  nlohmann::json v2 = doc;
  v2["version"] = 2;
  v2.erase("tp_size");
  v2.erase("sequence_parallel");
  auto old = ParsePlan(v2.dump(), "v2.json");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->tp_size, 1);
  EXPECT_FALSE(old->sequence_parallel);
  const struct {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  } cases[] = {
      {[](nlohmann::json& d) { d.erase("tp_size"); }, "p.json: tp_size: field is missing"},
      {[](nlohmann::json& d) { d["tp_size"] = 0; }, "p.json: tp_size: must be >= 1"},
      {[](nlohmann::json& d) { d["tp_size"] = 1; }, "sequence_parallel: is true but tp_size is 1"},
      {[](nlohmann::json& d) { d["tp_size"] = 5; }, "tp_size: --tensor-model-parallel-size 5 does not divide"},
  };
  for (const auto& c : cases) {
    nlohmann::json d = doc;
    c.edit(d);
    auto bad = ParsePlan(d.dump(), "p.json");
    ASSERT_FALSE(bad.ok()) << c.expect;
    EXPECT_NE(bad.status().message().find(c.expect), std::string::npos) << bad.status().message();
  }
}

// The branch and bound of SearchDeviceSplits chooses what an exhaustive
// search (every split, every candidate simulated) chooses.
TEST(TensorParallelPlanner, BranchAndBoundMatchesExhaustiveSearch) {
  struct Case {
    const char* model;
    const char* device;
    int devices;
    int64_t gbs, seq;
  } cases[] = {{"gpt2-medium", "A100-40GB", 16, 64, 1024}, {"llama-2-7b", "A100-40GB", 8, 32, 4096}};
  double worst = 0;
  for (const Case& k : cases) {
    PlannerModel m = Model(k.model, k.device);
    PlannerOptions o;
    o.global_batch_size = k.gbs;
    o.seq_length = k.seq;
    o.search_tensor_parallel = true;
    o.search_distributed_optimizer = true;
    o.prune_by_bound = true;
    o.max_virtual_stages = 2;
    auto fast = SearchDeviceSplits(m, o, k.devices);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    const DeviceSplit& chosen = fast->splits[fast->chosen];
    const double fast_step = chosen.result.candidates[chosen.result.chosen].step_s;
    double best = std::numeric_limits<double>::infinity();
    for (int t = 1; t <= 8; ++t) {
      if (k.devices % t || !CheckTensorParallel(*m.config, t, t > 1, k.seq).ok()) continue;
      for (int p = 1; p <= k.devices / t; ++p) {
        if ((k.devices / t) % p) continue;
        const int d = k.devices / t / p;
        for (bool zero : {false, true}) {
          if (zero && d < 2) continue;
          PlannerOptions e = o;
          e.search_tensor_parallel = false;
          e.tp_size = t;
          e.pp_size = p;
          e.dp_size = d;
          e.distributed_optimizer = zero;
          e.find_min_pp = false;
          auto r = EvaluateCandidates(m, e);
          if (r.ok() && r->chosen >= 0) best = std::min(best, r->candidates[r->chosen].step_s);
        }
      }
    }
    std::printf("%s on %d x %s: branch and bound %s %.6f s, exhaustive %.6f s\n", k.model, k.devices, k.device,
                LayoutName(chosen.tp_size, chosen.pp_size, chosen.dp_size).c_str(), fast_step, best);
    worst = std::max(worst, std::fabs(fast_step - best) / best);
  }
  std::printf("worst relative difference of the chosen step: %.3g\n", worst);
  EXPECT_LT(worst, 1e-9);
}

// One UnitOrders shared by the searches of several splits (as
// SearchDeviceSplits shares it) gives each split the candidate table its own
// orders give: an order cached for one (T, D, ZeRO-1) is the order another
// split with the same family, P, v and m would generate.
TEST(TensorParallelPlanner, SharedUnitOrdersGiveTheSameCandidates) {
  PlannerModel m = Model("gpt2-medium", "A100-40GB");
  PlannerOptions o;
  o.global_batch_size = 64;
  o.seq_length = 1024;
  o.max_virtual_stages = 2;
  o.find_min_pp = false;
  UnitOrders shared;
  int compared = 0, simulated = 0;
  for (int p : {2, 4}) {
    for (int t : {1, 2}) {
      for (bool zero : {false, true}) {
        PlannerOptions e = o;
        e.tp_size = t;
        e.pp_size = p;
        e.dp_size = 16 / t / p;
        e.distributed_optimizer = zero;
        auto with_shared = EvaluateCandidates(m, e, shared);
        auto alone = EvaluateCandidates(m, e);
        ASSERT_EQ(with_shared.ok(), alone.ok());
        if (!alone.ok()) continue;
        ASSERT_EQ(with_shared->candidates.size(), alone->candidates.size());
        EXPECT_EQ(with_shared->chosen, alone->chosen);
        for (size_t k = 0; k < alone->candidates.size(); ++k) {
          const Candidate &a = with_shared->candidates[k], &b = alone->candidates[k];
          EXPECT_EQ(a.schedule, b.schedule);
          EXPECT_EQ(a.virtual_stages, b.virtual_stages);
          EXPECT_EQ(a.batch.num_microbatches, b.batch.num_microbatches);
          EXPECT_EQ(a.recompute, b.recompute);
          EXPECT_EQ(a.reason, b.reason);
          EXPECT_EQ(a.boundaries, b.boundaries);
          EXPECT_EQ(a.step_s, b.step_s);
          EXPECT_EQ(a.max_peak_bytes, b.max_peak_bytes);
          ++compared;
          simulated += b.simulated;
        }
      }
    }
  }
  std::printf("%d candidates compared, %d simulated\n", compared, simulated);
  EXPECT_GT(simulated, 0);
}

}  // namespace
}  // namespace pw

namespace pw {
namespace {

// A chosen plan idling more than half the step is never printed silently.
TEST(TensorParallelPlanner, BubbleAboveHalfSaysWhyAndWhatWouldChangeIt) {
  SearchResult r;
  r.pp_size = 64;
  r.dp_size = 2;
  Candidate chosen;
  chosen.schedule = "zb-auto";
  chosen.feasible = true;
  chosen.bubble_ratio = 0.955;
  chosen.batch.num_microbatches = 768;
  Candidate rejected;
  rejected.schedule = "1f1b";
  rejected.reject = RejectKind::kMemory;
  rejected.reason = "memory: rank 0 peak 91.00 GiB > --memory-limit 74.42 GiB";
  rejected.max_peak_bytes = int64_t{91} << 30;
  r.candidates = {chosen, rejected};
  r.chosen = 0;
  const std::string w = BubbleWarning(r);
  std::printf("%s", w.c_str());
  EXPECT_NE(w.find("bubble ratio is 0.955 (> 0.5)"), std::string::npos) << w;
  EXPECT_NE(w.find("why: memory. 1 candidates were rejected for memory"), std::string::npos) << w;
  EXPECT_NE(w.find("--tensor-model-parallel-size"), std::string::npos) << w;
  EXPECT_NE(FormatPlanSummary(r).find(w), std::string::npos) << "the summary carries the warning";
  r.candidates[0].bubble_ratio = 0.5;
  EXPECT_EQ(BubbleWarning(r), "") << "0.5 itself is not above the threshold";
}

}  // namespace
}  // namespace pw
