// Optional cross-check against an independent Llama implementation
// (transformers' Flax Llama; tests/executor/hf_crosscheck.py). Skipped
// unless PW_HF_XCHECK_DIR names a directory: then the single-process
// reference of a small Llama (GQA, attention biases; what Flax Llama
// builds: theta 10000, no scaling, head_dim = h / a, no MLP bias) writes
// <dir>/reference.json: the config, one batch, its fp64 loss, every
// parameter and every gradient (row-major, HF names under our layer names).
// Neither the project nor its CI depends on the Python side.
#include <cstdlib>
#include <fstream>

#include "tests/executor/executor_test_util.h"

namespace pw::exec::testing {
namespace {

TEST(HfCrossCheck, ExportReference) {
  const char* dir = std::getenv("PW_HF_XCHECK_DIR");
  if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "PW_HF_XCHECK_DIR not set (see tests/executor/hf_crosscheck.py)";
  const nlohmann::json config = nlohmann::json::parse(R"({"model_type": "llama", "num_hidden_layers": 2,
      "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 48,
      "max_position_embeddings": 16, "vocab_size": 256, "attention_bias": true, "rms_norm_eps": 1e-6,
      "tie_word_embeddings": false})");
  auto model = ParseModelConfig(config, "xcheck");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EngineOptions options = Fp64Options();
  auto ref = ReferenceModel::Create(*model, options);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  // Nonzero biases, so that the cross-check sees them: one step of AdamW first.
  ASSERT_TRUE((*ref)->Step(RandomBatch(2, 12, 41)).ok());
  const TokenBatch batch = RandomBatch(2, 12, 42);
  const std::vector<NamedValues> params = (*ref)->Parameters();
  StatusOr<double> loss = (*ref)->Step(batch, /*apply_optimizer=*/false);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  nlohmann::json out;
  out["config"] = config;
  out["rows"] = batch.rows;
  out["seq"] = batch.seq;
  out["inputs"] = batch.inputs;
  out["targets"] = batch.targets;
  out["loss"] = *loss;
  auto tensors = [](const std::vector<NamedValues>& v) {
    nlohmann::json j = nlohmann::json::object();
    for (const NamedValues& nv : v) j[nv.name] = {{"shape", nv.shape}, {"values", nv.values}};
    return j;
  };
  out["params"] = tensors(params);
  out["grads"] = tensors((*ref)->Gradients());
  std::ofstream(std::string(dir) + "/reference.json") << out.dump();
  std::printf("wrote %s/reference.json: loss %.15f, %zu tensors\n", dir, *loss, params.size());
}

}  // namespace
}  // namespace pw::exec::testing
