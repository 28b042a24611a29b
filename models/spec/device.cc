#include "models/spec/device.h"

#include "models/spec/model_config.h"

namespace pw {

namespace {

using nlohmann::json;

Status PositiveNumber(const json& j, const std::string& source, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::InvalidArgument(source + ": field '" + std::string(key) + "' is missing");
  if (!it->is_number() || it->get<double>() <= 0)
    return Status::InvalidArgument(source + ": field '" + std::string(key) + "' must be a positive number, got " +
                                   it->dump());
  *out = it->get<double>();
  return Status::Ok();
}

}  // namespace

StatusOr<DeviceSpec> ParseDeviceSpec(const json& j, const std::string& source) {
  if (!j.is_object()) return Status::InvalidArgument(source + ": expected a JSON object (a device spec)");
  DeviceSpec d;
  if (!j.contains("name") || !j["name"].is_string())
    return Status::InvalidArgument(source + ": field 'name' (a string) is missing");
  d.name = j["name"].get<std::string>();
  auto mem = j.find("memory_bytes");
  if (mem == j.end() || !mem->is_number_integer() || mem->get<int64_t>() <= 0)
    return Status::InvalidArgument(source + ": field 'memory_bytes' must be a positive integer" +
                                   (mem == j.end() ? std::string(" (missing)") : ", got " + mem->dump()));
  d.memory_bytes = mem->get<int64_t>();
  PW_RETURN_IF_ERROR(PositiveNumber(j, source, "peak_flops", &d.peak_flops));
  PW_RETURN_IF_ERROR(PositiveNumber(j, source, "efficiency", &d.efficiency));
  if (d.efficiency > 1.0)
    return Status::InvalidArgument(source + ": field 'efficiency' must be in (0, 1], got " + j["efficiency"].dump());
  PW_RETURN_IF_ERROR(PositiveNumber(j, source, "memory_bandwidth_bytes_per_s", &d.memory_bandwidth_bytes_per_s));
  PW_RETURN_IF_ERROR(PositiveNumber(j, source, "p2p_bandwidth_bytes_per_s", &d.p2p_bandwidth_bytes_per_s));
  auto lat = j.find("p2p_latency_s");
  if (lat == j.end() || !lat->is_number() || lat->get<double>() < 0)
    return Status::InvalidArgument(source + ": field 'p2p_latency_s' must be a number >= 0");
  d.p2p_latency_s = lat->get<double>();
  auto gpn = j.find("gpus_per_node");
  if (gpn != j.end()) {
    if (!gpn->is_number_integer() || gpn->get<int64_t>() < 1 || gpn->get<int64_t>() > 1 << 20)
      return Status::InvalidArgument(source + ": field 'gpus_per_node' must be an integer >= 1, got " + gpn->dump());
    d.gpus_per_node = static_cast<int>(gpn->get<int64_t>());
  }
  if (j.contains("intra_node_bandwidth_bytes_per_s"))
    PW_RETURN_IF_ERROR(
        PositiveNumber(j, source, "intra_node_bandwidth_bytes_per_s", &d.intra_node_bandwidth_bytes_per_s));
  if (j.contains("inter_node_bandwidth_bytes_per_s"))
    PW_RETURN_IF_ERROR(
        PositiveNumber(j, source, "inter_node_bandwidth_bytes_per_s", &d.inter_node_bandwidth_bytes_per_s));
  if (j.contains("source") && j["source"].is_string()) d.source = j["source"].get<std::string>();
  auto reserve = j.find("runtime_reserve");
  if (reserve != j.end()) {
    const std::string path = source + ": field 'runtime_reserve.";
    if (!reserve->is_object()) return Status::InvalidArgument(source + ": field 'runtime_reserve' must be an object");
    for (const char* key : {"cuda_context_bytes", "nccl_buffers_bytes"}) {
      auto v = reserve->find(key);
      if (v == reserve->end()) continue;
      if (!v->is_number_integer() || v->get<int64_t>() < 0)
        return Status::InvalidArgument(path + key + "' must be an integer >= 0, got " + v->dump());
      (std::string(key) == "cuda_context_bytes" ? d.reserve.cuda_context_bytes : d.reserve.nccl_buffers_bytes) =
          v->get<int64_t>();
    }
    auto frac = reserve->find("fragmentation_fraction");
    if (frac != reserve->end()) {
      if (!frac->is_number() || !(frac->get<double>() >= 0 && frac->get<double>() <= 0.5))
        return Status::InvalidArgument(path + "fragmentation_fraction' must be a number in [0, 0.5], got " +
                                       frac->dump());
      d.reserve.fragmentation_fraction = frac->get<double>();
    }
    if (reserve->contains("source") && (*reserve)["source"].is_string())
      d.reserve.source = (*reserve)["source"].get<std::string>();
    if (d.UsableBytes() <= 0)
      return Status::InvalidArgument(source + ": field 'runtime_reserve' (" + std::to_string(d.ReserveBytes()) +
                                     " bytes) leaves nothing of memory_bytes (" + std::to_string(d.memory_bytes) + ")");
  }
  return d;
}

StatusOr<DeviceSpec> LoadDeviceSpec(const std::string& name_or_path) {
  PW_ASSIGN_OR_RETURN(std::string path, ResolveShippedFile(name_or_path, "devices", "--device"));
  PW_ASSIGN_OR_RETURN(json j, ReadJsonFile(path));
  return ParseDeviceSpec(j, path);
}

json DeviceSpecToJson(const DeviceSpec& d) {
  json j;
  j["name"] = d.name;
  j["memory_bytes"] = d.memory_bytes;
  j["peak_flops"] = d.peak_flops;
  j["efficiency"] = d.efficiency;
  j["memory_bandwidth_bytes_per_s"] = d.memory_bandwidth_bytes_per_s;
  j["p2p_bandwidth_bytes_per_s"] = d.p2p_bandwidth_bytes_per_s;
  j["p2p_latency_s"] = d.p2p_latency_s;
  if (d.gpus_per_node != 1) j["gpus_per_node"] = d.gpus_per_node;
  if (d.intra_node_bandwidth_bytes_per_s > 0)
    j["intra_node_bandwidth_bytes_per_s"] = d.intra_node_bandwidth_bytes_per_s;
  if (d.inter_node_bandwidth_bytes_per_s > 0)
    j["inter_node_bandwidth_bytes_per_s"] = d.inter_node_bandwidth_bytes_per_s;
  if (d.ReserveBytes() > 0 || !d.reserve.source.empty()) {
    j["runtime_reserve"]["cuda_context_bytes"] = d.reserve.cuda_context_bytes;
    j["runtime_reserve"]["nccl_buffers_bytes"] = d.reserve.nccl_buffers_bytes;
    j["runtime_reserve"]["fragmentation_fraction"] = d.reserve.fragmentation_fraction;
    if (!d.reserve.source.empty()) j["runtime_reserve"]["source"] = d.reserve.source;
  }
  if (!d.source.empty()) j["source"] = d.source;
  return j;
}

}  // namespace pw
