// Hugging Face directories end to end through the engine API (loopback ranks
// as threads): a Llama trained 2 steps, saved, exported (single file and
// sharded) and loaded by a fresh engine with other initial weights is bit
// identical; a GPT-2 directory written here in HF's Conv1D layout (without
// the "transformer." prefix) loads exactly; a missing tensor, a wrong shape
// and another model's config.json are refused on every rank, naming them; a
// BF16/F16 directory converts exactly. Qwen3 directories transformers wrote
// (tests/testdata/qwen3): the pipeline's first-step loss equals transformers'.
#include "executor/checkpoint/hf_io.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "models/spec/safetensors.h"
#include "tests/executor/executor_test_util.h"

namespace pw::exec::testing {
namespace {

namespace fs = std::filesystem;

// Runs fn(rank, comm) on `world` loopback ranks (threads).
void OnRanks(int world, const std::function<void(int, Communicator&)>& fn) {
  auto hub = std::make_shared<LoopbackHub>(world, 60.0);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      fn(r, comm);
    });
  for (auto& t : threads) t.join();
}

// Qwen3 directories written by transformers' save_pretrained (tied and
// untied; tests/testdata/qwen3/make_fixtures.py, optional, not run here),
// loaded into the pipeline (P=2, 1F1B, 2 microbatches of 2 rows, T=16,
// float32) by InitFromHf: the loss of the fixture's 4 rows (docs/DATA.md
// windows of tokens.u16, in order) against transformers' loss of the same
// rows, relative difference <= 1e-4 (fp32 round-off: different summation
// orders; printed).
TEST(Qwen3Transformers, FirstStepLossEqualsTransformers) {
  const std::string root = std::string(PW_SOURCE_DIR) + "/tests/testdata/qwen3";
  auto expected = ReadJsonFile(root + "/expected.json");
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  const int rows = (*expected)["rows"].get<int>(), seq = (*expected)["seq"].get<int>();
  std::ifstream in(root + "/tokens.u16", std::ios::binary);
  std::vector<int64_t> tokens;
  for (unsigned char b[2]; in.read(reinterpret_cast<char*>(b), 2);) tokens.push_back(b[0] | (b[1] << 8));
  ASSERT_EQ(tokens.size(), static_cast<size_t>(rows * seq + 1));
  TokenBatch batch;
  batch.rows = rows;
  batch.seq = seq;
  for (int r = 0; r < rows; ++r)
    for (int t = 0; t < seq; ++t) {
      batch.inputs.push_back(tokens[r * seq + t]);
      batch.targets.push_back(tokens[r * seq + t + 1]);
    }
  double worst = 0;
  for (const char* variant : {"tied", "untied"}) {
    auto config = ReadJsonFile(root + "/" + variant + "/config.json");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    PlanSpec spec;
    spec.schedule = "1f1b";
    spec.pp_size = 2;
    spec.num_microbatches = 2;
    spec.model = *config;
    spec.seq_length = seq;
    spec.micro_batch_size = rows / 2;
    spec.bytes_per_element = 4;
    StatusOr<Plan> plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->model->family, ModelFamily::kQwen3);
    std::vector<double> loss(2, -1);
    OnRanks(2, [&](int r, Communicator& comm) {
      auto engine = Engine::Create(*plan, comm, EngineOptions{});
      ASSERT_TRUE(engine.ok()) << engine.status().ToString();
      Status st = (*engine)->InitFromHf(root + "/" + variant);
      ASSERT_TRUE(st.ok()) << st.ToString();
      auto report = (*engine)->Step(batch, /*apply_optimizer=*/false);
      ASSERT_TRUE(report.ok()) << report.status().ToString();
      loss[r] = report->loss;
    });
    const double theirs = (*expected)[variant].get<double>();
    const double rel = std::fabs(loss[0] - theirs) / theirs;
    std::printf("qwen3 %s: first-step loss pipewright %.9f transformers %.9f relative difference %.3e\n", variant,
                loss[0], theirs, rel);
    EXPECT_EQ(loss[0], loss[1]) << variant;
    EXPECT_LE(rel, 1e-4) << variant;
    worst = std::max(worst, rel);
  }
  std::printf("qwen3 vs transformers: worst relative difference %.3e\n", worst);
}

const char kLlama[] = R"({"model_type": "llama", "num_hidden_layers": 3, "hidden_size": 32,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48, "max_position_embeddings": 16,
    "vocab_size": 256, "attention_bias": true, "rms_norm_eps": 1e-6, "tie_word_embeddings": false})";

class HfIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pw_hf_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

Plan MakePlan(const nlohmann::json& model) {
  PlanSpec spec;
  spec.schedule = "1f1b";
  spec.pp_size = 2;
  spec.num_microbatches = 2;
  spec.model = model;
  spec.seq_length = 8;
  spec.micro_batch_size = 2;
  StatusOr<Plan> plan = BuildPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return *plan;
}

// Trains 2 steps (seed 1234) and saves a checkpoint into `ckpt`; returns each
// rank's parameters.
std::vector<std::vector<NamedValues>> TrainAndSave(const Plan& plan, const std::string& ckpt) {
  std::vector<std::vector<NamedValues>> params(2);
  OnRanks(2, [&](int r, Communicator& comm) {
    EngineOptions o;
    auto engine = Engine::Create(plan, comm, o);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    for (int i = 0; i < 2; ++i) ASSERT_TRUE((*engine)->Step(RandomBatch(4, 8, 70 + i)).ok());
    ASSERT_TRUE((*engine)->WriteCheckpoint(ckpt, 2).ok());
    params[r] = (*engine)->Parameters();
  });
  return params;
}

// Fresh engines (other initial weights) loading `hf`: each rank's status and parameters.
std::vector<std::pair<Status, std::vector<NamedValues>>> Load(const Plan& plan, const std::string& hf) {
  std::vector<std::pair<Status, std::vector<NamedValues>>> out(2);
  OnRanks(2, [&](int r, Communicator& comm) {
    EngineOptions o;
    o.init_seed = 99;
    auto engine = Engine::Create(plan, comm, o);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    out[r].first = (*engine)->InitFromHf(hf);
    out[r].second = (*engine)->Parameters();
  });
  return out;
}

void ExpectBitIdentical(const std::vector<NamedValues>& got, const std::vector<NamedValues>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].shape, want[i].shape) << want[i].name;
    EXPECT_TRUE(got[i].values == want[i].values) << want[i].name << " differs";
  }
}

TEST_F(HfIoTest, LlamaExportThenInitFromIsBitIdentical) {
  const Plan plan = MakePlan(nlohmann::json::parse(kLlama));
  const std::string ckpt = (dir_ / "ckpt").string();
  const auto trained = TrainAndSave(plan, ckpt);
  ASSERT_FALSE(trained[0].empty());

  const std::string hf = (dir_ / "hf").string();
  auto s = ExportHfModel(ckpt, hf, safetensors::kDefaultMaxShardBytes, &plan);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->files, 1);
  // 3 blocks x (2 norms + 4 weights + 4 biases + 3 MLP) + embedding + norm + lm_head.
  EXPECT_EQ(s->tensors, 3 * 13 + 3);
  EXPECT_TRUE(fs::exists(dir_ / "hf" / "config.json"));
  EXPECT_TRUE(fs::exists(dir_ / "hf" / "model.safetensors"));
  auto ck = safetensors::Checkpoint::Open(hf);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  ASSERT_NE(ck->Find("model.layers.2.self_attn.k_proj.weight"), nullptr);
  EXPECT_EQ(ck->Find("model.layers.2.self_attn.k_proj.weight")->shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(ck->Find("lm_head.weight")->shape, (std::vector<int64_t>{256, 32}));

  // The initial weights of seed 99 differ; after loading they are the trained ones.
  const auto loaded = Load(plan, hf);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(loaded[r].first.ok()) << loaded[r].first.ToString();
    ExpectBitIdentical(loaded[r].second, trained[r]);
  }

  // Sharded (tiny limit): several files + index, loads the same.
  const std::string sharded = (dir_ / "sharded").string();
  s = ExportHfModel(ckpt, sharded, 20000, &plan);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_GT(s->files, 3);
  EXPECT_TRUE(fs::exists(dir_ / "sharded" / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir_ / "sharded" / "model.safetensors"));
  const auto loaded_sharded = Load(plan, sharded);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(loaded_sharded[r].first.ok()) << loaded_sharded[r].first.ToString();
    ExpectBitIdentical(loaded_sharded[r].second, trained[r]);
  }

  // Export refuses a non-empty output and leaves nothing behind on error.
  auto again = ExportHfModel(ckpt, hf, safetensors::kDefaultMaxShardBytes, &plan);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("is not empty"), std::string::npos) << again.status().message();
  auto missing = ExportHfModel((dir_ / "nockpt").string(), (dir_ / "out2").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir_ / "out2"));

  // Another model's config.json: refused on both ranks, naming the field.
  nlohmann::json other = nlohmann::json::parse(kLlama);
  other["intermediate_size"] = 64;
  fs::create_directories(dir_ / "other");
  std::ofstream(dir_ / "other" / "config.json") << other.dump();
  fs::copy_file(dir_ / "hf" / "model.safetensors", dir_ / "other" / "model.safetensors");
  const auto refused = Load(plan, (dir_ / "other").string());
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(refused[r].first.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused[r].first.message().find("field 'intermediate_size' is 64 but the plan's model has 48"),
              std::string::npos)
        << refused[r].first.message();
  }

  // A directory missing one tensor of rank 1's stage: both ranks refuse,
  // naming it; a wrong shape names the file and tensor.
  std::vector<safetensors::TensorData> kept;
  const safetensors::File* file = ck->FileOf("lm_head.weight");
  for (const std::string& name : ck->Names()) {
    const safetensors::TensorInfo* info = file->Find(name);
    safetensors::TensorData d;
    d.name = name;
    d.dtype = info->dtype;
    d.shape = info->shape;
    d.bytes.assign(file->Data(*info), file->Data(*info) + (info->end - info->begin));
    if (name == "model.norm.weight") continue;
    if (name == "model.layers.0.mlp.up_proj.weight") {
      d.shape = {32, 48};  // transposed: same bytes, wrong shape
    }
    kept.push_back(std::move(d));
  }
  fs::create_directories(dir_ / "broken");
  fs::copy_file(dir_ / "hf" / "config.json", dir_ / "broken" / "config.json");
  ASSERT_TRUE(safetensors::WriteCheckpoint((dir_ / "broken").string(), kept, 1 << 30, {}).ok());
  const auto broken = Load(plan, (dir_ / "broken").string());
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(broken[r].first.ok());
    const std::string& m = broken[r].first.message();
    // Rank 0 (embedding + early blocks) sees the shape; the last stage the missing norm.
    EXPECT_TRUE(m.find("tensor 'model.layers.0.mlp.up_proj.weight' has shape [32, 48]") != std::string::npos ||
                m.find("tensor 'model.norm.weight' is missing") != std::string::npos)
        << m;
  }
}

// A Llama directory stored in BF16 and F16 (as most published checkpoints
// are): every value converts exactly into the run's float32.
TEST_F(HfIoTest, Bf16AndF16DirectoryLoadsExactly) {
  const Plan plan = MakePlan(nlohmann::json::parse(kLlama));
  std::vector<std::vector<NamedValues>> params(2);
  OnRanks(2, [&](int r, Communicator& comm) {
    auto engine = Engine::Create(plan, comm, EngineOptions{});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    params[r] = (*engine)->Parameters();
  });
  // Llama HF names, written out here; odd tensors in BF16 (top 16 bits of the
  // float32), even ones in F16 of small integers / 64 (exact in binary16).
  auto hf_name = [](const std::string& ours) {
    if (ours == "embedding.embed_tokens") return std::string("model.embed_tokens.weight");
    if (ours == "head.norm.weight") return std::string("model.norm.weight");
    if (ours == "head.lm_head.weight") return std::string("lm_head.weight");
    const size_t a = ours.find('.', 6);
    const std::string i = ours.substr(6, a - 6), rest = ours.substr(a + 1);
    const std::string mod = rest.substr(0, rest.find('.'));
    const std::string group = mod.find("layernorm") != std::string::npos                       ? ""
                              : (mod == "gate_proj" || mod == "up_proj" || mod == "down_proj") ? "mlp."
                                                                                               : "self_attn.";
    return "model.layers." + i + "." + group + rest;
  };
  std::vector<safetensors::TensorData> tensors;
  std::vector<std::vector<NamedValues>> want = params;
  int k = 0;
  for (auto& rank : want)
    for (NamedValues& nv : rank) {
      safetensors::TensorData d;
      d.name = hf_name(nv.name);
      d.shape = nv.shape;
      const bool bf16 = k++ % 2 == 1;
      d.dtype = bf16 ? safetensors::Dtype::kBF16 : safetensors::Dtype::kF16;
      for (size_t j = 0; j < nv.values.size(); ++j) {
        uint16_t bits;
        if (bf16) {
          const float f = static_cast<float>(nv.values[j]);
          uint32_t u;
          std::memcpy(&u, &f, 4);
          bits = static_cast<uint16_t>(u >> 16);
          const uint32_t back = static_cast<uint32_t>(bits) << 16;
          float t;
          std::memcpy(&t, &back, 4);
          nv.values[j] = t;  // hand-computed: the truncated float
        } else {
          // n / 64 for n = j % 61 - 30: binary16 sign | exponent | mantissa, built by hand.
          const int n = static_cast<int>(j % 61) - 30;
          nv.values[j] = n / 64.0;
          if (n == 0) {
            bits = 0;
          } else {
            int e = 0, m = std::abs(n);
            while (m >= 2) m >>= 1, ++e;                           // |n| = 2^e x (1 + frac)
            const int mant = ((std::abs(n) << (10 - e)) & 0x3ff);  // 10 fraction bits
            bits = static_cast<uint16_t>((n < 0 ? 0x8000 : 0) | ((e - 6 + 15) << 10) | mant);
          }
        }
        d.bytes.push_back(static_cast<unsigned char>(bits & 0xff));
        d.bytes.push_back(static_cast<unsigned char>(bits >> 8));
      }
      tensors.push_back(std::move(d));
    }
  const std::string hf = (dir_ / "half").string();
  fs::create_directories(hf);
  std::ofstream(hf + "/config.json") << kLlama;
  ASSERT_TRUE(safetensors::WriteCheckpoint(hf, tensors, 1 << 30, {}).ok());
  const auto loaded = Load(plan, hf);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(loaded[r].first.ok()) << loaded[r].first.ToString();
    ExpectBitIdentical(loaded[r].second, want[r]);
  }
}

// GPT-2 in HF's layout: Conv1D weights (in, out), names without "transformer.".
TEST_F(HfIoTest, Gpt2Conv1dDirectoryLoadsExactly) {
  nlohmann::json model = {{"model_type", "gpt2"},
                          {"n_layer", 2},
                          {"n_embd", 16},
                          {"n_head", 2},
                          {"n_positions", 16},
                          {"vocab_size", 256},
                          {"tie_word_embeddings", false},
                          {"attn_pdrop", 0},
                          {"resid_pdrop", 0},
                          {"embd_pdrop", 0}};
  const Plan plan = MakePlan(model);
  std::vector<std::vector<NamedValues>> params(2);
  OnRanks(2, [&](int r, Communicator& comm) {
    auto engine = Engine::Create(plan, comm, EngineOptions{});
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    ASSERT_TRUE((*engine)->Step(RandomBatch(4, 8, 5)).ok());  // nonzero biases and norms
    params[r] = (*engine)->Parameters();
  });
  // Our names -> HF GPT-2 names, written out here (not through the table under test).
  auto hf_name = [](const std::string& ours, bool* conv1d) {
    *conv1d = false;
    if (ours == "embedding.wte") return std::string("wte.weight");
    if (ours == "embedding.wpe") return std::string("wpe.weight");
    if (ours == "head.ln_f.weight") return std::string("ln_f.weight");
    if (ours == "head.ln_f.bias") return std::string("ln_f.bias");
    if (ours == "head.lm_head.weight") return std::string("lm_head.weight");
    const size_t a = ours.find('.', 6);
    const std::string i = ours.substr(6, a - 6), rest = ours.substr(a + 1);
    const size_t b = rest.rfind('.');
    const std::string mod = rest.substr(0, b), suffix = rest.substr(b + 1);
    const std::map<std::string, std::string> m = {
        {"ln_1", "ln_1"},       {"ln_2", "ln_2"},          {"attn_qkv", "attn.c_attn"}, {"attn_proj", "attn.c_proj"},
        {"mlp_fc", "mlp.c_fc"}, {"mlp_proj", "mlp.c_proj"}};
    *conv1d = mod != "ln_1" && mod != "ln_2" && suffix == "weight";
    return "h." + i + "." + m.at(mod) + "." + suffix;
  };
  std::vector<safetensors::TensorData> tensors;
  for (const auto& rank : params)
    for (const NamedValues& nv : rank) {
      bool conv1d = false;
      safetensors::TensorData d;
      d.name = hf_name(nv.name, &conv1d);
      d.shape = nv.shape;
      std::vector<float> v(nv.values.begin(), nv.values.end());  // float32 values: exact
      if (conv1d) {
        const int64_t out = nv.shape[0], in = nv.shape[1];
        d.shape = {in, out};
        for (int64_t o = 0; o < out; ++o)
          for (int64_t k = 0; k < in; ++k) v[k * out + o] = static_cast<float>(nv.values[o * in + k]);
      }
      d.bytes.resize(v.size() * 4);
      std::memcpy(d.bytes.data(), v.data(), d.bytes.size());
      tensors.push_back(std::move(d));
    }
  const std::string hf = (dir_ / "gpt2").string();
  fs::create_directories(hf);
  std::ofstream(hf + "/config.json") << model.dump();
  auto n = safetensors::WriteCheckpoint(hf, tensors, 1 << 30, {{"format", "pt"}});
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  const auto loaded = Load(plan, hf);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(loaded[r].first.ok()) << loaded[r].first.ToString();
    ExpectBitIdentical(loaded[r].second, params[r]);
  }
}

// Tied heads (tie_word_embeddings), GPT-2 and Llama: export writes HF's tied
// layout (the token table once, no lm_head.weight), and --init-from of it
// (and of a directory that does store an equal lm_head.weight) fills both the
// table and the last stage's replica: bit-identical to the trained model.
TEST_F(HfIoTest, TiedHeadExportAndInitFrom) {
  nlohmann::json llama = nlohmann::json::parse(kLlama);
  llama["tie_word_embeddings"] = true;
  const nlohmann::json gpt2 = nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 16,
      "n_head": 2, "n_positions": 16, "vocab_size": 256, "tie_word_embeddings": true, "attn_pdrop": 0,
      "resid_pdrop": 0, "embd_pdrop": 0})");
  for (const auto& [name, model] : {std::pair<std::string, nlohmann::json>{"llama", llama}, {"gpt2", gpt2}}) {
    const Plan plan = MakePlan(model);
    ASSERT_TRUE(plan.model->tied) << name;
    const std::string ckpt = (dir_ / (name + "-ckpt")).string(), hf = (dir_ / (name + "-hf")).string();
    const auto trained = TrainAndSave(plan, ckpt);
    ASSERT_FALSE(trained[1].empty());
    auto s = ExportHfModel(ckpt, hf);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto ck = safetensors::Checkpoint::Open(hf);
    ASSERT_TRUE(ck.ok()) << ck.status().ToString();
    EXPECT_EQ(ck->Find("lm_head.weight"), nullptr) << name << ": tied layout has no lm_head.weight";
    const std::string table = name == "llama" ? "model.embed_tokens.weight" : "transformer.wte.weight";
    ASSERT_NE(ck->Find(table), nullptr) << name;
    std::ifstream config(hf + "/config.json");
    EXPECT_EQ(nlohmann::json::parse(config)["tie_word_embeddings"], true) << name;
    // Both copies were trained identically: the replica equals the table.
    const std::string ours = name == "llama" ? "embedding.embed_tokens" : "embedding.wte";
    const NamedValues *table_values = nullptr, *replica = nullptr;
    for (const auto& nv : trained[0])
      if (nv.name == ours) table_values = &nv;
    for (const auto& nv : trained[1])
      if (nv.name == "head.lm_head.weight") replica = &nv;
    ASSERT_TRUE(table_values != nullptr && replica != nullptr) << name;
    EXPECT_TRUE(table_values->values == replica->values) << name << ": the tied copies differ after training";
    const auto loaded = Load(plan, hf);
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(loaded[r].first.ok()) << name << ": " << loaded[r].first.ToString();
      ExpectBitIdentical(loaded[r].second, trained[r]);
    }
    // A tied directory that also stores lm_head.weight (equal): loads the same.
    std::vector<safetensors::TensorData> tensors;
    for (const std::string& n : ck->Names()) {
      const safetensors::TensorInfo* info = ck->Find(n);
      safetensors::TensorData d{n, info->dtype, info->shape, {}};
      const unsigned char* b = ck->FileOf(n)->Data(*info);
      d.bytes.assign(b, b + (info->end - info->begin));
      tensors.push_back(d);
      if (n == table) {
        d.name = "lm_head.weight";
        tensors.push_back(d);
      }
    }
    const std::string both = (dir_ / (name + "-both")).string();
    fs::create_directories(both);
    fs::copy_file(hf + "/config.json", both + "/config.json");
    ASSERT_TRUE(safetensors::WriteCheckpoint(both, tensors, 1 << 30, {}).ok());
    const auto loaded_both = Load(plan, both);
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(loaded_both[r].first.ok()) << name << ": " << loaded_both[r].first.ToString();
      ExpectBitIdentical(loaded_both[r].second, trained[r]);
    }
  }
}

}  // namespace
}  // namespace pw::exec::testing
