// Incremental decoding (gpt.h KvCache, models/torch/kv_cache.cc) against the
// training forward: for GPT-2, Llama (grouped-query, tied, Llama 3.1 RoPE
// scaling) and Qwen3 (head_dim != hidden / heads) stages in fp64, the logits
// of every position fed through GptStage::ForwardCached (a prompt of several
// positions, then a chunk, then one token at a time) equal those of the
// whole sequence's forward. Prints the worst difference per family.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/spec/model_config.h"
#include "models/torch/gpt.h"

namespace pw::models {
namespace {

ModelConfig Parse(const char* text) {
  StatusOr<ModelConfig> m = ParseModelConfig(nlohmann::json::parse(text), "kv_cache_test");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

TEST(KvCache, CachedLogitsEqualTheWholeSequenceForward) {
  struct Case {
    const char* name;
    const char* config;
  } cases[] = {
      {"gpt2", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 24, "n_head": 4, "n_positions": 32,
                   "vocab_size": 40, "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0,
                   "embd_pdrop": 0})"},
      {"llama", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "intermediate_size": 48, "max_position_embeddings": 32,
                    "vocab_size": 40, "tie_word_embeddings": true, "rms_norm_eps": 1e-5,
                    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8}})"},
      {"qwen3", R"({"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 24, "num_attention_heads": 4,
                    "num_key_value_heads": 1, "head_dim": 10, "intermediate_size": 32,
                    "max_position_embeddings": 32, "vocab_size": 40, "tie_word_embeddings": false,
                    "rms_norm_eps": 1e-6})"},
  };
  for (const Case& c : cases) {
    const ModelConfig m = Parse(c.config);
    GptStage stage(m, 0, LayerCount(m), 7, torch::kDouble);
    stage->eval();
    // Wider weights than the init, so that attention is far from uniform.
    {
      torch::NoGradGuard no_grad;
      torch::manual_seed(11);
      for (auto& [name, p] : stage->NamedParameters()) p.add_(torch::randn_like(p) * 0.3);
    }
    const int64_t b = 2, T = 14, capacity = 20;
    torch::manual_seed(5);
    torch::Tensor tokens = torch::randint(0, m.vocab, {b, T}, torch::kLong);  // (b, T)
    torch::Tensor full;
    {
      torch::NoGradGuard no_grad;
      full = stage->forward(tokens);  // (b, T, V)
    }
    std::vector<KvCache> caches;
    double worst = 0;
    int64_t pos = 0;
    // Prompt of 5, a chunk of 4, then single tokens.
    for (int64_t t : {5, 4, 1, 1, 1, 1, 1}) {
      torch::Tensor logits = stage->ForwardCached(tokens.narrow(1, pos, t), pos, caches, capacity);  // (b, 1, V)
      pos += t;
      ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{b, 1, m.vocab})) << c.name;
      const double diff = (logits.squeeze(1) - full.select(1, pos - 1)).abs().max().item<double>();
      worst = std::max(worst, diff);
      EXPECT_LT(diff, 1e-10) << c.name << " position " << pos - 1;
    }
    EXPECT_EQ(pos, T);
    std::printf("%s: worst |cached - full| logit difference over %lld positions: %.3g\n", c.name,
                static_cast<long long>(T), worst);
  }
}

TEST(KvCache, RefusesPositionsPastItsCapacity) {
  const ModelConfig m = Parse(R"({"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 8,
                                  "num_attention_heads": 2, "intermediate_size": 8,
                                  "max_position_embeddings": 16, "vocab_size": 10})");
  GptStage stage(m, 0, LayerCount(m), 1, torch::kDouble);
  std::vector<KvCache> caches;
  torch::Tensor tokens = torch::zeros({1, 3}, torch::kLong);
  stage->ForwardCached(tokens, 0, caches, 4);
  EXPECT_THROW(stage->ForwardCached(tokens, 3, caches, 4), c10::Error);
}

}  // namespace
}  // namespace pw::models
