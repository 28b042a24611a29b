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
  if (j.contains("source") && j["source"].is_string()) d.source = j["source"].get<std::string>();
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
  if (!d.source.empty()) j["source"] = d.source;
  return j;
}

}  // namespace pw
