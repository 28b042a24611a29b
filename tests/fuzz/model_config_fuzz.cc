// Hugging Face config.json (models/spec/model_config.h ParseModelConfig, the
// one reader: `plan --model-config`, `profile`) and the executor's check of
// what it builds (models/torch/executor_model.h, torch-free): parse, then the
// layer list, parameter count and footprints the planner computes, and the
// config.json writer (`export`), whose output must read back as the same
// model.
#include "base/json_text.h"
#include "models/spec/footprint.h"
#include "models/spec/hf_weights.h"
#include "models/spec/model_config.h"
#include "models/torch/executor_model.h"
#include "tests/fuzz/fuzz_util.h"

using namespace pw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StatusOr<nlohmann::json> doc = ParseJsonText(fuzz::Text(data, size), "config.json");
  if (!doc.ok()) {
    fuzz::CheckPrintable(doc.status().message());
    return 0;
  }
  StatusOr<ModelConfig> model = ParseModelConfig(*doc, "config.json");
  if (!model.ok()) {
    fuzz::CheckPrintable(model.status().message());
    return 0;
  }
  StatusOr<ModelConfig> again = ParseModelConfig(HfConfigJson(*model), "written config.json");
  fuzz::Check(again.ok(), "a written config.json does not read back", again.ok() ? "" : again.status().message());
  Status same = CheckSameModel(*model, *again, "written config.json");
  fuzz::Check(same.ok(), "config.json round trip changes the model", same.message());
  Status buildable = models::CheckExecutorModel(*model, "config.json");
  if (!buildable.ok()) fuzz::CheckPrintable(buildable.message());
  (void)TotalParameters(*model);
  const std::vector<LayerSpec> layers = BuildLayerList(*model);
  TrainingShape shape;
  shape.seq_length = model->max_positions;
  for (Recompute r : {Recompute::kNone, Recompute::kFull}) {
    shape.recompute = r;
    // The first block stands for all: blocks are identical.
    for (size_t k : {size_t{0}, size_t{1}, layers.size() - 1})
      if (k < layers.size()) (void)ComputeFootprint(*model, layers[k], shape);
  }
  return 0;
}
