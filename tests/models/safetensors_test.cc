// Safetensors reader/writer (models/spec/safetensors.h) on hand-made files:
// every malformed case names the file and the tensor/field; F16 and BF16
// convert exactly to hand-computed values; the writer round-trips, shards,
// and refuses bad input. Also the HF name table and config (hf_weights.h).
#include "models/spec/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "models/spec/hf_weights.h"

namespace pw::safetensors {
namespace {

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pw_st_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes <len><header><data> to `name`; `len` overrides the header length.
  std::string Make(const std::string& name, const std::string& header, const std::string& data, int64_t len = -1) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = len < 0 ? header.size() : static_cast<uint64_t>(len);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header << data;
    return path;
  }
  // Expects Open(path) to fail with a message containing the path and every piece.
  void ExpectError(const std::string& path, std::initializer_list<std::string> pieces) {
    auto f = File::Open(path);
    ASSERT_FALSE(f.ok()) << path << " opened";
    const std::string m = f.status().message();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    for (const std::string& p : pieces) EXPECT_NE(m.find(p), std::string::npos) << "want '" << p << "' in: " << m;
  }
  std::filesystem::path dir_;
};

std::string Bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

TEST_F(SafetensorsTest, ReadsF32AndMetadata) {
  const std::string path =
      Make("a.safetensors",
           R"({"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},)"
           R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [16, 20]}})",
           Bytes({1.5f, -2.0f, 3.25f, 1e-30f, 7.0f}));
  auto f = File::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->metadata()["format"], "pt");
  ASSERT_NE((*f)->Find("w"), nullptr);
  EXPECT_EQ((*f)->Find("w")->shape, (std::vector<int64_t>{2, 2}));
  std::vector<double> w(4);
  ASSERT_TRUE((*f)->Read("w", w.data(), 4).ok());
  EXPECT_EQ(w, (std::vector<double>{1.5, -2.0, 3.25, static_cast<double>(1e-30f)}));
  float b = 0;
  ASSERT_TRUE((*f)->Read("b", &b, 1).ok());
  EXPECT_EQ(b, 7.0f);
  Status wrong = (*f)->Read("w", w.data(), 3);
  EXPECT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("'w'"), std::string::npos);
  Status missing = (*f)->Read("nope", w.data(), 1);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("'nope'"), std::string::npos);
}

TEST_F(SafetensorsTest, HalfAndBFloat16ConvertExactly) {
  // F16: 0x3C00 = 1, 0xC000 = -2, 0x3555 = 1 + 341/1024 (x 2^-2), 0x0001 = 2^-24
  // (smallest subnormal), 0x7BFF = 65504 (largest), 0x7C00 = +inf, 0x8000 = -0.
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x3555), (1.0f + 341.0f / 1024.0f) / 4.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x03FF), 1023.0f * std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
  // BF16: 0x3F80 = 1, 0xC0A0 = -5, 0x3FC0 = 1.5, 0x0001 = 2^-133 (subnormal).
  EXPECT_EQ(BFloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0xC0A0), -5.0f);
  EXPECT_EQ(BFloat16ToFloat(0x3FC0), 1.5f);
  EXPECT_EQ(BFloat16ToFloat(0x0001), std::ldexp(1.0f, -133));
  // Through a file, into float and double.
  const unsigned char data[] = {0x00, 0x3C, 0x55, 0x35, 0x01, 0x00,   // F16: 1, 0x3555, 2^-24
                                0x80, 0x3F, 0xA0, 0xC0, 0x01, 0x00};  // BF16: 1, -5, 2^-133
  const std::string path = Make("h.safetensors",
                                R"({"h": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]},)"
                                R"( "b": {"dtype": "BF16", "shape": [3], "data_offsets": [6, 12]}})",
                                std::string(reinterpret_cast<const char*>(data), sizeof(data)));
  auto f = File::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  float h[3];
  double b[3];
  ASSERT_TRUE((*f)->Read("h", h, 3).ok());
  ASSERT_TRUE((*f)->Read("b", b, 3).ok());
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], 0.333251953125f);  // (1 + 341/1024) / 4
  EXPECT_EQ(h[2], 5.9604644775390625e-08f);
  EXPECT_EQ(b[0], 1.0);
  EXPECT_EQ(b[1], -5.0);
  EXPECT_EQ(b[2], std::ldexp(1.0, -133));
}

TEST_F(SafetensorsTest, MalformedFilesNameTheFileAndField) {
  const std::string ok = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  ExpectError(Make("empty.safetensors", "", ""), {"header is not JSON"});
  {
    // Shorter than 8 bytes.
    const std::string p = (dir_ / "tiny.safetensors").string();
    std::ofstream(p) << "abc";
    ExpectError(p, {"shorter than the 8-byte header length"});
  }
  ExpectError(Make("len.safetensors", ok, Bytes({1, 2}), 1000), {"header length 1000 is beyond the file"});
  ExpectError(Make("json.safetensors", "{not json}", ""), {"header is not JSON"});
  ExpectError(Make("arr.safetensors", "[1, 2]", ""), {"not a JSON object"});
  ExpectError(Make("nodtype.safetensors", R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", Bytes({1, 2})),
              {"tensor 'w'", "missing field 'dtype'"});
  ExpectError(Make("noshape.safetensors", R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})", Bytes({1, 2})),
              {"tensor 'w'", "missing field 'shape'"});
  ExpectError(Make("nooff.safetensors", R"({"w": {"dtype": "F32", "shape": [2]}})", Bytes({1, 2})),
              {"tensor 'w'", "missing field 'data_offsets'"});
  ExpectError(
      Make("dtype.safetensors", R"({"w": {"dtype": "I8", "shape": [8], "data_offsets": [0, 8]}})", Bytes({1, 2})),
      {"tensor 'w'", "field 'dtype'", "unknown dtype 'I8'"});
  ExpectError(
      Make("neg.safetensors", R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", Bytes({1, 2})),
      {"tensor 'w'", "field 'shape'"});
  ExpectError(
      Make("beyond.safetensors", R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", Bytes({1, 2})),
      {"tensor 'w'", "'data_offsets' [0, 16] is beyond the data section (8 bytes"});
  ExpectError(
      Make("order.safetensors", R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})", Bytes({1, 2})),
      {"tensor 'w'", "begin > end"});
  ExpectError(Make("overlap.safetensors",
                   R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                   R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                   Bytes({1, 2, 3})),
              {"tensors 'a' and 'b' overlap"});
  ExpectError(
      Make("size.safetensors", R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", Bytes({1, 2})),
      {"tensor 'w'", "shape [3] x F32 is 12 bytes but 'data_offsets' [0, 8] span 8"});
  ExpectError(
      Make("bf16size.safetensors", R"({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 8]}})", Bytes({1, 2})),
      {"tensor 'w'", "x BF16 is 4 bytes"});
  // A valid file cut short: the last tensor runs past the end.
  {
    const std::string full = Make("full.safetensors",
                                  R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                                  R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
                                  Bytes({1, 2, 3, 4}));
    ASSERT_TRUE(File::Open(full).ok());
    std::filesystem::resize_file(full, std::filesystem::file_size(full) - 3);
    ExpectError(full, {"tensor 'b'", "beyond the data section (13 bytes: truncated file?)"});
  }
  // Bytes no tensor covers.
  ExpectError(Make("extra.safetensors", ok, Bytes({1, 2, 3})),
              {"the data section is 12 bytes but the tensors cover 8"});
  ExpectError(Make("meta.safetensors", R"({"__metadata__": {"n": 1}})", ""), {"'__metadata__.n' is not a string"});
  auto missing = File::Open((dir_ / "absent.safetensors").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Found while writing tests/fuzz/safetensors_fuzz (its check of numel()
// aborts under UBSan on this file): an empty tensor whose other
// dimensions multiply past int64 (signed overflow in numel(), undefined
// behaviour). It is a valid empty tensor: 0 elements, 0 bytes.
TEST_F(SafetensorsTest, EmptyTensorWithHugeDimensionsHasZeroElements) {
  const std::string p = Make("huge_empty.safetensors",
                             R"({"e": {"dtype": "F32", "shape": [4611686018427387904, 4611686018427387904, 0],)"
                             R"( "data_offsets": [0, 0]}})",
                             "");
  auto f = File::Open(p);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const TensorInfo* e = (*f)->Find("e");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->numel(), 0);
  float none = 0;
  EXPECT_TRUE((*f)->Read("e", &none, 0).ok());
  // Deep nesting in the header is refused (ParseJsonText), not recursed into.
  ExpectError(Make("deep.safetensors", std::string(10000, '[') + std::string(10000, ']'), ""),
              {"header is not JSON", "nested deeper than the limit of 64 levels"});
}

std::vector<TensorData> SomeTensors() {
  std::vector<TensorData> v;
  for (int i = 0; i < 5; ++i) {
    TensorData t;
    t.name = "t" + std::to_string(i);
    t.shape = {2, i + 1};
    std::vector<float> vals;
    for (int k = 0; k < 2 * (i + 1); ++k) vals.push_back(0.1f * static_cast<float>(k) - static_cast<float>(i));
    const std::string b = Bytes(vals);
    t.bytes.assign(b.begin(), b.end());
    v.push_back(std::move(t));
  }
  return v;
}

void ExpectSame(const Checkpoint& c, const std::vector<TensorData>& tensors) {
  EXPECT_EQ(c.Names().size(), tensors.size());
  for (const TensorData& t : tensors) {
    const File* f = c.FileOf(t.name);
    ASSERT_NE(f, nullptr) << t.name;
    const TensorInfo* info = f->Find(t.name);
    EXPECT_EQ(info->shape, t.shape);
    EXPECT_EQ(std::memcmp(f->Data(*info), t.bytes.data(), t.bytes.size()), 0) << t.name;
  }
}

TEST_F(SafetensorsTest, WriterRoundTripsSingleAndSharded) {
  const std::vector<TensorData> tensors = SomeTensors();  // 8, 16, 24, 32, 40 bytes
  auto n = WriteCheckpoint(dir_.string(), tensors, kDefaultMaxShardBytes, {{"format", "pt"}});
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "model.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "model.safetensors.tmp"));
  auto single = Checkpoint::Open(dir_.string());
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_EQ(single->NumFiles(), 1);
  ExpectSame(*single, tensors);
  // Header length is a multiple of 8.
  EXPECT_EQ((std::filesystem::file_size(dir_ / "model.safetensors") - 120) % 8, 0u);

  const std::filesystem::path sharded = dir_ / "sharded";
  std::filesystem::create_directory(sharded);
  n = WriteCheckpoint(sharded.string(), tensors, 40, {});  // [8 16] [24] [32] [40]
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 4);
  EXPECT_TRUE(std::filesystem::exists(sharded / "model-00001-of-00004.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(sharded / "model-00004-of-00004.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(sharded / "model.safetensors"));
  auto c = Checkpoint::Open(sharded.string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->NumFiles(), 4);
  ExpectSame(*c, tensors);
  EXPECT_EQ(c->FileOf("t1")->path(), (sharded / "model-00001-of-00004.safetensors").string());

  // An index naming a shard that does not hold the tensor.
  {
    std::ofstream(sharded / "model.safetensors.index.json")
        << R"({"weight_map": {"t0": "model-00002-of-00004.safetensors"}})";
    auto bad = Checkpoint::Open(sharded.string());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("tensor 't0' in model-00002-of-00004.safetensors"), std::string::npos)
        << bad.status().message();
    std::ofstream(sharded / "model.safetensors.index.json") << R"({"metadata": {}})";
    bad = Checkpoint::Open(sharded.string());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("'weight_map'"), std::string::npos) << bad.status().message();
    std::ofstream(sharded / "model.safetensors.index.json") << R"({"weight_map": {"t0": "../x.safetensors"}})";
    bad = Checkpoint::Open(sharded.string());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("not a file name"), std::string::npos) << bad.status().message();
  }
  auto none = Checkpoint::Open((dir_ / "nothing").string());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);

  // Writer refusals name the tensor.
  std::vector<TensorData> dup = {tensors[0], tensors[0]};
  Status st = WriteFile((dir_ / "dup.safetensors").string(), {&dup[0], &dup[1]}, {});
  EXPECT_NE(st.message().find("tensor 't0' given twice"), std::string::npos) << st.message();
  TensorData wrong = tensors[1];
  wrong.shape = {3, 3};
  st = WriteFile((dir_ / "wrong.safetensors").string(), {&wrong}, {});
  EXPECT_NE(st.message().find("tensor 't1'"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir_ / "wrong.safetensors"));
  EXPECT_FALSE(WriteCheckpoint(dir_.string(), tensors, 0, {}).ok());
}

}  // namespace
}  // namespace pw::safetensors

namespace pw {
namespace {

TEST(HfWeights, NameTable) {
  auto n = HfNameOf(ModelFamily::kLlama, "block.3.q_proj.weight");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->name, "model.layers.3.self_attn.q_proj.weight");
  EXPECT_FALSE(n->transpose);
  EXPECT_EQ(HfNameOf(ModelFamily::kLlama, "block.0.o_proj.bias")->name, "model.layers.0.self_attn.o_proj.bias");
  EXPECT_EQ(HfNameOf(ModelFamily::kLlama, "block.12.down_proj.weight")->name, "model.layers.12.mlp.down_proj.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kLlama, "block.1.post_attention_layernorm.weight")->name,
            "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kLlama, "embedding.embed_tokens")->name, "model.embed_tokens.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kLlama, "head.norm.weight")->name, "model.norm.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kLlama, "head.lm_head.weight")->name, "lm_head.weight");
  auto c = HfNameOf(ModelFamily::kGpt2, "block.2.attn_qkv.weight");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->name, "transformer.h.2.attn.c_attn.weight");
  EXPECT_TRUE(c->transpose);
  EXPECT_EQ(c->candidates, (std::vector<std::string>{"transformer.h.2.attn.c_attn.weight", "h.2.attn.c_attn.weight"}));
  EXPECT_FALSE(HfNameOf(ModelFamily::kGpt2, "block.2.attn_qkv.bias")->transpose);
  EXPECT_EQ(HfNameOf(ModelFamily::kGpt2, "block.0.mlp_proj.weight")->name, "transformer.h.0.mlp.c_proj.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kGpt2, "head.ln_f.bias")->name, "transformer.ln_f.bias");
  EXPECT_EQ(HfNameOf(ModelFamily::kGpt2, "embedding.wpe")->name, "transformer.wpe.weight");
  auto bad = HfNameOf(ModelFamily::kGpt2, "block.0.q_proj.weight");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("block.0.q_proj.weight"), std::string::npos);
  // Qwen3 (transformers Qwen3Attention): Llama's names, plus the per-head
  // q/k norms inside self_attn; Llama has no such parameters.
  EXPECT_EQ(HfNameOf(ModelFamily::kQwen3, "block.7.q_norm.weight")->name, "model.layers.7.self_attn.q_norm.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kQwen3, "block.0.k_norm.weight")->name, "model.layers.0.self_attn.k_norm.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kQwen3, "block.1.v_proj.weight")->name, "model.layers.1.self_attn.v_proj.weight");
  EXPECT_EQ(HfNameOf(ModelFamily::kQwen3, "head.lm_head.weight")->name, "lm_head.weight");
  auto tied = HfNameOf(ModelFamily::kQwen3, "head.lm_head.weight", /*tied=*/true);
  ASSERT_TRUE(tied.ok());
  EXPECT_EQ(tied->candidates, (std::vector<std::string>{"model.embed_tokens.weight", "lm_head.weight"}));
  bad = HfNameOf(ModelFamily::kLlama, "block.0.q_norm.weight");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'block.0.q_norm.weight' has no Hugging Face name in a llama model"),
            std::string::npos)
      << bad.status().message();
}

TEST(HfWeights, ConfigRoundTripsAndDifferencesAreNamed) {
  const nlohmann::json llama = nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 2,
      "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48,
      "max_position_embeddings": 16, "vocab_size": 256, "attention_bias": true, "rms_norm_eps": 1e-6,
      "rope_theta": 500000, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
      "high_freq_factor": 4, "original_max_position_embeddings": 8}})");
  auto m = ParseModelConfig(llama, "a");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto back = ParseModelConfig(HfConfigJson(*m), "b");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(CheckSameModel(*m, *back, "b").ok()) << CheckSameModel(*m, *back, "b").ToString();
  nlohmann::json other = llama;
  other["num_hidden_layers"] = 3;
  Status st = CheckSameModel(*m, *ParseModelConfig(other, "x"), "dir/config.json");
  EXPECT_NE(st.message().find("dir/config.json: field 'num_hidden_layers' is 3 but the plan's model has 2"),
            std::string::npos)
      << st.message();
  other = llama;
  other["rms_norm_eps"] = 1e-5;
  st = CheckSameModel(*m, *ParseModelConfig(other, "x"), "c");
  EXPECT_NE(st.message().find("'rms_norm_eps'"), std::string::npos) << st.message();
  const nlohmann::json gpt = nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 16,
      "n_head": 2, "n_positions": 16, "vocab_size": 256, "tie_word_embeddings": false, "attn_pdrop": 0,
      "resid_pdrop": 0, "embd_pdrop": 0})");
  auto g = ParseModelConfig(gpt, "g");
  ASSERT_TRUE(g.ok());
  auto gback = ParseModelConfig(HfConfigJson(*g), "g2");
  ASSERT_TRUE(gback.ok()) << gback.status().ToString();
  EXPECT_TRUE(CheckSameModel(*g, *gback, "g2").ok()) << CheckSameModel(*g, *gback, "g2").ToString();
  EXPECT_EQ(HfConfigJson(*g)["activation_function"], "gelu");
  st = CheckSameModel(*g, *m, "m");
  EXPECT_NE(st.message().find("'model_type'"), std::string::npos) << st.message();
  // Qwen3, tied, head_dim 32 against hidden 64 / 4 heads: written as model_type
  // qwen3 with its head_dim, read back the same; a Llama of the same sizes is
  // another model.
  const nlohmann::json qwen3 = nlohmann::json::parse(R"({"model_type": "qwen3", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
      "intermediate_size": 96, "max_position_embeddings": 32, "vocab_size": 300, "tie_word_embeddings": true,
      "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "sliding_window": null, "use_sliding_window": false})");
  auto q = ParseModelConfig(qwen3, "q");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const nlohmann::json qjson = HfConfigJson(*q);
  EXPECT_EQ(qjson["model_type"], "qwen3");
  EXPECT_EQ(qjson["architectures"], nlohmann::json::array({"Qwen3ForCausalLM"}));
  EXPECT_EQ(qjson["head_dim"], 32);
  auto qback = ParseModelConfig(qjson, "q2");
  ASSERT_TRUE(qback.ok()) << qback.status().ToString();
  EXPECT_TRUE(CheckSameModel(*q, *qback, "q2").ok()) << CheckSameModel(*q, *qback, "q2").ToString();
  nlohmann::json as_llama = qwen3;
  as_llama["model_type"] = "llama";
  st = CheckSameModel(*q, *ParseModelConfig(as_llama, "l"), "l");
  EXPECT_NE(st.message().find("l: field 'model_type' is llama but the plan's model has qwen3"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace pw
