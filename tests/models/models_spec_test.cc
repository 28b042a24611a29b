// Model specs: shipped configs against published parameter counts, the layer
// list contract, Korthikanti activation bytes, FLOP split, devices, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "models/spec/device.h"
#include "models/spec/footprint.h"
#include "models/spec/layer_costs.h"
#include "models/spec/hf_weights.h"
#include "models/spec/model_config.h"

namespace pw {
namespace {

ModelConfig Load(const std::string& name) {
  auto m = LoadModelConfig(name);
  EXPECT_TRUE(m.ok()) << name << ": " << m.status().ToString();
  return m.ok() ? *m : ModelConfig{};
}

TEST(ModelConfigs, ParameterCountsMatchPublished) {
  // Exact totals of the HF checkpoints; GPT-3's published 175.0B is rounded.
  static const struct {
    const char* name;
    int64_t published;
    double tolerance;
  } cases[] = {
      {"gpt2", 124439808, 0},        {"gpt2-medium", 354823168, 0},   {"gpt2-xl", 1557611200, 0},
      {"llama-2-7b", 6738415616, 0}, {"llama-2-13b", 13015864320, 0}, {"llama-2-70b", 68976648192, 0},
      {"llama-3-8b", 8030261248, 0}, {"llama-3-70b", 70553706496, 0}, {"gpt3-175b", 175000000000, 0.005},
  };
  for (const auto& c : cases) {
    ModelConfig m = Load(c.name);
    const int64_t got = TotalParameters(m);
    ASSERT_TRUE(m.raw.contains("pipewright")) << c.name;
    EXPECT_EQ(m.raw["pipewright"]["published_parameters"].get<int64_t>(), c.published) << c.name;
    if (c.tolerance == 0)
      EXPECT_EQ(got, c.published) << c.name;
    else
      EXPECT_NEAR(double(got) / double(c.published), 1.0, c.tolerance) << c.name << " got " << got;
  }
}

TEST(ModelConfigs, EveryShippedConfigParses) {
  auto names = ShippedNames("configs");
  EXPECT_EQ(names.size(), 9u);
  for (const auto& n : names) {
    ModelConfig m = Load(n);
    EXPECT_GT(m.num_layers, 0) << n;
  }
}

TEST(LayerList, ContractWithTheExecutor) {
  ModelConfig m = Load("gpt2");
  auto layers = BuildLayerList(m);
  ASSERT_EQ(layers.size(), 14u);
  EXPECT_EQ(layers[0].name, "embedding");
  EXPECT_EQ(layers[0].kind, LayerKind::kEmbedding);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(layers[1 + i].name, "block." + std::to_string(i));
  EXPECT_EQ(layers[13].name, "head");
  // GPT-2 small: block 12h^2 + 13h; embedding wte + wpe; head ln_f, tied.
  EXPECT_EQ(layers[1].params, 7087872);
  EXPECT_EQ(layers[0].params, 38597376 + 786432);
  EXPECT_EQ(layers[13].params, 1536);
  EXPECT_EQ(layers[13].held_params, 1536 + 38597376) << "a tied head's stage holds a replica of wte";
}

TEST(Footprint, KorthikantiActivationBytesGpt2Small) {
  ModelConfig m = Load("gpt2");
  auto layers = BuildLayerList(m);
  TrainingShape t;
  t.micro_batch_size = 1;
  t.seq_length = 1024;
  const int64_t sbh = 1024 * 768;
  // s b h (34 + 5 a s / h) = 89,653,248 (Korthikanti et al. 2022 §4.1; docs/ALGORITHMS.md §2)
  EXPECT_EQ(ComputeFootprint(m, layers[1], t).activation_bytes, 89653248);
  t.recompute = Recompute::kSelective;
  EXPECT_EQ(ComputeFootprint(m, layers[1], t).activation_bytes, 34 * sbh);
  t.recompute = Recompute::kFull;
  EXPECT_EQ(ComputeFootprint(m, layers[1], t).activation_bytes, 2 * sbh);
  // ZB paper Table 1: M_W = 32 sbh.
  EXPECT_EQ(ComputeFootprint(m, layers[1], t).wstash_bytes, 32 * sbh);
  // Head: 4 sbh (1 + V/h) (Megatron's logits term).
  EXPECT_EQ(ComputeFootprint(m, layers[13], t).activation_bytes, 4 * sbh + 4 * 1024 * 50257);
  // b scales linearly.
  t.recompute = Recompute::kNone;
  t.micro_batch_size = 4;
  EXPECT_EQ(ComputeFootprint(m, layers[1], t).activation_bytes, 4 * 89653248);
}

TEST(Footprint, FlopSplitMatchesClosedForm) {
  ModelConfig m = Load("gpt2-medium");
  auto layers = BuildLayerList(m);
  TrainingShape t;
  t.micro_batch_size = 2;
  t.seq_length = 1024;
  const double b = 2, s = 1024, h = 1024;
  LayerFootprint fp = ComputeFootprint(m, layers[3], t);
  // F = 24bsh^2 + 4bs^2h, I = 24bsh^2 + 8bs^2h, W = 24bsh^2 (docs/ALGORITHMS.md §2)
  EXPECT_DOUBLE_EQ(fp.flops_f, 24 * b * s * h * h + 4 * b * s * s * h);
  EXPECT_DOUBLE_EQ(fp.flops_i, 24 * b * s * h * h + 8 * b * s * s * h);
  EXPECT_DOUBLE_EQ(fp.flops_w, 24 * b * s * h * h);
  t.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(ComputeFootprint(m, layers[3], t).flops_i, fp.flops_i + fp.flops_f);
  // Whole model, no recompute: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (Narayanan et al. 2021).
  t.recompute = Recompute::kNone;
  double total = 0;
  for (const auto& l : layers) {
    LayerFootprint f = ComputeFootprint(m, l, t);
    total += f.flops_f + f.flops_i + f.flops_w;
  }
  const double l = 24, V = 50257;
  const double want = 72 * b * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(total / want, 1.0, 1e-12);
}

TEST(Footprint, StaticBytesPerParam) {
  ModelConfig m = Load("llama-2-7b");
  auto layers = BuildLayerList(m);
  TrainingShape t;
  EXPECT_EQ(ComputeFootprint(m, layers[1], t).static_bytes, 202383360LL * 18);
  t.precision = Precision::kFp32;
  EXPECT_EQ(ComputeFootprint(m, layers[1], t).static_bytes, 202383360LL * 16);
}

TEST(ModelConfigs, ErrorsNameTheField) {
  nlohmann::json c = {{"model_type", "llama"}, {"hidden_size", 64},        {"num_attention_heads", 4},
                      {"vocab_size", 100},     {"intermediate_size", 128}, {"max_position_embeddings", 32}};
  auto r = ParseModelConfig(c, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("n_layer' or 'num_hidden_layers"), std::string::npos) << r.status().ToString();
  c["num_hidden_layers"] = 2;
  c["num_key_value_heads"] = 3;
  r = ParseModelConfig(c, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("num_key_value_heads"), std::string::npos) << r.status().ToString();
  c["num_key_value_heads"] = 2;
  c["model_type"] = "bert";
  r = ParseModelConfig(c, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model_type"), std::string::npos);
  auto nf = LoadModelConfig("no-such-model");
  ASSERT_FALSE(nf.ok());
  EXPECT_EQ(nf.status().code(), StatusCode::kNotFound);
  EXPECT_NE(nf.status().message().find("llama-2-7b"), std::string::npos) << "lists shipped names";
}

nlohmann::json SmallLlama() {
  return {{"model_type", "llama"},    {"num_hidden_layers", 2},       {"hidden_size", 64},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2},     {"vocab_size", 100},
          {"intermediate_size", 128}, {"max_position_embeddings", 32}};
}

void ExpectRefusedNaming(const nlohmann::json& c, const std::string& field) {
  auto r = ParseModelConfig(c, "x.json");
  ASSERT_FALSE(r.ok()) << c.dump();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'" + field + "'"), std::string::npos) << r.status().ToString();
}

TEST(ModelConfigs, LlamaFamilyBadInputNamesTheField) {
  nlohmann::json c = SmallLlama();
  c["num_local_experts"] = 8;  // Mixtral
  ExpectRefusedNaming(c, "num_local_experts");
  c = SmallLlama();
  c["model_type"] = "qwen2";
  c["num_experts"] = 60;  // Qwen2-MoE style
  ExpectRefusedNaming(c, "num_experts");
  c = SmallLlama();
  c["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  ExpectRefusedNaming(c, "rope_scaling.type");
  c = SmallLlama();
  c["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 2.0}, {"rope_theta", 10000.0}};
  ExpectRefusedNaming(c, "rope_parameters.rope_type");
  c = SmallLlama();
  c["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"original_max_position_embeddings", 8192}};
  ExpectRefusedNaming(c, "rope_scaling.high_freq_factor");
  c = SmallLlama();
  c["rope_scaling"] = {{"rope_type", "linear"}};
  ExpectRefusedNaming(c, "rope_scaling.factor");
  c = SmallLlama();
  c["model_type"] = "mistral";
  c["sliding_window"] = 16;  // below max_position_embeddings 32
  ExpectRefusedNaming(c, "sliding_window");
  c["sliding_window"] = 32;
  EXPECT_TRUE(ParseModelConfig(c, "x.json").ok());
  c["sliding_window"] = nullptr;  // Mistral 7B v0.2+
  EXPECT_TRUE(ParseModelConfig(c, "x.json").ok());
  // Qwen2 and Qwen3 ship a window they do not use: transformers
  // Qwen2Config / Qwen3Config slide only with use_sliding_window, in the
  // layers layer_types marks (by default from max_window_layers, default
  // 28, on).
  for (const char* type : {"qwen2", "qwen3"}) {
    c = SmallLlama();  // 2 layers
    c["model_type"] = type;
    c["sliding_window"] = 4;
    c["use_sliding_window"] = false;
    EXPECT_TRUE(ParseModelConfig(c, "x.json").ok()) << type;
    c["use_sliding_window"] = true;  // max_window_layers 28 >= 2 layers: no layer slides
    EXPECT_TRUE(ParseModelConfig(c, "x.json").ok()) << type;
    c["max_window_layers"] = 1;  // the second layer slides
    ExpectRefusedNaming(c, "sliding_window");
    c["max_window_layers"] = 2;
    EXPECT_TRUE(ParseModelConfig(c, "x.json").ok()) << type;
    c["layer_types"] = {"full_attention", "sliding_attention"};  // what transformers writes wins
    ExpectRefusedNaming(c, "sliding_window");
    c["layer_types"] = {"full_attention", "full_attention"};
    c["max_window_layers"] = 0;
    EXPECT_TRUE(ParseModelConfig(c, "x.json").ok()) << type;
  }
}

TEST(ModelConfigs, RopeScalingOfBothTransformersVersions) {
  nlohmann::json c = SmallLlama();
  auto r = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rope_scaling.type, RopeScaling::Type::kDefault);
  // transformers 4.x, old key "type".
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.5}};
  r = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rope_scaling.type, RopeScaling::Type::kLinear);
  EXPECT_EQ(r->rope_scaling.factor, 2.5);
  // 4.x Llama 3.1 config.
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  r = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(r->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(r->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(r->rope_theta, 500000.0);
  // 5.x: rope_parameters carries rope_theta.
  c.erase("rope_scaling");
  c.erase("rope_theta");
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  r = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rope_scaling.type, RopeScaling::Type::kDefault);
  EXPECT_EQ(r->rope_theta, 1000000.0);
}

// qwen2: biases on q, k, v (h + 2 k d... per block: a d + 2 k d), none on
// o_proj; the parameter count includes exactly those.
TEST(ModelConfigs, Qwen2CountsQkvBiasesOnly) {
  nlohmann::json c = SmallLlama();
  auto llama = ParseModelConfig(c, "x.json");
  c["model_type"] = "qwen2";
  auto qwen = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(llama.ok() && qwen.ok());
  EXPECT_TRUE(qwen->qkv_bias);
  EXPECT_FALSE(qwen->attention_bias);
  const int64_t d = 16, a = 4, k = 2, L = 2;
  EXPECT_EQ(TotalParameters(*qwen) - TotalParameters(*llama), L * (a * d + 2 * k * d));
  // Qwen2-0.5B's published count: 494,032,768 (tied embeddings).
  nlohmann::json q05 = {{"model_type", "qwen2"},     {"num_hidden_layers", 24},          {"hidden_size", 896},
                        {"num_attention_heads", 14}, {"num_key_value_heads", 2},         {"intermediate_size", 4864},
                        {"vocab_size", 151936},      {"max_position_embeddings", 32768}, {"tie_word_embeddings", true},
                        {"sliding_window", 32768},   {"use_sliding_window", false}};
  auto q = ParseModelConfig(q05, "qwen2-0.5b.json");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(TotalParameters(*q), 494032768);
}

TEST(ModelConfigs, Gpt2HiddenMustSplitIntoHeads) {
  // GPT-2 has no head_dim: n_embd must be a multiple of n_head.
  nlohmann::json c = {{"model_type", "gpt2"}, {"n_layer", 2},     {"n_embd", 100},
                      {"n_head", 7},          {"vocab_size", 50}, {"n_positions", 64}};
  auto r = ParseModelConfig(c, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("field 'n_embd' (100) is not divisible by field 'n_head' (7)"), std::string::npos)
      << r.status().ToString();
  c["head_dim"] = 10;  // not a GPT-2 field: does not make it valid
  EXPECT_FALSE(ParseModelConfig(c, "x.json").ok());
  c["n_head"] = 5;
  EXPECT_TRUE(ParseModelConfig(c, "x.json").ok());
}

TEST(Devices, ShippedSpecsLoad) {
  for (const char* n : {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"}) {
    auto d = LoadDeviceSpec(n);
    ASSERT_TRUE(d.ok()) << n << ": " << d.status().ToString();
    EXPECT_EQ(d->name, n);
    EXPECT_GT(d->peak_flops, 1e14);
    EXPECT_GE(d->memory_bytes, int64_t{40} << 30) << n;
  }
  // The capacity the device reports (nvidia-smi: 81559 MiB), and the runtime
  // reserve: 1 GiB context + 256 MiB NCCL buffers + 5 % fragmentation.
  const DeviceSpec h100 = *LoadDeviceSpec("H100-80GB");
  EXPECT_EQ(h100.memory_bytes, int64_t{81559} << 20);
  EXPECT_EQ(h100.ReserveBytes(), (int64_t{1} << 30) + (int64_t{256} << 20) +
                                     static_cast<int64_t>(0.05 * static_cast<double>(int64_t{81559} << 20)));
  EXPECT_EQ(h100.UsableBytes(), h100.memory_bytes - h100.ReserveBytes());
  EXPECT_EQ(LoadDeviceSpec("cpu-core")->ReserveBytes(), 0) << "no CUDA runtime on a CPU rank";
  // The reserve round-trips and bad reserves name the field.
  auto back = ParseDeviceSpec(DeviceSpecToJson(h100), "back.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ReserveBytes(), h100.ReserveBytes());
  nlohmann::json j = DeviceSpecToJson(h100);
  j["runtime_reserve"]["fragmentation_fraction"] = 0.9;
  auto frac = ParseDeviceSpec(j, "dev.json");
  ASSERT_FALSE(frac.ok());
  EXPECT_NE(frac.status().message().find("dev.json: field 'runtime_reserve.fragmentation_fraction' must be a number in "
                                         "[0, 0.5], got 0.9"),
            std::string::npos)
      << frac.status().message();
  j["runtime_reserve"]["fragmentation_fraction"] = 0.05;
  j["runtime_reserve"]["cuda_context_bytes"] = j["memory_bytes"];
  ASSERT_FALSE(ParseDeviceSpec(j, "dev.json").ok()) << "a reserve above the capacity";
  auto bad = ParseDeviceSpec({{"name", "x"},
                              {"memory_bytes", 1},
                              {"peak_flops", 1e12},
                              {"efficiency", 1.5},
                              {"memory_bandwidth_bytes_per_s", 1e9},
                              {"p2p_bandwidth_bytes_per_s", 1e9},
                              {"p2p_latency_s", 0}},
                             "dev.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("efficiency"), std::string::npos);
  auto nf = LoadDeviceSpec("TPU");
  ASSERT_FALSE(nf.ok());
  EXPECT_NE(nf.status().message().find("--device"), std::string::npos);
}

TEST(LayerCosts, RoundTripAndErrors) {
  LayerCostTable t;
  t.layers.push_back({"a", "layer", 1.0, 2.0, 0.5, 10, 5, 100, 7, 0});
  t.layers.push_back({"b", "layer", 1.5, 2.0, 0.5, 11, 6, 101, 8, 3});
  t.comm = CommModel{1e-5, 1e10};
  auto back = ParseLayerCosts(LayerCostsToJson(t), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->layers.size(), 2u);
  EXPECT_EQ(back->layers[1].transient_bytes, 3);
  EXPECT_DOUBLE_EQ(back->comm->latency_s, 1e-5);
  nlohmann::json j = LayerCostsToJson(t);
  j["layers"][1]["F"] = -1;
  auto bad = ParseLayerCosts(j, "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("layers[1].F"), std::string::npos) << bad.status().ToString();
}

// GPT-2's activation_function: the tanh-approximated GELU of transformers'
// "gelu_new" (its GPT2Config default) and its aliases, the exact "gelu", and
// a refusal naming the field for anything the blocks do not run; export
// writes back what was read.
TEST(ModelConfigs, Gpt2ActivationFunction) {
  nlohmann::json c = {{"model_type", "gpt2"}, {"n_layer", 2},      {"n_embd", 32},
                      {"n_head", 4},          {"vocab_size", 100}, {"n_positions", 16}};
  auto plain = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->gelu_tanh) << "absent: exact GELU";
  for (const char* tanh : {"gelu_new", "gelu_pytorch_tanh", "gelu_fast"}) {
    c["activation_function"] = tanh;
    auto m = ParseModelConfig(c, "x.json");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_TRUE(m->gelu_tanh) << tanh;
    EXPECT_EQ(HfConfigJson(*m)["activation_function"], "gelu_new") << tanh;
  }
  c["activation_function"] = "gelu";
  auto exact = ParseModelConfig(c, "x.json");
  ASSERT_TRUE(exact.ok());
  EXPECT_FALSE(exact->gelu_tanh);
  EXPECT_EQ(HfConfigJson(*exact)["activation_function"], "gelu");
  c["activation_function"] = "quick_gelu";
  ExpectRefusedNaming(c, "activation_function");
}

}  // namespace
}  // namespace pw
