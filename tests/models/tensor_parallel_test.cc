// Tensor-parallel layout (models/spec/tensor_parallel.h) and its LibTorch
// slicing (models/torch/tensor_parallel.h): every parameter a stage names
// has a layout; slicing a full tensor for each of t ranks and gathering the
// shards gives the tensor back bit for bit; GPT-2's fused q;k;v puts q_r, k_r,
// v_r on rank r; vocab-parallel shards are PaddedVocab(V, t) / t rows with
// zero padding; bad names and sizes are refused naming them.
#include "models/torch/tensor_parallel.h"

#include <gtest/gtest.h>

#include "models/spec/footprint.h"
#include "models/torch/gpt.h"

namespace pw::models {
namespace {

ModelConfig TinyGpt2() {
  ModelConfig m;
  m.family = ModelFamily::kGpt2;
  m.num_layers = 2;
  m.hidden = 16;
  m.num_heads = 4;
  m.num_kv_heads = 4;
  m.head_dim = 4;
  m.ffn = 64;
  m.vocab = 200;  // padded to 256 for t = 2
  m.max_positions = 16;
  m.learned_positions = true;
  return m;
}

ModelConfig TinyLlama(ModelFamily family) {
  ModelConfig m;
  m.family = family;
  m.num_layers = 2;
  m.hidden = 16;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 4;
  m.ffn = 24;
  m.vocab = 300;
  m.max_positions = 16;
  m.gated_mlp = true;
  m.layer_norm = false;
  m.attention_bias = true;  // biases on q, k, v (column) and o (row, replicated)
  return m;
}

TEST(TensorParallelLayout, EveryStageParameterSlicesAndGathersBack) {
  for (const ModelConfig& m : {TinyGpt2(), TinyLlama(ModelFamily::kLlama), TinyLlama(ModelFamily::kQwen3)}) {
    GptStage stage(m, 0, LayerCount(m), /*seed=*/7, torch::kDouble);
    for (int t : {1, 2, 4}) {
      if (m.num_kv_heads % t != 0) continue;  // refused (RefusesUnknownNamesAndIndivisibleSizes)
      int split = 0;
      for (const auto& [name, full] : stage->NamedParameters()) {
        StatusOr<TensorParallelLayout> layout = TensorParallelLayoutOf(m, name, t);
        ASSERT_TRUE(layout.ok()) << ModelFamilyName(m.family) << " " << name << ": " << layout.status().ToString();
        split += layout->split ? 1 : 0;
        StatusOr<std::vector<int64_t>> shape = TensorParallelShardShape(full.sizes().vec(), *layout, t);
        ASSERT_TRUE(shape.ok()) << name << ": " << shape.status().ToString();
        std::vector<torch::Tensor> shards;
        for (int r = 0; r < t; ++r) {
          shards.push_back(SliceForTpRank(full, *layout, t, r));
          EXPECT_EQ(shards.back().sizes().vec(), *shape) << name << " t=" << t << " r=" << r;
        }
        torch::Tensor back = GatherTpShards(shards, *layout);
        EXPECT_TRUE(back.equal(full)) << ModelFamilyName(m.family) << " " << name << " t=" << t;
      }
      // t = 1: nothing split; t > 1: every GEMM and the two vocab tables.
      if (t == 1) {
        EXPECT_EQ(split, 0);
      } else {
        EXPECT_GT(split, 0);
      }
    }
  }
}

TEST(TensorParallelLayout, FusedQkvRankHoldsItsSliceOfEachBlock) {
  const ModelConfig m = TinyGpt2();
  StatusOr<TensorParallelLayout> l = TensorParallelLayoutOf(m, "block.1.attn_qkv.weight", 2);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->split);
  EXPECT_EQ(l->dim, 0);
  EXPECT_EQ(l->groups, 3);
  // (3C, C) with row i holding the value i: rank 1 holds q rows 8..15,
  // k rows 24..31, v rows 40..47.
  torch::Tensor full = torch::arange(48, torch::kDouble).unsqueeze(1).expand({48, 16}).contiguous();
  torch::Tensor shard = SliceForTpRank(full, *l, 2, 1);
  ASSERT_EQ(shard.size(0), 24);
  EXPECT_EQ(shard[0][0].item<double>(), 8);
  EXPECT_EQ(shard[8][0].item<double>(), 24);
  EXPECT_EQ(shard[16][0].item<double>(), 40);
  // Row-parallel: the projection's weight by columns, its bias whole.
  StatusOr<TensorParallelLayout> proj = TensorParallelLayoutOf(m, "block.0.attn_proj.weight", 2);
  StatusOr<TensorParallelLayout> bias = TensorParallelLayoutOf(m, "block.0.attn_proj.bias", 2);
  ASSERT_TRUE(proj.ok() && bias.ok());
  EXPECT_EQ(proj->dim, 1);
  EXPECT_FALSE(bias->split);
}

TEST(TensorParallelLayout, VocabShardsArePaddedWithZeroRows) {
  const ModelConfig m = TinyGpt2();  // V = 200, t = 2: V_pad = 256, 128 rows each
  for (const char* name : {"embedding.wte", "head.lm_head.weight"}) {
    StatusOr<TensorParallelLayout> l = TensorParallelLayoutOf(m, name, 2);
    ASSERT_TRUE(l.ok()) << name;
    EXPECT_EQ(l->padded_vocab, PaddedVocab(200, 2));
    EXPECT_EQ(l->padded_vocab, 256);
    torch::Tensor full = torch::randn({200, 16}, torch::kDouble) + 1.0;
    torch::Tensor s1 = SliceForTpRank(full, *l, 2, 1);
    ASSERT_EQ(s1.size(0), 128);
    EXPECT_TRUE(s1.narrow(0, 0, 72).equal(full.narrow(0, 128, 72)));
    EXPECT_EQ(s1.narrow(0, 72, 56).abs().max().item<double>(), 0.0) << name << ": padding rows";
    VocabRange r1 = VocabShardRange(200, 2, 1);
    EXPECT_EQ(r1.begin, 128);
    EXPECT_EQ(r1.end, 256);
  }
}

TEST(TensorParallelLayout, RefusesUnknownNamesAndIndivisibleSizes) {
  const ModelConfig llama = TinyLlama(ModelFamily::kLlama);
  StatusOr<TensorParallelLayout> bad = TensorParallelLayoutOf(llama, "block.0.attn_qkv.weight", 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("block.0.attn_qkv.weight"), std::string::npos) << bad.status().ToString();
  StatusOr<TensorParallelLayout> kv = TensorParallelLayoutOf(llama, "block.0.k_proj.weight", 4);  // 2 kv heads
  ASSERT_FALSE(kv.ok());
  EXPECT_NE(kv.status().message().find("kv heads"), std::string::npos) << kv.status().ToString();
  EXPECT_NE(kv.status().message().find("--tensor-model-parallel-size 4"), std::string::npos);
  TensorParallelLayout split;
  split.split = true;
  split.dim = 0;
  StatusOr<std::vector<int64_t>> shape = TensorParallelShardShape({5, 16}, split, 2);
  EXPECT_FALSE(shape.ok());
}

}  // namespace
}  // namespace pw::models
