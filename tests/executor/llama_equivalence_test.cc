// Equivalence of the pipelined executor with the single-process reference
// for Llama-family models (models/torch/llama.h), fp64, for every schedule
// family: grouped-query attention (kv heads < heads, and one kv head),
// attention and MLP biases, qwen2's q/k/v-only biases, an explicit head_dim
// (H D != C), RoPE scaling of types llama3 and linear (the latter through
// transformers 5.x `rope_parameters`); and Qwen3 (models/torch/qwen3.cc:
// per-head RMSNorm of q and k before RoPE, head_dim != hidden / heads, tied
// and untied, with and without attention_bias). Under zero-bubble schedules every
// weight GEMM (q, k, v, o, gate, up, down, lm_head) and the embedding's
// scatter-add go through the deferred I/W split. After one step: loss and
// every parameter's gradient; after 3 AdamW steps: every parameter.
// Tolerance: relative difference <= 1e-10 per tensor (max |a-b| / max |ref|).
#include <map>
#include <numeric>

#include "schedules/registry.h"
#include "tests/executor/executor_test_util.h"

namespace pw::exec::testing {
namespace {

constexpr double kTolerance = 1e-10;
constexpr int kSeq = 8;

// The three Llama-family configs the cases rotate through (4 blocks each).
std::vector<std::pair<std::string, nlohmann::json>> LlamaConfigs() {
  return {
      {"llama-gqa", nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 16,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24,
          "max_position_embeddings": 16, "vocab_size": 256, "rms_norm_eps": 1e-5})")},
      // head_dim 6: q is 4 x 6 = 24 wide against hidden 16; original context
      // 8 puts one frequency in llama3's smoothed band and two in the scaled one.
      {"llama-bias-hd6-llama3", nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 4,
          "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 6,
          "intermediate_size": 20, "max_position_embeddings": 16, "vocab_size": 256, "attention_bias": true,
          "mlp_bias": true, "rope_theta": 10000.0,
          "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0, "original_max_position_embeddings": 8}})")},
      {"qwen2-mqa-linear", nlohmann::json::parse(R"({"model_type": "qwen2", "num_hidden_layers": 4,
          "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 1, "intermediate_size": 24,
          "max_position_embeddings": 16, "vocab_size": 300, "sliding_window": 4, "use_sliding_window": false,
          "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0}})")},
  };
}

struct LlamaCase {
  std::string schedule;
  int pp;
  int m;
  int config;  // index into LlamaConfigs()
};

std::string CaseName(const LlamaCase& c) {
  return LlamaConfigs()[c.config].first + " " + c.schedule + " P=" + std::to_string(c.pp) + " m=" + std::to_string(c.m);
}

void PrintTo(const LlamaCase& c, std::ostream* os) { *os << CaseName(c); }

// Every registered family x P in {2, 3} x m in {1 (< P), P + 1 (not
// divisible by P)}; the configs rotate so that each family meets several.
std::vector<LlamaCase> AllLlamaCases() {
  std::vector<LlamaCase> cases;
  int i = 0;
  for (const std::string& family : ScheduleNames())
    for (int p : {2, 3})
      for (int m : {1, p + 1}) cases.push_back({family, p, m, i++ % 3});
  return cases;
}

class LlamaEquivalenceTest : public ::testing::TestWithParam<LlamaCase> {};

TEST_P(LlamaEquivalenceTest, MatchesSingleProcess) {
  const LlamaCase& c = GetParam();
  PlanSpec spec;
  spec.schedule = c.schedule;
  spec.pp_size = c.pp;
  spec.num_microbatches = c.m;
  spec.model = LlamaConfigs()[c.config].second;
  spec.seq_length = kSeq;
  spec.micro_batch_size = 2;
  spec.bytes_per_element = 8;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << CaseName(c) << ": cannot build the plan: " << plan.status().ToString();
  ASSERT_EQ(plan->model->family, ModelFamily::kLlama);

  std::vector<TokenBatch> batches;
  for (int i = 0; i < 3; ++i) batches.push_back(RandomBatch(2 * c.m, kSeq, 300 + i));
  const std::vector<NamedValues> grads = ExpectMatchesReference(*plan, batches, CaseName(c), kTolerance);
  ASSERT_FALSE(grads.empty()) << CaseName(c) << ": no rank finished";
  // Every parameter got a nonzero gradient (biases, norms, all projections).
  for (const NamedValues& nv : grads) {
    double max_abs = 0;
    for (double v : nv.values) max_abs = std::max(max_abs, std::fabs(v));
    EXPECT_GT(max_abs, 0.0) << CaseName(c) << ": " << nv.name << " has a zero gradient";
  }
}

// Qwen3 configs (4 blocks each): the family's own block (q_norm, k_norm)
// through every schedule family.
std::vector<std::pair<std::string, nlohmann::json>> Qwen3Configs() {
  return {
      // head_dim 6: q is 4 x 6 = 24 wide against hidden 16; tied head.
      {"qwen3-gqa-hd6-tied", nlohmann::json::parse(R"({"model_type": "qwen3", "num_hidden_layers": 4,
          "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 6,
          "intermediate_size": 24, "max_position_embeddings": 16, "vocab_size": 300, "rms_norm_eps": 1e-6,
          "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}, "tie_word_embeddings": true,
          "sliding_window": null, "use_sliding_window": false})")},
      // attention_bias (q, k, v and o: Qwen3Attention), MQA, untied.
      {"qwen3-mqa-bias-untied", nlohmann::json::parse(R"({"model_type": "qwen3", "num_hidden_layers": 4,
          "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 8,
          "intermediate_size": 20, "max_position_embeddings": 16, "vocab_size": 256, "attention_bias": true,
          "tie_word_embeddings": false})")},
  };
}

struct Qwen3Case {
  std::string schedule;
  int pp;
  int m;
  int config;  // index into Qwen3Configs()
};

std::string CaseName(const Qwen3Case& c) {
  return Qwen3Configs()[c.config].first + " " + c.schedule + " P=" + std::to_string(c.pp) + " m=" + std::to_string(c.m);
}

void PrintTo(const Qwen3Case& c, std::ostream* os) { *os << CaseName(c); }

// Every registered family x P in {2, 3} x m in {1, P + 1}, the two configs
// alternating.
std::vector<Qwen3Case> AllQwen3Cases() {
  std::vector<Qwen3Case> cases;
  int i = 0;
  for (const std::string& family : ScheduleNames())
    for (int p : {2, 3})
      for (int m : {1, p + 1}) cases.push_back({family, p, m, i++ % 2});
  return cases;
}

class Qwen3EquivalenceTest : public ::testing::TestWithParam<Qwen3Case> {};

TEST_P(Qwen3EquivalenceTest, MatchesSingleProcess) {
  const Qwen3Case& c = GetParam();
  PlanSpec spec;
  spec.schedule = c.schedule;
  spec.pp_size = c.pp;
  spec.num_microbatches = c.m;
  spec.model = Qwen3Configs()[c.config].second;
  spec.seq_length = kSeq;
  spec.micro_batch_size = 2;
  spec.bytes_per_element = 8;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << CaseName(c) << ": cannot build the plan: " << plan.status().ToString();
  ASSERT_EQ(plan->model->family, ModelFamily::kQwen3);
  std::vector<TokenBatch> batches;
  for (int i = 0; i < 3; ++i) batches.push_back(RandomBatch(2 * c.m, kSeq, 500 + i));
  const std::vector<NamedValues> grads = ExpectMatchesReference(*plan, batches, CaseName(c), kTolerance);
  ASSERT_FALSE(grads.empty()) << CaseName(c) << ": no rank finished";
  int norms = 0;
  for (const NamedValues& nv : grads) {
    double max_abs = 0;
    for (double v : nv.values) max_abs = std::max(max_abs, std::fabs(v));
    EXPECT_GT(max_abs, 0.0) << CaseName(c) << ": " << nv.name << " has a zero gradient";
    norms += nv.name.find("q_norm") != std::string::npos || nv.name.find("k_norm") != std::string::npos;
  }
  EXPECT_GT(norms, 0) << CaseName(c) << ": no q/k norm gradient compared";
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, Qwen3EquivalenceTest, ::testing::ValuesIn(AllQwen3Cases()),
                         [](const ::testing::TestParamInfo<Qwen3Case>& info) {
                           std::string n = CaseName(info.param);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n + "_" + std::to_string(info.index);
                         });

INSTANTIATE_TEST_SUITE_P(AllFamilies, LlamaEquivalenceTest, ::testing::ValuesIn(AllLlamaCases()),
                         [](const ::testing::TestParamInfo<LlamaCase>& info) {
                           std::string n = CaseName(info.param);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n + "_" + std::to_string(info.index);
                         });

// The parameters the Llama stages hold are the HF names and shapes: q/k/v
// biases without an o_proj bias for qwen2, all four with attention_bias.
TEST(LlamaParameters, NamesAndBiasesFollowTheConfig) {
  for (int config : {1, 2}) {
    PlanSpec spec;
    spec.schedule = "1f1b";
    spec.pp_size = 1;
    spec.num_microbatches = 1;
    spec.model = LlamaConfigs()[config].second;
    spec.seq_length = kSeq;
    spec.bytes_per_element = 8;
    StatusOr<Plan> plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ReferenceRun ref = RunReference(*plan->model, {RandomBatch(1, kSeq, 1)}, Fp64Options());
    ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
    std::map<std::string, size_t> sizes;
    for (const NamedValues& nv : ref.grads_after_first) sizes[nv.name] = nv.values.size();
    EXPECT_EQ(sizes.count("embedding.embed_tokens"), 1u);
    EXPECT_EQ(sizes.count("head.norm.weight"), 1u);
    EXPECT_EQ(sizes.count("block.0.input_layernorm.weight"), 1u);
    EXPECT_EQ(sizes.count("block.0.q_proj.bias"), 1u);
    EXPECT_EQ(sizes.count("block.0.v_proj.bias"), 1u);
    if (config == 1) {  // attention_bias, mlp_bias, head_dim 6: q (24, 16), k (12, 16)
      EXPECT_EQ(sizes["block.0.q_proj.weight"], 24u * 16u);
      EXPECT_EQ(sizes["block.0.k_proj.weight"], 12u * 16u);
      EXPECT_EQ(sizes["block.0.o_proj.weight"], 16u * 24u);
      EXPECT_EQ(sizes.count("block.0.o_proj.bias"), 1u);
      EXPECT_EQ(sizes.count("block.0.down_proj.bias"), 1u);
    } else {  // qwen2: no o_proj or MLP bias; one kv head of 4 channels
      EXPECT_EQ(sizes["block.0.k_proj.weight"], 4u * 16u);
      EXPECT_EQ(sizes.count("block.0.o_proj.bias"), 0u);
      EXPECT_EQ(sizes.count("block.0.down_proj.bias"), 0u);
      EXPECT_EQ(sizes["embedding.embed_tokens"], 300u * 16u);
    }
  }
}

// The plan's model section carries the RoPE scaling and qwen2's q/k/v-only
// biases through its text; a plan without them has neither key.
TEST(LlamaPlan, ModelSectionRoundTripsRopeScalingAndQkvBias) {
  for (int config : {0, 1, 2}) {
    PlanSpec spec;
    spec.schedule = "1f1b";
    spec.pp_size = 2;
    spec.num_microbatches = 2;
    spec.model = LlamaConfigs()[config].second;
    spec.seq_length = kSeq;
    StatusOr<Plan> plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const std::string text = PlanToJson(*plan);
    StatusOr<Plan> back = ParsePlan(text, "plan.json");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->model->rope_scaling == plan->model->rope_scaling) << config;
    EXPECT_EQ(back->model->qkv_bias, plan->model->qkv_bias) << config;
    EXPECT_EQ(back->model->rope_theta, plan->model->rope_theta) << config;
    EXPECT_EQ(text.find("\"rope_scaling\"") != std::string::npos, config != 0) << config;
    EXPECT_EQ(text.find("\"qkv_bias\"") != std::string::npos, config == 2) << config;
  }
  EXPECT_EQ(LlamaConfigs().size(), 3u);
  // What was read: llama3 scaling from 4.x rope_scaling, linear + theta from 5.x rope_parameters.
  PlanSpec spec;
  spec.pp_size = 2;
  spec.num_microbatches = 2;
  spec.seq_length = kSeq;
  spec.model = LlamaConfigs()[1].second;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->model->rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(plan->model->rope_scaling.original_max_position_embeddings, 8);
  spec.model = LlamaConfigs()[2].second;
  plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->model->rope_scaling.type, RopeScaling::Type::kLinear);
  EXPECT_EQ(plan->model->rope_theta, 1e6);
}

// Tied LM heads (tie_word_embeddings), GPT-2 and Llama, P in {2, 3}: the
// last stage's replica of the token table gets the sum of both gradients (a
// message between the first and last stage ranks, or a local sum where one
// rank holds both, as zb-v's rank 0 does) and the same AdamW update. Loss,
// every gradient (both copies) and every parameter after 3 AdamW steps
// against the single-process reference whose head uses the table itself;
// once with global-norm clipping (the shared matrix counted once).
TEST(TiedHead, MatchesSingleProcess) {
  const std::vector<std::pair<std::string, nlohmann::json>> models = {
      {"gpt2-tied", nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 4, "n_embd": 16, "n_head": 2,
          "n_positions": 16, "vocab_size": 256, "tie_word_embeddings": true, "attn_pdrop": 0, "resid_pdrop": 0,
          "embd_pdrop": 0})")},
      {"llama-gqa-tied",
       [] {
         nlohmann::json j = LlamaConfigs()[0].second;
         j["tie_word_embeddings"] = true;
         return j;
       }()},
  };
  int cases = 0;
  for (const auto& [model_name, model] : models)
    for (const char* schedule : {"1f1b", "interleaved-1f1b", "zb-h1", "zb-v"})
      for (int pp : {2, 3})
        for (double clip : {0.0, 0.05}) {
          if (clip > 0 && (pp != 2 || std::string(schedule) != "1f1b")) continue;
          PlanSpec spec;
          spec.schedule = schedule;
          spec.pp_size = pp;
          spec.num_microbatches = pp + 1;
          spec.model = model;
          spec.seq_length = kSeq;
          spec.micro_batch_size = 1;
          spec.bytes_per_element = 8;
          StatusOr<Plan> plan = BuildPlan(spec);
          ASSERT_TRUE(plan.ok()) << model_name << " " << schedule << ": " << plan.status().ToString();
          ASSERT_TRUE(plan->model->tied);
          std::vector<TokenBatch> batches;
          for (int i = 0; i < 3; ++i) batches.push_back(RandomBatch(pp + 1, kSeq, 500 + i));
          EngineOptions options = Fp64Options();
          options.clip_grad_norm = clip;
          const std::string name = model_name + " " + schedule + " P=" + std::to_string(pp) + (clip > 0 ? " clip" : "");
          const std::vector<NamedValues> grads = ExpectMatchesReference(*plan, batches, name, kTolerance, options);
          ASSERT_FALSE(grads.empty()) << name;
          ++cases;
        }
  EXPECT_EQ(cases, 2 * 4 * 2 + 2);
}

}  // namespace
}  // namespace pw::exec::testing
