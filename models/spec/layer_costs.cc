#include "models/spec/layer_costs.h"

#include "models/spec/model_config.h"

namespace pw {

namespace {

using nlohmann::json;

Status Seconds(const json& l, const std::string& path, const char* key, double* out) {
  auto it = l.find(key);
  if (it == l.end()) return Status::InvalidArgument(path + "." + key + " is missing");
  if (!it->is_number() || it->get<double>() < 0)
    return Status::InvalidArgument(path + "." + key + " must be a number >= 0 (seconds), got " + it->dump());
  *out = it->get<double>();
  return Status::Ok();
}

Status Bytes(const json& l, const std::string& path, const char* key, bool required, int64_t* out) {
  auto it = l.find(key);
  if (it == l.end()) {
    if (required) return Status::InvalidArgument(path + "." + key + " is missing");
    return Status::Ok();
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    return Status::InvalidArgument(path + "." + key + " must be an integer >= 0 (bytes), got " + it->dump());
  *out = it->get<int64_t>();
  return Status::Ok();
}

}  // namespace

bool IsLayerCostDocument(const json& j) {
  if (!j.is_object() || !j.contains("layers") || !j.contains("format") || !j["format"].is_string()) return false;
  const std::string f = j["format"].get<std::string>();
  return f == "pipewright-layer-costs" || f == "pipewright-profile";
}

StatusOr<LayerCostTable> ParseLayerCosts(const json& j, const std::string& source) {
  if (!IsLayerCostDocument(j))
    return Status::InvalidArgument(source +
                                   ": not a layer-cost file (needs \"format\": \"pipewright-layer-costs\" or "
                                   "\"pipewright-profile\" and a \"layers\" list)");
  LayerCostTable t;
  const json& layers = j["layers"];
  if (!layers.is_array() || layers.empty())
    return Status::InvalidArgument(source + ": layers must be a non-empty list");
  for (size_t k = 0; k < layers.size(); ++k) {
    const json& l = layers[k];
    const std::string path = source + ": layers[" + std::to_string(k) + "]";
    if (!l.is_object()) return Status::InvalidArgument(path + " must be an object");
    LayerCost c;
    c.name = l.contains("name") && l["name"].is_string() ? l["name"].get<std::string>() : "layer." + std::to_string(k);
    if (l.contains("kind") && l["kind"].is_string()) {
      c.kind = l["kind"].get<std::string>();
      if (c.kind != "embedding" && c.kind != "block" && c.kind != "head" && c.kind != "layer")
        return Status::InvalidArgument(path + ".kind must be embedding, block, head or layer, got '" + c.kind + "'");
    }
    PW_RETURN_IF_ERROR(Seconds(l, path, "F", &c.f));
    PW_RETURN_IF_ERROR(Seconds(l, path, "I", &c.i));
    PW_RETURN_IF_ERROR(Seconds(l, path, "W", &c.w));
    if (l.contains("B")) PW_RETURN_IF_ERROR(Seconds(l, path, "B", &c.b));
    if (l.contains("OPTIMIZER")) PW_RETURN_IF_ERROR(Seconds(l, path, "OPTIMIZER", &c.optimizer));
    PW_RETURN_IF_ERROR(Bytes(l, path, "activation_bytes", true, &c.activation_bytes));
    PW_RETURN_IF_ERROR(Bytes(l, path, "wstash_bytes", true, &c.wstash_bytes));
    PW_RETURN_IF_ERROR(Bytes(l, path, "static_bytes", true, &c.static_bytes));
    PW_RETURN_IF_ERROR(Bytes(l, path, "output_bytes", true, &c.output_bytes));
    PW_RETURN_IF_ERROR(Bytes(l, path, "transient_bytes", false, &c.transient_bytes));
    t.layers.push_back(std::move(c));
  }
  if (j.contains("comm")) {
    const json& c = j["comm"];
    CommModel cm;
    if (!c.is_object() || !c.contains("latency_s") || !c["latency_s"].is_number() ||
        !c.contains("bandwidth_bytes_per_s") || !c["bandwidth_bytes_per_s"].is_number())
      return Status::InvalidArgument(source + ": comm must be {\"latency_s\": s, \"bandwidth_bytes_per_s\": B/s}");
    cm.latency_s = c["latency_s"].get<double>();
    cm.bandwidth_bytes_per_s = c["bandwidth_bytes_per_s"].get<double>();
    t.comm = cm;
  }
  if (j.contains("recompute")) {
    if (!j["recompute"].is_string()) return Status::InvalidArgument(source + ": recompute must be a string");
    t.recompute = j["recompute"].get<std::string>();
  }
  if (j.contains("micro_batch_size") && j["micro_batch_size"].is_number_integer())
    t.micro_batch_size = j["micro_batch_size"].get<int64_t>();
  if (j.contains("seq_length") && j["seq_length"].is_number_integer()) t.seq_length = j["seq_length"].get<int64_t>();
  if (j.contains("model")) t.model = j["model"];
  return t;
}

StatusOr<LayerCostTable> ReadLayerCostFile(const std::string& path) {
  PW_ASSIGN_OR_RETURN(json j, ReadJsonFile(path));
  return ParseLayerCosts(j, path);
}

json LayerCostsToJson(const LayerCostTable& t) {
  json j;
  j["format"] = "pipewright-layer-costs";
  j["version"] = 1;
  if (t.micro_batch_size > 0) j["micro_batch_size"] = t.micro_batch_size;
  if (t.seq_length > 0) j["seq_length"] = t.seq_length;
  j["recompute"] = t.recompute;
  if (t.comm) j["comm"] = {{"latency_s", t.comm->latency_s}, {"bandwidth_bytes_per_s", t.comm->bandwidth_bytes_per_s}};
  if (!t.model.is_null()) j["model"] = t.model;
  json layers = json::array();
  for (const LayerCost& c : t.layers) {
    layers.push_back({{"name", c.name},
                      {"kind", c.kind},
                      {"F", c.f},
                      {"I", c.i},
                      {"W", c.w},
                      {"activation_bytes", c.activation_bytes},
                      {"wstash_bytes", c.wstash_bytes},
                      {"static_bytes", c.static_bytes},
                      {"output_bytes", c.output_bytes},
                      {"transient_bytes", c.transient_bytes}});
    if (c.b >= 0) layers.back()["B"] = c.b;
    if (c.optimizer > 0) layers.back()["OPTIMIZER"] = c.optimizer;
  }
  j["layers"] = layers;
  return j;
}

}  // namespace pw
