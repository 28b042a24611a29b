// Checkpoints keyed by layer, through the engine API (loopback ranks as
// threads, fp64): a run saved under P=2 1F1B after 2 steps and resumed under
// P=3 ZB-V and P=3 interleaved 1F1B (other stage splits, other ranks) holds
// bit-identical parameters and AdamW state after the load (every tensor
// compared, worst difference printed), and its next steps' losses and final
// parameters equal the uninterrupted run's. Then the bad inputs: a truncated
// and a corrupt layer file, a missing tensor, each named before anything
// changes. The same under real mpirun: tests/executor/resume_reshard_test.sh.
#include "executor/checkpoint/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/executor/executor_test_util.h"

namespace pw::exec::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kSeq = 8;
constexpr int kRows = 4;

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

Plan MakePlan(const nlohmann::json& model, const std::string& schedule, int pp) {
  PlanSpec spec;
  spec.schedule = schedule;
  spec.pp_size = pp;
  spec.num_microbatches = kRows;
  spec.model = model;
  spec.seq_length = kSeq;
  spec.micro_batch_size = 1;
  spec.bytes_per_element = 8;
  StatusOr<Plan> plan = BuildPlan(spec);
  EXPECT_TRUE(plan.ok()) << schedule << ": " << plan.status().ToString();
  return *plan;
}

std::vector<TokenBatch> Batches() {
  std::vector<TokenBatch> b;
  for (int i = 0; i < 4; ++i) b.push_back(RandomBatch(kRows, kSeq, 900 + i));
  return b;
}

// Parameters and AdamW state of every rank, one list.
struct State {
  std::vector<NamedValues> tensors;
  void Add(Engine& e) {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    for (auto list : {e.Parameters(), e.OptimizerState()}) tensors.insert(tensors.end(), list.begin(), list.end());
  }
};

// Both directions: every tensor of `a` equals b's and the sets match.
double ExactWorst(const State& a, const State& b, const std::string& what) {
  EXPECT_EQ(a.tensors.size(), b.tensors.size()) << what << ": another set of tensors";
  Diff d1 = WorstDiff(a.tensors, b.tensors), d2 = WorstDiff(b.tensors, a.tensors);
  EXPECT_FALSE(d1.missing || d2.missing) << what << ": " << Describe(d1.missing ? d1 : d2);
  const double worst = std::max(d1.abs, d2.abs);
  std::printf("[ ckpt     ] %-52s %zu tensors, worst |difference| %.3g (%s)\n", what.c_str(), a.tensors.size(), worst,
              worst > 0 ? Describe(d1).c_str() : "bit-identical");
  EXPECT_EQ(worst, 0.0) << what << ": " << Describe(d1);
  return worst;
}

class CheckpointTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pw_ckpt_" + std::to_string(::getpid()) + "_" + std::to_string(GetParam()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  nlohmann::json Model() const {
    if (GetParam() == 0)  // GPT-2 with a tied head: the replica is saved and loaded too
      return nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 4, "n_embd": 16, "n_head": 2,
          "n_positions": 16, "vocab_size": 256, "tie_word_embeddings": true, "attn_pdrop": 0, "resid_pdrop": 0,
          "embd_pdrop": 0})");
    return nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 16,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24, "max_position_embeddings": 16,
        "vocab_size": 256, "attention_bias": true})");
  }
  fs::path dir_;
};

TEST_P(CheckpointTest, ResumesUnderAnotherPlanBitForBit) {
  const std::vector<TokenBatch> batches = Batches();
  const std::string ckpt = (dir_ / "step_000002").string();
  // Uninterrupted: P=2 1F1B, 4 steps, a checkpoint after step 2.
  const Plan saved_plan = MakePlan(Model(), "1f1b", 2);
  State after2, after4;
  std::vector<double> losses(4);
  OnRanks(2, [&](int r, Communicator& comm) {
    auto engine = Engine::Create(saved_plan, comm, Fp64Options());
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    for (int i = 0; i < 4; ++i) {
      auto rep = (*engine)->Step(batches[i]);
      ASSERT_TRUE(rep.ok()) << rep.status().ToString();
      if (r == 0) losses[i] = rep->loss;
      if (i == 1) {
        auto bytes = (*engine)->WriteCheckpoint(ckpt, 2);
        ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
        after2.Add(**engine);
      }
    }
    after4.Add(**engine);
  });
  auto manifest = ReadManifest(ckpt);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->files.size(), 6u) << "one file per layer";
  EXPECT_EQ(manifest->schedule, "1f1b");
  // The manifest's model section reads back as this model (what --resume checks).
  Status resumable =
      CheckResumable(*manifest, ckpt, *saved_plan.model, Fp64Options().init_seed, "float64", kRows, kSeq);
  EXPECT_TRUE(resumable.ok()) << resumable.ToString();

  for (const std::string schedule : {"zb-v", "interleaved-1f1b"}) {
    const Plan plan = MakePlan(Model(), schedule, 3);
    ASSERT_EQ(plan.num_stages, 6);
    State loaded, resumed4;
    std::vector<double> resumed_losses(2);
    OnRanks(3, [&](int r, Communicator& comm) {
      EngineOptions o = Fp64Options();
      o.init_seed = 99;  // other initial weights: everything must come from the checkpoint
      auto engine = Engine::Create(plan, comm, o);
      ASSERT_TRUE(engine.ok()) << engine.status().ToString();
      Status st = (*engine)->LoadCheckpoint(ckpt, *manifest);
      ASSERT_TRUE(st.ok()) << st.ToString();
      loaded.Add(**engine);
      for (int i = 2; i < 4; ++i) {
        auto rep = (*engine)->Step(batches[i]);
        ASSERT_TRUE(rep.ok()) << rep.status().ToString();
        if (r == 0) resumed_losses[i - 2] = rep->loss;
      }
      resumed4.Add(**engine);
    });
    const std::string name = std::string(GetParam() == 0 ? "gpt2-tied" : "llama") + " 1f1b P=2 -> " + schedule + " P=3";
    ExactWorst(loaded, after2, name + ": after the load");
    for (int i = 0; i < 2; ++i) {
      // Same microbatches in the same order on the same values: the losses
      // are the same sums of the same products, bit for bit.
      std::printf("[ ckpt     ] %-52s step %d loss %.17g vs uninterrupted %.17g\n", name.c_str(), i + 3,
                  resumed_losses[i], losses[i + 2]);
      EXPECT_EQ(resumed_losses[i], losses[i + 2]) << name << ": step " << i + 3;
    }
    ExactWorst(resumed4, after4, name + ": after step 4");
  }
}

// A truncated or corrupt layer file, or a tensor missing from it, is named
// (file, tensor, expected vs found) and nothing is loaded.
TEST_P(CheckpointTest, BrokenFilesAreNamedBeforeAnythingChanges) {
  const std::string ckpt = (dir_ / "ck").string();
  const Plan plan = MakePlan(Model(), "1f1b", 2);
  OnRanks(2, [&](int, Communicator& comm) {
    auto engine = Engine::Create(plan, comm, Fp64Options());
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    ASSERT_TRUE((*engine)->Step(Batches()[0]).ok());
    ASSERT_TRUE((*engine)->WriteCheckpoint(ckpt, 1).ok());
  });
  auto manifest = ReadManifest(ckpt);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  const std::string block = ckpt + "/block.1.safetensors";
  const std::string pristine = dir_ / "pristine";
  fs::copy_file(block, pristine);
  const int64_t size = static_cast<int64_t>(fs::file_size(block));
  // Loads into fresh single-rank engines of a P=1 plan (every layer).
  const Plan one = MakePlan(Model(), "1f1b", 1);
  CheckpointManifest current = *manifest;
  auto load = [&]() -> std::pair<Status, std::vector<NamedValues>> {
    auto hub = std::make_shared<LoopbackHub>(1, 60.0);
    LoopbackCommunicator comm(hub, 0);
    auto engine = Engine::Create(one, comm, Fp64Options());
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    std::vector<NamedValues> before = (*engine)->Parameters();
    Status st = (*engine)->LoadCheckpoint(ckpt, current);
    Diff d = WorstDiff((*engine)->Parameters(), before);
    if (!st.ok()) {
      EXPECT_EQ(d.abs, 0.0) << "a failed load changed " << d.name;
    }
    return {st, (*engine)->Parameters()};
  };
  ASSERT_TRUE(load().first.ok());

  fs::resize_file(block, size - 100);
  Status truncated = load().first;
  EXPECT_EQ(truncated.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(truncated.message().find("checkpoint file " + block + " is truncated: " + std::to_string(size - 100) +
                                     " bytes, the manifest says " + std::to_string(size)),
            std::string::npos)
      << truncated.ToString();

  fs::copy_file(pristine, block, fs::copy_options::overwrite_existing);
  {
    std::fstream f(block, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(size - 8);
    f.put('\x7f');
  }
  Status corrupt = load().first;
  EXPECT_NE(corrupt.message().find("checkpoint file " + block + " is corrupt"), std::string::npos)
      << corrupt.ToString();
  std::printf("[ ckpt     ] truncated: %s\n[ ckpt     ] corrupt: %s\n", truncated.message().c_str(),
              corrupt.message().c_str());

  // A manifest naming a file that lacks a tensor (another layer's file).
  fs::copy_file(pristine, block, fs::copy_options::overwrite_existing);
  CheckpointManifest swapped = *manifest;
  for (CheckpointFile& f : swapped.files)
    if (f.layer == "block.2") {
      for (const CheckpointFile& g : manifest->files)
        if (g.layer == "block.1") f = CheckpointFile{g.name, "block.2", g.bytes, g.digest};
    }
  current = swapped;
  Status missing = load().first;
  EXPECT_NE(missing.message().find(block + ": tensor 'block.2."), std::string::npos) << missing.ToString();
  EXPECT_NE(missing.message().find("is missing"), std::string::npos) << missing.ToString();
}

INSTANTIATE_TEST_SUITE_P(Models, CheckpointTest, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == 0 ? "Gpt2Tied" : "Llama");
                         });

}  // namespace
}  // namespace pw::exec::testing
