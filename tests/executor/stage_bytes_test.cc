// One cost derivation: the bytes a plan promises per stage are the bytes the
// executor's real stage modules hold. Parameters: the planner's count
// (models/spec BuildLayerList, held_params) against the numel of every
// tensor the executor builds, exactly; static bytes = numel x element size x
// 4 (parameter, gradient, AdamW m and v). Activations: the live CPU bytes a
// forward leaves held until its backward (the counting allocator) against
// the plan's stages[].memory_bytes.activation, within 10 %.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "executor/comm/loopback_communicator.h"
#include "executor/runtime/cpu_allocator.h"
#include "executor/runtime/engine.h"
#include "models/spec/footprint.h"
#include "models/spec/model_config.h"
#include "tests/executor/executor_test_util.h"
#include "tests/testing/test_plans.h"

namespace pw::exec::testing {
namespace {

// What the executor builds of a shipped GPT-2-family config: untied head and
// no dropout (the executor refuses dropout), and at most `max_blocks`
// blocks (every block has the same shape).
nlohmann::json Buildable(nlohmann::json config, int max_blocks) {
  config["tie_word_embeddings"] = false;
  for (const char* p : {"attn_pdrop", "resid_pdrop", "embd_pdrop"}) config[p] = 0.0;
  if (config.contains("n_layer") && config["n_layer"].get<int>() > max_blocks) config["n_layer"] = max_blocks;
  return config;
}

// Builds the engines of `plan` on loopback ranks and returns every rank's
// StageParameters(), in stage order.
std::vector<StageParameterBytes> CountStages(const Plan& plan, const EngineOptions& options) {
  const int P = plan.pp_size;
  auto hub = std::make_shared<LoopbackHub>(P, 60.0);
  std::vector<std::vector<StageParameterBytes>> per_rank(P);
  std::vector<Status> status(P);
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      auto engine = Engine::Create(plan, comm, options);
      if (!engine.ok()) {
        status[r] = engine.status();
        return;
      }
      per_rank[r] = (*engine)->StageParameters();
    });
  for (auto& t : threads) t.join();
  std::vector<StageParameterBytes> all(plan.num_stages);
  for (int r = 0; r < P; ++r) {
    EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].ToString();
    for (const StageParameterBytes& s : per_rank[r]) all[s.stage] = s;
  }
  return all;
}

struct ConfigCase {
  std::string name;
  nlohmann::json config;
  int pp;
};

TEST(StageBytes, PlannedParameterBytesAreTheExecutorsTensors) {
  std::vector<ConfigCase> cases = {
      {"demo model (launch/demo.sh)",
       nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 8, "n_embd": 128, "n_head": 4, "n_positions": 64,
                                 "vocab_size": 256, "tie_word_embeddings": false, "attn_pdrop": 0.0,
                                 "resid_pdrop": 0.0, "embd_pdrop": 0.0})"),
       4},
      {"n_inner and a wide vocabulary",
       nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 3, "n_embd": 48, "n_head": 3, "n_inner": 80,
                                 "n_positions": 32, "vocab_size": 1000, "tie_word_embeddings": false,
                                 "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0})"),
       3},
      {"llama GQA (a=4, k=2), all biases, head_dim 12",
       nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 3, "hidden_size": 32,
                                 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
                                 "intermediate_size": 56, "max_position_embeddings": 32, "vocab_size": 256,
                                 "attention_bias": true, "mlp_bias": true})"),
       3},
      {"qwen2 (q/k/v biases only, MQA)",
       nlohmann::json::parse(R"({"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 32,
                                 "num_attention_heads": 4, "num_key_value_heads": 1, "intermediate_size": 64,
                                 "max_position_embeddings": 32, "vocab_size": 512})"),
       2},
  };
  // Tied LM heads: the planner counts the table once in the embedding's
  // params and a replica in the head's held_params; the executor's head
  // stage holds that replica (also when one stage holds both, P=1).
  cases.push_back({"demo model, tied head", cases[0].config, 4});
  cases.back().config["tie_word_embeddings"] = true;
  cases.push_back({"demo model, tied head, one stage", cases.back().config, 1});
  cases.push_back({"llama GQA, tied head", cases[2].config, 3});
  cases.back().config["tie_word_embeddings"] = true;
  // Qwen3: the planner's 2 d q/k norm weights per block (its registry row's
  // footprint terms) are the executor's q_norm and k_norm tensors.
  cases.push_back({"qwen3 GQA, head_dim 12, tied head",
                   nlohmann::json::parse(R"({"model_type": "qwen3", "num_hidden_layers": 3, "hidden_size": 32,
                                             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
                                             "intermediate_size": 56, "max_position_embeddings": 32,
                                             "vocab_size": 256, "tie_word_embeddings": true})"),
                   3});
  cases.push_back({"qwen3 untied, attention_bias", cases.back().config, 2});
  cases.back().config["tie_word_embeddings"] = false;
  cases.back().config["attention_bias"] = true;
  // Shipped GPT-2-family configs, at most 2 blocks each (the embedding and
  // head are full size). gpt3-175b is left out: its embedding alone is 617 M
  // parameters (2.5 GB in float32), too much for a unit test.
  for (const char* shipped : {"gpt2", "gpt2-medium", "gpt2-xl"}) {
    auto path = ResolveShippedFile(shipped, "configs", "--model-config");
    ASSERT_TRUE(path.ok()) << path.status().ToString();
    auto raw = ReadJsonFile(*path);
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    cases.push_back({std::string("shipped ") + shipped + " (2 blocks)", Buildable(*raw, 2), 2});
  }
  InstallTrackingCpuAllocator();
  for (const ConfigCase& c : cases) {
    for (int bytes : {4, 8}) {
      PlanSpec spec;
      spec.schedule = "1f1b";
      spec.pp_size = c.pp;
      spec.num_microbatches = 2;
      spec.model = c.config;
      spec.seq_length = 8;
      spec.micro_batch_size = 1;
      spec.bytes_per_element = bytes;
      StatusOr<Plan> plan = BuildPlan(spec);
      ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status().ToString();
      EngineOptions options = Fp64Options();
      options.double_precision = bytes == 8;
      std::vector<StageParameterBytes> built = CountStages(*plan, options);
      const std::vector<LayerSpec> layers = BuildLayerList(*plan->model);
      int64_t worst = 0;
      for (const PlanStage& s : plan->stages) {
        int64_t planned_params = 0;
        for (int l = s.layer_begin; l < s.layer_end; ++l) planned_params += layers[l].held_params;
        const StageParameterBytes& real = built[s.index];
        EXPECT_EQ(real.numel, planned_params)
            << c.name << ": stage " << s.index << " layers [" << s.layer_begin << ", " << s.layer_end << ")";
        EXPECT_EQ(real.bytes, planned_params * bytes) << c.name << ": stage " << s.index;
        // Static bytes: parameter + gradient + AdamW m + v, each of the element size.
        EXPECT_EQ(s.memory.static_bytes, real.bytes * 4) << c.name << ": stage " << s.index << " static bytes";
        worst = std::max(worst, std::abs(real.numel - planned_params));
      }
      // Every stage together: the model's published count (a tied table
      // once) plus, when tied, the head's one replica of V x h.
      int64_t built_total = 0;
      for (const StageParameterBytes& b : built) built_total += b.numel;
      const ModelConfig& mc = *plan->model;
      EXPECT_EQ(built_total, TotalParameters(mc) + (mc.tied ? mc.vocab * mc.hidden : 0)) << c.name;
      std::printf("%-40s fp%d P=%d: %d stages, worst |planned - built| parameters = %lld\n", c.name.c_str(), bytes * 8,
                  c.pp, plan->num_stages, static_cast<long long>(worst));
    }
  }
}

// The activation bytes a stage holds from the end of F to its backward: one
// rank, GPipe, one microbatch (F then B): the live CPU bytes just before the
// backward less those before the forward, against the plan's activation.
TEST(StageBytes, PlannedActivationBytesMatchTheCountingAllocator) {
  InstallTrackingCpuAllocator();
  const std::vector<std::pair<std::string, nlohmann::json>> models = {
      {"gpt2 demo",
       nlohmann::json::parse(
           R"({"model_type": "gpt2", "n_layer": 4, "n_embd": 128, "n_head": 4, "n_positions": 64, "vocab_size": 256,
               "tie_word_embeddings": false, "attn_pdrop": 0.0, "resid_pdrop": 0.0, "embd_pdrop": 0.0})")},
      // GQA with biases: the planner counts K and V at k heads (the grouped
      // attention never repeats them) and each RMSNorm's input only.
      {"llama GQA+bias",
       nlohmann::json::parse(
           R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 128, "num_attention_heads": 8,
               "num_key_value_heads": 2, "intermediate_size": 344, "max_position_embeddings": 64,
               "vocab_size": 256, "attention_bias": true, "mlp_bias": true})")},
      {"qwen2 MQA", nlohmann::json::parse(
                        R"({"model_type": "qwen2", "num_hidden_layers": 4, "hidden_size": 128, "num_attention_heads": 4,
               "num_key_value_heads": 1, "head_dim": 48, "intermediate_size": 256, "max_position_embeddings": 64,
               "vocab_size": 256})")},
      // Qwen3: the q/k norms keep their inputs, s b (a + k) d (the family's
      // footprint terms, models/spec/model_family.cc).
      {"qwen3 GQA hd48",
       nlohmann::json::parse(
           R"({"model_type": "qwen3", "num_hidden_layers": 4, "hidden_size": 128, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 48, "intermediate_size": 256, "max_position_embeddings": 64,
               "vocab_size": 256})")},
  };
  for (const auto& [model_name, demo] : models)
    for (int rows : {1, 4}) {
      for (int bytes : {4, 8}) {
        PlanSpec spec;
        spec.schedule = "gpipe";
        spec.pp_size = 1;
        spec.num_microbatches = 1;
        spec.model = demo;
        spec.seq_length = 64;
        spec.micro_batch_size = rows;
        spec.bytes_per_element = bytes;
        StatusOr<Plan> plan = BuildPlan(spec);
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        EngineOptions options = Fp64Options();
        options.double_precision = bytes == 8;
        auto hub = std::make_shared<LoopbackHub>(1, 60.0);
        LoopbackCommunicator comm(hub, 0);
        auto engine = Engine::Create(*plan, comm, options);
        ASSERT_TRUE(engine.ok()) << engine.status().ToString();
        const TokenBatch batch = RandomBatch(rows, 64, 7);
        // A first step allocates gradients and AdamW state; the second is measured.
        ASSERT_TRUE((*engine)->Step(batch).ok());
        int64_t before_f = 0, before_b = 0;
        StepHooks hooks;
        const std::vector<Action>& actions = plan->ranks[0];
        hooks.before_action = [&](int index) {
          if (actions[index].type == ActionType::kF) before_f = TrackedCpuBytes();
          if (actions[index].type == ActionType::kB) before_b = TrackedCpuBytes();
        };
        ASSERT_TRUE((*engine)->Step(batch, true, &hooks).ok());
        const int64_t measured = before_b - before_f;
        const int64_t planned = plan->stages[0].memory.activation;
        const double ratio = static_cast<double>(measured) / static_cast<double>(planned);
        std::printf("activation bytes, %s rows=%d fp%d: measured %lld, planned %lld, measured/planned %.3f\n",
                    model_name.c_str(), rows, bytes * 8, static_cast<long long>(measured),
                    static_cast<long long>(planned), ratio);
        EXPECT_NEAR(ratio, 1.0, 0.10) << model_name << " rows=" << rows << " fp" << bytes * 8;
      }
    }
}

}  // namespace
}  // namespace pw::exec::testing
