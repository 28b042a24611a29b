// A device (one GPU, one pipeline rank): memory, compute rate and the link to
// its pipeline neighbours. Shipped specs live in models/devices/*.json
// (A100-40GB, A100-80GB, H100-80GB, H200-141GB); users may pass their own
// JSON with the same fields:
//   {"name": "H100-80GB", "memory_bytes": 85899345920,
//    "peak_flops": 9.89e14, "efficiency": 0.4,
//    "memory_bandwidth_bytes_per_s": 3.35e12,
//    "p2p_bandwidth_bytes_per_s": 5.0e10, "p2p_latency_s": 1e-5,
//    "source": "..."}
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/costs.h"
#include "base/status.h"

namespace pw {

struct DeviceSpec {
  std::string name;
  int64_t memory_bytes = 0;       // device memory, bytes (the default --memory-limit)
  double peak_flops = 0;          // peak dense bf16 FLOP/s (vendor datasheet)
  double efficiency = 0.5;        // achievable fraction of peak_flops on transformer GEMMs (a planning assumption)
  double memory_bandwidth_bytes_per_s = 0;  // HBM bandwidth, for memory-bound layers (embedding)
  double p2p_bandwidth_bytes_per_s = 0;     // one direction, between pipeline neighbours
  double p2p_latency_s = 0;
  std::string source;             // where the numbers come from

  // Seconds for `flops` at peak_flops * efficiency.
  double ComputeSeconds(double flops) const { return flops / (peak_flops * efficiency); }
  // Seconds to move `bytes` through HBM at memory_bandwidth * efficiency.
  double MemorySeconds(double bytes) const { return bytes / (memory_bandwidth_bytes_per_s * efficiency); }
  // The docs/PLAN_FORMAT.md `comm` model of this device's link.
  CommModel Comm() const { return CommModel{p2p_latency_s, p2p_bandwidth_bytes_per_s}; }
};

// Parses a device object. InvalidArgument names the field ("<source>:
// field 'peak_flops' must be a positive number"); efficiency must be in (0, 1].
StatusOr<DeviceSpec> ParseDeviceSpec(const nlohmann::json& j, const std::string& source);

// `name_or_path`: a JSON file, or a shipped device name (case-insensitive,
// e.g. "H100-80GB"). NotFound (naming --device) lists the shipped ones.
StatusOr<DeviceSpec> LoadDeviceSpec(const std::string& name_or_path);

// The device as a JSON object (the same fields), for plans and tests.
nlohmann::json DeviceSpecToJson(const DeviceSpec& d);

}  // namespace pw
