// One reader of HF config.json: the executor's ParseGptConfig is built on the
// planner's ParseModelConfig. These tests show both read the same model from
// every shipped GPT-2-family config and from hand-written ones (generic names,
// n_ctx, n_inner null, no vocab_size), that both name the bad field, and
// where the executor deliberately differs (vocab_size default 256, epsilon,
// refusals of what it does not build).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/spec/footprint.h"
#include "models/spec/model_config.h"
#include "models/torch/gpt_config.h"

namespace pw {
namespace {

using nlohmann::json;

// Every size of `g` equals the planner's reading `m`, and the layer lists
// (the contract between planner and executor) have the same names.
void ExpectSameModel(const ModelConfig& m, const models::GptConfig& g, const std::string& what) {
  EXPECT_EQ(m.family, ModelFamily::kGpt2) << what;
  EXPECT_EQ(g.n_layer, m.num_layers) << what;
  EXPECT_EQ(g.n_embd, m.hidden) << what;
  EXPECT_EQ(g.n_head, m.num_heads) << what;
  EXPECT_EQ(m.num_kv_heads, m.num_heads) << what;
  EXPECT_EQ(g.n_embd / g.n_head, m.head_dim) << what;
  EXPECT_EQ(g.n_inner, m.ffn) << what;
  EXPECT_EQ(g.n_positions, m.max_positions) << what;
  EXPECT_EQ(g.vocab_size, m.vocab) << what;
  std::vector<std::string> planned;
  for (const LayerSpec& l : BuildLayerList(m)) planned.push_back(l.name);
  EXPECT_EQ(models::GptLayerNames(g), planned) << what;
}

// Both readers fail with InvalidArgument whose message holds `want`.
void ExpectBothRefuse(const json& c, const std::string& want, const std::string& what) {
  auto m = ParseModelConfig(c, "x.json");
  ASSERT_FALSE(m.ok()) << what << ": planner accepted " << c.dump();
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << what;
  EXPECT_NE(m.status().message().find("x.json: " + want), std::string::npos)
      << what << ": planner said " << m.status().message();
  auto g = models::ParseGptConfig(c, "x.json");
  ASSERT_FALSE(g.ok()) << what << ": executor accepted " << c.dump();
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << what;
  EXPECT_NE(g.status().message().find("x.json: " + want), std::string::npos)
      << what << ": executor said " << g.status().message();
}

TEST(OneConfigReader, ShippedGpt2FamilyConfigsReadTheSame) {
  int gpt2_family = 0;
  for (const std::string& name : ShippedNames("configs")) {
    auto path = ResolveShippedFile(name, "configs", "--model-config");
    ASSERT_TRUE(path.ok()) << name << ": " << path.status().ToString();
    auto raw = ReadJsonFile(*path);
    ASSERT_TRUE(raw.ok()) << name << ": " << raw.status().ToString();
    auto m = ParseModelConfig(*raw, *path);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().ToString();
    auto g = models::ParseGptConfig(*raw, *path);
    if (m->family != ModelFamily::kGpt2) {
      // Llama configs plan, but the executor builds GPT-2 blocks only.
      ASSERT_FALSE(g.ok()) << name << ": the executor accepted a " << ModelFamilyName(m->family) << " config";
      EXPECT_NE(g.status().message().find("model_type 'llama'"), std::string::npos) << g.status().message();
      continue;
    }
    ++gpt2_family;
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().ToString();
    ExpectSameModel(*m, *g, name);
    EXPECT_EQ(g->layer_norm_epsilon, (*raw)["layer_norm_epsilon"].get<double>()) << name;
  }
  EXPECT_EQ(gpt2_family, 4) << "gpt2, gpt2-medium, gpt2-xl, gpt3-175b";
}

TEST(OneConfigReader, HandWrittenConfigsReadTheSame) {
  static const struct {
    const char* what;
    const char* config;
    int64_t n_layer, n_embd, n_head, n_inner, n_positions, vocab;
    double epsilon;
  } cases[] = {
      {"GPT-2 names, no model_type", R"({"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16,
          "vocab_size": 300})", 2, 16, 2, 64, 16, 300, 1e-5},
      {"generic names with model_type gpt2", R"({"model_type": "gpt2", "num_hidden_layers": 3, "hidden_size": 32,
          "num_attention_heads": 4, "intermediate_size": 48, "max_position_embeddings": 24, "vocab_size": 100})",
       3, 32, 4, 48, 24, 100, 1e-5},
      {"n_ctx for the positions", R"({"n_layer": 2, "n_embd": 16, "n_head": 4, "n_ctx": 32, "vocab_size": 256})",
       2, 16, 4, 64, 32, 256, 1e-5},
      {"n_positions wins over n_ctx", R"({"n_layer": 2, "n_embd": 16, "n_head": 4, "n_ctx": 32, "n_positions": 8,
          "vocab_size": 256})", 2, 16, 4, 64, 8, 256, 1e-5},
      {"n_inner null and epsilon", R"({"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2, "n_inner": null,
          "n_positions": 4, "vocab_size": 50, "layer_norm_epsilon": 1e-6})", 1, 8, 2, 32, 4, 50, 1e-6},
      {"head_dim is not a GPT-2 field", R"({"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2,
          "head_dim": 3, "n_positions": 4, "vocab_size": 50})", 1, 8, 2, 32, 4, 50, 1e-5},
      {"num_key_value_heads equal to the heads", R"({"n_layer": 1, "n_embd": 8, "n_head": 2,
          "num_key_value_heads": 2, "n_positions": 4, "vocab_size": 50})", 1, 8, 2, 32, 4, 50, 1e-5},
  };
  for (const auto& c : cases) {
    const json j = json::parse(c.config);
    auto m = ParseModelConfig(j, "x.json");
    ASSERT_TRUE(m.ok()) << c.what << ": " << m.status().ToString();
    auto g = models::ParseGptConfig(j, "x.json");
    ASSERT_TRUE(g.ok()) << c.what << ": " << g.status().ToString();
    ExpectSameModel(*m, *g, c.what);
    EXPECT_EQ(g->n_layer, c.n_layer) << c.what;
    EXPECT_EQ(g->n_embd, c.n_embd) << c.what;
    EXPECT_EQ(g->n_head, c.n_head) << c.what;
    EXPECT_EQ(g->n_inner, c.n_inner) << c.what;
    EXPECT_EQ(g->n_positions, c.n_positions) << c.what;
    EXPECT_EQ(g->vocab_size, c.vocab) << c.what;
    EXPECT_EQ(g->layer_norm_epsilon, c.epsilon) << c.what;
  }
}

// The executor trains on bytes: without vocab_size it builds V = 256 (the
// configs its tests and pw_make_plan use). The planner has no default (HF's
// differ by family), so it names the field; given 256 it reads the same model.
TEST(OneConfigReader, MissingVocabSizeIsTheExecutorsByteVocabulary) {
  for (const char* text : {R"({"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16})",
                           R"({"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": null})",
                           R"({"model_type": "gpt2", "num_hidden_layers": 2, "hidden_size": 16,
                               "num_attention_heads": 2, "n_ctx": 16})"}) {
    json j = json::parse(text);
    auto g = models::ParseGptConfig(j, "x.json");
    ASSERT_TRUE(g.ok()) << text << ": " << g.status().ToString();
    EXPECT_EQ(g->vocab_size, 256) << text;
    auto m = ParseModelConfig(j, "x.json");
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_NE(m.status().message().find("x.json: field 'vocab_size' is missing"), std::string::npos)
        << m.status().message();
    j["vocab_size"] = 256;
    m = ParseModelConfig(j, "x.json");
    ASSERT_TRUE(m.ok()) << text << ": " << m.status().ToString();
    ExpectSameModel(*m, *g, text);
  }
}

TEST(OneConfigReader, BothNameTheBadField) {
  const json base = {{"model_type", "gpt2"}, {"n_layer", 2},       {"n_embd", 16},
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
      {"num_key_value_heads", 3, "field 'num_key_value_heads' (3) differs from the attention heads (4): GPT-2 has no "
                                 "grouped-query attention"},
      {"num_key_value_heads", 0, "field 'num_key_value_heads' must be a positive integer, got 0"},
  };
  for (const auto& c : cases) {
    json j = base;
    if (c.value.is_null())
      j.erase(c.key);
    else
      j[c.key] = c.value;
    ExpectBothRefuse(j, c.want, std::string(c.key) + "=" + c.value.dump());
  }
  // Generic names are named as written.
  json generic = {{"model_type", "gpt2"}, {"num_hidden_layers", 2}, {"hidden_size", 16}, {"num_attention_heads", 4},
                  {"max_position_embeddings", 16}, {"vocab_size", 256}, {"intermediate_size", -1}};
  ExpectBothRefuse(generic, "field 'intermediate_size' must be a positive integer, got -1", "intermediate_size");
  generic["intermediate_size"] = 64;
  generic["hidden_size"] = 18;
  ExpectBothRefuse(generic, "field 'hidden_size' (18) is not divisible by field 'num_attention_heads' (4)",
                   "hidden_size");
}

// What only the executor refuses, each naming the field.
TEST(OneConfigReader, ExecutorRefusalsNameTheField) {
  const json base = {{"model_type", "gpt2"}, {"n_layer", 2}, {"n_embd", 16}, {"n_head", 4}, {"n_positions", 16}};
  auto refused = [](const json& j, const std::string& want) {
    auto g = models::ParseGptConfig(j, "x.json");
    ASSERT_FALSE(g.ok()) << j.dump();
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(want), std::string::npos) << g.status().message();
  };
  for (json eps : {json(0), json(-1e-5), json("1e-5"), json(true)}) {
    json j = base;
    j["layer_norm_epsilon"] = eps;
    refused(j, "x.json: field 'layer_norm_epsilon' must be a positive number, got " + eps.dump());
  }
  json rms = base;
  rms["rms_norm_eps"] = 1e-6;  // the Llama-style name is read too
  auto g = models::ParseGptConfig(rms, "x.json");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->layer_norm_epsilon, 1e-6);

  // Grouped-query attention in a GPT-2 config: GPT-2 has none, so both
  // readers refuse it (the planner used to read it and write a config.json
  // without it).
  json gqa = base;
  gqa["num_key_value_heads"] = 2;
  json planned_gqa = gqa;
  planned_gqa["vocab_size"] = 256;
  EXPECT_FALSE(ParseModelConfig(planned_gqa, "x.json").ok());
  refused(gqa, "x.json: field 'num_key_value_heads' (2) differs from the attention heads (4)");

  // Another model_type, given: the planner knows llama, not bert; the executor neither.
  json bert = base;
  bert["model_type"] = "bert";
  refused(bert, "x.json: model_type 'bert' is not supported by the executor");
  // Found by tests/fuzz/model_config_fuzz: a DEL byte (legal unescaped in a
  // JSON string) was quoted raw.
  json del = base;
  del["model_type"] = "b\x7Fos";
  refused(del, "x.json: model_type 'b\\x7Fos' is not supported by the executor");
  auto m = ParseModelConfig(bert, "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("field 'model_type' is 'bert'"), std::string::npos) << m.status().message();

  // No model_type and no GPT-2 field name: the planner infers Llama (SwiGLU,
  // RMSNorm, no position table), so the executor refuses rather than train a
  // different model than the one planned; with model_type gpt2 both agree.
  json untyped = {{"num_hidden_layers", 2}, {"hidden_size", 16}, {"num_attention_heads", 4},
                  {"intermediate_size", 64}, {"max_position_embeddings", 16}, {"vocab_size", 256}};
  auto family = ConfigModelFamily(untyped, "x.json");
  ASSERT_TRUE(family.ok());
  EXPECT_EQ(*family, ModelFamily::kLlama);
  ASSERT_TRUE(ParseModelConfig(untyped, "x.json").ok());
  refused(untyped, "x.json: no 'model_type' and no GPT-2 field name");
  refused(untyped, "add \"model_type\": \"gpt2\"");
  untyped["model_type"] = "gpt2";
  m = ParseModelConfig(untyped, "x.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  g = models::ParseGptConfig(untyped, "x.json");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ExpectSameModel(*m, *g, "generic names, model_type gpt2");

  refused(json::array({1, 2}), "x.json: model config is not a JSON object");
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
    json gqa = {{"model_type", "gpt2"}, {"n_layer", 2},      {"n_embd", 16},        {"n_head", 4},
                {"n_positions", 16},   {"vocab_size", 256}, {"num_key_value_heads", 2}};
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
  EXPECT_NE(bad.status().message().find("x.json: field 'model_type' is 't5'; known: gpt2, llama"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace pw
