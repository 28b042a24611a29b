// The model family registry (models/spec/model_family.h) and the one HF
// config reader built on it: every family has one row and a LibTorch-side
// builder row in the same order (checked in llama_test.cc); model types
// resolve to their family; bad input names the field; what the executor
// builds (models/torch/executor_model.h) is refused naming the field; Qwen3
// reads as transformers' Qwen3Config does, and its footprint adds exactly
// its q/k norms (closed forms against the Llama of the same sizes).
#include "models/spec/model_family.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "models/spec/footprint.h"
#include "models/spec/hf_weights.h"
#include "models/spec/model_config.h"
#include "models/torch/executor_model.h"

namespace pw {
namespace {

using nlohmann::json;

// ParseModelConfig fails with InvalidArgument whose message holds `want`.
void ExpectRefused(const json& c, const std::string& want, const std::string& what) {
  auto m = ParseModelConfig(c, "x.json");
  ASSERT_FALSE(m.ok()) << what << ": accepted " << c.dump();
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << what;
  EXPECT_NE(m.status().message().find("x.json: " + want), std::string::npos)
      << what << ": said " << m.status().message();
}

TEST(FamilyRegistry, OneRowPerFamilyInEnumOrder) {
  const std::vector<ModelFamily> all = {ModelFamily::kGpt2, ModelFamily::kLlama, ModelFamily::kQwen3};
  ASSERT_EQ(ModelFamilies().size(), all.size());
  std::set<std::string> names, types;
  for (size_t i = 0; i < all.size(); ++i) {
    const ModelFamilyInfo& f = ModelFamilies()[i];
    EXPECT_EQ(f.family, all[i]) << f.name;
    EXPECT_EQ(&FamilyInfo(all[i]), &f) << f.name;
    EXPECT_EQ(ModelFamilyName(all[i]), f.name);
    EXPECT_TRUE(names.insert(f.name).second) << "two families named " << f.name;
    ASSERT_FALSE(f.model_types.empty()) << f.name;
    for (const HfModelType& t : f.model_types) {
      EXPECT_TRUE(types.insert(t.model_type).second) << "model_type " << t.model_type << " in two rows";
      auto found = FindHfModelType(t.model_type, "x");
      ASSERT_TRUE(found.ok()) << t.model_type;
      EXPECT_EQ(found->family, &f) << t.model_type;
    }
    auto by_name = FindModelFamily(f.name);
    ASSERT_TRUE(by_name.ok()) << f.name;
    EXPECT_EQ(*by_name, all[i]);
    // The token table is one of the family's parameters with an HF name.
    EXPECT_TRUE(HfNameOf(f.family, f.token_table).ok()) << f.name << ": " << f.token_table;
  }
  EXPECT_EQ(KnownModelTypes(), "gpt2, llama, mistral, qwen2, qwen3");
  auto unknown = FindModelFamily("bert");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("model family 'bert' is unknown; known: gpt2, llama, qwen3"),
            std::string::npos)
      << unknown.status().message();
}

TEST(OneConfigReader, ErrorsNameTheBadField) {
  const json base = {{"model_type", "gpt2"}, {"n_layer", 2},      {"n_embd", 16},
                     {"n_head", 4},          {"n_positions", 16}, {"vocab_size", 256}};
  static const struct {
    const char* key;
    json value;  // null: the key is erased
    const char* want;
  } cases[] = {
      {"n_layer", nullptr, "field 'n_layer' or 'num_hidden_layers' is missing"},
      {"n_embd", nullptr, "field 'n_embd' or 'hidden_size' is missing"},
      {"n_head", nullptr, "field 'n_head' or 'num_attention_heads' is missing"},
      {"n_positions", nullptr, "field 'n_positions' or 'max_position_embeddings' or 'n_ctx' is missing"},
      {"n_layer", 0, "field 'n_layer' must be a positive integer, got 0"},
      {"n_layer", 2.5, "field 'n_layer' must be a positive integer, got 2.5"},
      {"n_embd", "16", "field 'n_embd' must be a positive integer, got \"16\""},
      {"n_head", -4, "field 'n_head' must be a positive integer, got -4"},
      {"n_inner", 0, "field 'n_inner' must be a positive integer, got 0"},
      {"n_positions", false, "field 'n_positions' must be a positive integer, got false"},
      {"vocab_size", 0, "field 'vocab_size' must be a positive integer, got 0"},
      {"n_head", 3, "field 'n_embd' (16) is not divisible by field 'n_head' (3)"},
      {"num_key_value_heads", 3,
       "field 'num_key_value_heads' (3) differs from the attention heads (4): GPT-2 has no "
       "grouped-query attention"},
      {"num_key_value_heads", 0, "field 'num_key_value_heads' must be a positive integer, got 0"},
  };
  for (const auto& c : cases) {
    json j = base;
    if (c.value.is_null())
      j.erase(c.key);
    else
      j[c.key] = c.value;
    ExpectRefused(j, c.want, std::string(c.key) + "=" + c.value.dump());
  }
  // Generic names are named as written.
  json generic = {{"model_type", "gpt2"},     {"num_hidden_layers", 2},        {"hidden_size", 16},
                  {"num_attention_heads", 4}, {"max_position_embeddings", 16}, {"vocab_size", 256},
                  {"intermediate_size", -1}};
  ExpectRefused(generic, "field 'intermediate_size' must be a positive integer, got -1", "intermediate_size");
  generic["intermediate_size"] = 64;
  generic["hidden_size"] = 18;
  ExpectRefused(generic, "field 'hidden_size' (18) is not divisible by field 'num_attention_heads' (4)", "hidden_size");
}

TEST(OneConfigReader, FamilyRule) {
  static const struct {
    const char* config;
    ModelFamily want;
  } cases[] = {
      {R"({"model_type": "gpt2"})", ModelFamily::kGpt2},
      {R"({"model_type": "llama", "n_layer": 2})", ModelFamily::kLlama},
      {R"({"n_layer": 2})", ModelFamily::kGpt2},
      {R"({"model_type": null, "n_embd": 2})", ModelFamily::kGpt2},
      {R"({"hidden_size": 2})", ModelFamily::kLlama},
  };
  for (const auto& c : cases) {
    auto f = ConfigModelFamily(json::parse(c.config), "x.json");
    ASSERT_TRUE(f.ok()) << c.config << ": " << f.status().ToString();
    EXPECT_EQ(*f, c.want) << c.config;
  }
  // Without model_type, field names of both families are ambiguous (fuzzing
  // found a Mistral config with GPT-2 names whose written config.json read
  // back with other kv heads); with model_type the type decides.
  for (const char* mixed : {R"({"n_embd": 2, "hidden_size": 2})", R"({"n_layer": 12, "num_hidden_layers": 32})"}) {
    auto f = ConfigModelFamily(json::parse(mixed), "x.json");
    ASSERT_FALSE(f.ok()) << mixed;
    EXPECT_NE(f.status().message().find("x.json: no 'model_type', and both a GPT-2 field"), std::string::npos)
        << f.status().message();
  }
  {
    auto f = ConfigModelFamily(json::parse(R"({"model_type": "gpt2", "n_embd": 2, "hidden_size": 2})"), "x.json");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(*f, ModelFamily::kGpt2);
  }
  // GPT-2 has no grouped-query attention: a kv head count other than the
  // head count is refused, not dropped by the writer.
  {
    json gqa = {{"model_type", "gpt2"},
                {"n_layer", 2},
                {"n_embd", 16},
                {"n_head", 4},
                {"n_positions", 16},
                {"vocab_size", 256},
                {"num_key_value_heads", 2}};
    auto m = ParseModelConfig(gqa, "g.json");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("g.json: field 'num_key_value_heads' (2) differs from the attention heads (4)"),
              std::string::npos)
        << m.status().message();
    gqa["num_key_value_heads"] = 4;
    EXPECT_TRUE(ParseModelConfig(gqa, "g.json").ok());
  }
  auto bad = ConfigModelFamily(json::parse(R"({"model_type": "t5"})"), "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("x.json: field 'model_type' is 't5'; known: gpt2, llama, mistral, qwen2, qwen3"),
      std::string::npos)
      << bad.status().message();
  // Found by tests/fuzz/model_config_fuzz: a DEL byte (legal unescaped in a
  // JSON string) was quoted raw.
  bad = ConfigModelFamily(json::parse("{\"model_type\": \"b\\u007fos\"}"), "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 'model_type' is 'b\\x7Fos'"), std::string::npos)
      << bad.status().message();
}

// What the executor builds: the family's shape and no dropout, each refusal
// naming the field (a plan's model section can say anything).
TEST(ExecutorModel, RefusalsNameTheField) {
  const json llama = {{"model_type", "llama"},         {"num_hidden_layers", 2},   {"hidden_size", 16},
                      {"num_attention_heads", 4},      {"num_key_value_heads", 2}, {"intermediate_size", 32},
                      {"max_position_embeddings", 16}, {"vocab_size", 256}};
  auto base = ParseModelConfig(llama, "x.json");
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  EXPECT_TRUE(models::CheckExecutorModel(*base, "m").ok());
  auto refused = [](const ModelConfig& m, const std::string& want) {
    Status st = models::CheckExecutorModel(m, "m");
    ASSERT_FALSE(st.ok()) << want;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("m: field '" + want), std::string::npos) << st.message();
  };
  ModelConfig m = *base;
  m.layer_norm = true;
  refused(m, "norm' is 'layernorm': the family's blocks use RMSNorm (architecture 'llama')");
  m = *base;
  m.gated_mlp = false;
  refused(m, "mlp' is 'gelu'");
  m = *base;
  m.learned_positions = true;
  refused(m, "positions' is 'learned'");
  m = *base;
  m.head_dim = 5;
  refused(m, "head_dim' is 5: RoPE turns channel pairs");
  m = *base;
  m.num_kv_heads = 3;
  refused(m, "num_key_value_heads' (3) must divide num_attention_heads (4)");
  m = *base;
  m.dropout = true;
  refused(m, "dropout' is true (attention_dropout > 0)");
  m = *base;
  m.family = ModelFamily::kQwen3;
  EXPECT_TRUE(models::CheckExecutorModel(m, "m").ok());
  m.qkv_bias = true;  // only qwen2 (family llama) has Q, K, V-only biases
  refused(m, "qkv_bias' is true");
  const json gpt2 = {{"model_type", "gpt2"}, {"n_layer", 2},      {"n_embd", 16},
                     {"n_head", 4},          {"n_positions", 16}, {"vocab_size", 256}};
  auto g = ParseModelConfig(gpt2, "x.json");
  ASSERT_TRUE(g.ok());
  refused(*g, "dropout' is true (attn_pdrop, resid_pdrop or embd_pdrop > 0; HF's default is 0.1)");
  m = *g;
  m.dropout = false;
  EXPECT_TRUE(models::CheckExecutorModel(m, "m").ok());
  m.num_kv_heads = 2;
  refused(m, "num_key_value_heads' (2) differs from the attention heads (4)");
  m = *g;
  m.dropout = false;
  m.layer_norm = false;
  refused(m, "norm' is 'rmsnorm': the family's blocks use LayerNorm (architecture 'gpt2')");
}

// A Qwen3 config as transformers 5.x writes it (save_pretrained of
// Qwen3Config: head_dim 32 against hidden 64 / 4 heads, no window used).
json TinyQwen3() {
  return json::parse(R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "dtype": "float32", "head_dim": 32, "hidden_act": "silu", "hidden_size": 64,
      "initializer_range": 0.02, "intermediate_size": 96, "layer_types": ["full_attention", "full_attention"],
      "max_position_embeddings": 64, "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 4,
      "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
      "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "sliding_window": null,
      "tie_word_embeddings": true, "transformers_version": "5.24.0", "use_cache": true,
      "use_sliding_window": false, "vocab_size": 300})");
}

TEST(Qwen3, ReadsAsTransformersQwen3Config) {
  auto q = ParseModelConfig(TinyQwen3(), "qwen3.json");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->family, ModelFamily::kQwen3);
  EXPECT_EQ(q->head_dim, 32);
  EXPECT_EQ(q->num_kv_heads, 2);
  EXPECT_TRUE(q->tied);
  EXPECT_FALSE(q->attention_bias || q->qkv_bias || q->mlp_bias);
  EXPECT_EQ(q->rope_theta, 1000000.0);
  EXPECT_EQ(q->norm_eps, 1e-6);
  EXPECT_TRUE(models::CheckExecutorModel(*q, "qwen3.json").ok());
  // Qwen3Config's head_dim defaults to 128 whatever the hidden size.
  json c = TinyQwen3();
  c.erase("head_dim");
  auto d = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->head_dim, 128);
  // attention_bias biases all four projections (Qwen3Attention).
  c = TinyQwen3();
  c["attention_bias"] = true;
  auto b = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->attention_bias);
  EXPECT_FALSE(b->qkv_bias);
}

// Qwen3 = the Llama of the same sizes + per block 2 d norm weights and the
// norms' kept inputs s b (a + k) d e; the same FLOPs (norms are elementwise)
// and wstash (their weight gradients are taken in I).
TEST(Qwen3, FootprintAddsExactlyTheQkNorms) {
  auto q = ParseModelConfig(TinyQwen3(), "q");
  json as_llama = TinyQwen3();
  as_llama["model_type"] = "llama";
  auto l = ParseModelConfig(as_llama, "l");
  ASSERT_TRUE(q.ok() && l.ok());
  const int64_t L = 2, a = 4, k = 2, d = 32;
  EXPECT_EQ(TotalParameters(*q) - TotalParameters(*l), L * 2 * d);
  const std::vector<LayerSpec> ql = BuildLayerList(*q), ll = BuildLayerList(*l);
  ASSERT_EQ(ql.size(), ll.size());
  for (const Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
    for (const Precision p : {Precision::kFp32, Precision::kMixedBf16}) {
      TrainingShape shape;
      shape.micro_batch_size = 3;
      shape.seq_length = 16;
      shape.recompute = r;
      shape.precision = p;
      const int64_t e = ActivationElementBytes(p), sb = 3 * 16;
      for (size_t i = 0; i < ql.size(); ++i) {
        const LayerFootprint fq = ComputeFootprint(*q, ql[i], shape), fl = ComputeFootprint(*l, ll[i], shape);
        const bool block = ql[i].kind == LayerKind::kBlock;
        const std::string what = ql[i].name + " " + RecomputeName(r) + " " + PrecisionName(p);
        EXPECT_EQ(ql[i].params - ll[i].params, block ? 2 * d : 0) << what;
        EXPECT_EQ(fq.flops_f, fl.flops_f) << what;
        EXPECT_EQ(fq.flops_i, fl.flops_i) << what;
        EXPECT_EQ(fq.flops_w, fl.flops_w) << what;
        EXPECT_EQ(fq.wstash_bytes, fl.wstash_bytes) << what;
        const int64_t kept = block ? sb * (a + k) * d * e : 0;
        // Full recompute keeps the block input only: the norms' inputs move to
        // the transient bytes of the recomputation.
        EXPECT_EQ(fq.activation_bytes - fl.activation_bytes, r == Recompute::kFull ? 0 : kept) << what;
        EXPECT_EQ(fq.transient_bytes - fl.transient_bytes, r == Recompute::kFull ? kept : 0) << what;
        EXPECT_EQ(fq.static_bytes - fl.static_bytes, (block ? 2 * d : 0) * StaticBytesPerParam(p)) << what;
      }
    }
  // Qwen3-0.6B (28 layers, hidden 1024, 16 heads, 8 kv heads, head_dim 128,
  // ffn 3072, vocab 151936, tied): its model card states 0.6B parameters,
  // 0.44B of them non-embedding; by hand, 28 x (6291456 attention + 9437184
  // MLP + 2048 norms + 256 q/k norms) + 155582464 table + 1024 final norm.
  json q06 = {{"model_type", "qwen3"},       {"num_hidden_layers", 28},   {"hidden_size", 1024},
              {"num_attention_heads", 16},   {"num_key_value_heads", 8},  {"head_dim", 128},
              {"intermediate_size", 3072},   {"vocab_size", 151936},      {"max_position_embeddings", 40960},
              {"tie_word_embeddings", true}, {"sliding_window", nullptr}, {"use_sliding_window", false}};
  auto q06m = ParseModelConfig(q06, "qwen3-0.6b.json");
  ASSERT_TRUE(q06m.ok()) << q06m.status().ToString();
  EXPECT_EQ(TotalParameters(*q06m), 596049920);
  EXPECT_NEAR(static_cast<double>(TotalParameters(*q06m) - 151936 * 1024), 0.44e9, 0.005e9);
}

}  // namespace
}  // namespace pw
