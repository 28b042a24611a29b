// Layer-cost JSON (models/spec/layer_costs.h ParseLayerCosts, `plan
// --model-config costs.json`) and measured profiles (planner/profile_fit.h
// ParseProfile, `plan --profile`): parse as the CLI does, then the costs the
// planner derives, and the writers, whose output must read back the same.
#include "base/json_text.h"
#include "models/spec/layer_costs.h"
#include "planner/profile_fit.h"
#include "tests/fuzz/fuzz_util.h"

using namespace pw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StatusOr<nlohmann::json> doc = ParseJsonText(fuzz::Text(data, size), "costs.json");
  if (!doc.ok()) {
    fuzz::CheckPrintable(doc.status().message());
    return 0;
  }
  if (IsLayerCostDocument(*doc)) {
    StatusOr<LayerCostTable> t = ParseLayerCosts(*doc, "costs.json");
    if (!t.ok()) {
      fuzz::CheckPrintable(t.status().message());
    } else {
      const nlohmann::json written = LayerCostsToJson(*t);
      StatusOr<LayerCostTable> again = ParseLayerCosts(written, "written costs.json");
      fuzz::Check(again.ok(), "written layer costs do not read back", again.ok() ? "" : again.status().message());
      fuzz::Check(LayerCostsToJson(*again) == written, "layer-cost round trip changes them");
    }
  }
  StatusOr<Profile> p = ParseProfile(*doc, "--profile p.json");
  if (!p.ok()) {
    fuzz::CheckPrintable(p.status().message());
    return 0;
  }
  (void)FormatProfileFits(*p);
  for (int64_t b : {int64_t{1}, p->micro_batch_size})
    for (int64_t s : {int64_t{1}, p->seq_length}) {
      (void)FindExtrapolations(*p, b, s);
      StatusOr<LayerCostTable> t = ProfileLayerCosts(*p, p->model, b, s);
      if (!t.ok()) fuzz::CheckPrintable(t.status().message());
    }
  StatusOr<nlohmann::json> written = ProfileToJson(*p);
  if (written.ok()) {
    StatusOr<Profile> again = ParseProfile(*written, "written p.json");
    fuzz::Check(again.ok(), "a written profile does not read back", again.ok() ? "" : again.status().message());
  }
  return 0;
}
