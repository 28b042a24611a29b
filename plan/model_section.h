// The plan's `model` section (docs/PLAN_FORMAT.md): the normalised model
// written and read field by field. Internal to plan/ (plan_json.cc).
#pragma once

#include <nlohmann/json.hpp>

#include "models/spec/model_config.h"
#include "plan/json_reader.h"

namespace pw::plan_json {

// The section's JSON, keys in the documented order.
nlohmann::ordered_json ModelToJson(const ModelConfig& m);

// Reads the section into `m`; errors name "model.<field>".
Status ParseModel(const Reader& rd, const json& j, ModelConfig* m);

}  // namespace pw::plan_json
