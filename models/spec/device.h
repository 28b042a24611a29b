// A device (one GPU, one pipeline rank): memory, compute rate and the link to
// its pipeline neighbours. Shipped specs live in models/devices/*.json
// (A100-40GB, A100-80GB, H100-80GB, H200-141GB); users may pass their own
// JSON with the same fields:
//   {"name": "H100-80GB", "memory_bytes": 85899345920,
//    "peak_flops": 9.89e14, "efficiency": 0.4,
//    "memory_bandwidth_bytes_per_s": 3.35e12,
//    "p2p_bandwidth_bytes_per_s": 5.0e10, "p2p_latency_s": 1e-5,
//    "runtime_reserve": {"cuda_context_bytes": 1073741824,
//                        "nccl_buffers_bytes": 268435456,
//                        "fragmentation_fraction": 0.05, "source": "..."},
//    "source": "..."}
// `memory_bytes` is the capacity the device reports (nvidia-smi's total);
// `runtime_reserve` (optional; none = 0) is what a training process cannot
// give to parameters and activations. Plans use capacity - reserve.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/costs.h"
#include "base/status.h"

namespace pw {

// Device memory a training process needs besides the plan's bytes.
struct RuntimeReserve {
  int64_t cuda_context_bytes = 0;     // CUDA context, kernels and library workspaces (cuBLAS, cuDNN)
  int64_t nccl_buffers_bytes = 0;     // NCCL communicators' staging buffers
  double fragmentation_fraction = 0;  // of the capacity: the caching allocator's unusable gaps
  std::string source;                 // where the numbers come from
};

struct DeviceSpec {
  std::string name;
  int64_t memory_bytes = 0;       // capacity the device reports, bytes
  RuntimeReserve reserve;         // kept free for the runtime (ReserveBytes)
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
  // Bytes of the reserve: context + NCCL buffers + fragmentation x capacity.
  int64_t ReserveBytes() const {
    return reserve.cuda_context_bytes + reserve.nccl_buffers_bytes +
           static_cast<int64_t>(reserve.fragmentation_fraction * static_cast<double>(memory_bytes));
  }
  // What a plan may use per rank (the default --memory-limit): capacity - reserve.
  int64_t UsableBytes() const { return memory_bytes - ReserveBytes(); }
  // The docs/PLAN_FORMAT.md `comm` model of this device's link.
  CommModel Comm() const { return CommModel{p2p_latency_s, p2p_bandwidth_bytes_per_s}; }
};

// Parses a device object. InvalidArgument names the field ("<source>:
// field 'peak_flops' must be a positive number"); efficiency must be in (0, 1];
// runtime_reserve's byte counts >= 0, its fraction in [0, 0.5], and the
// reserve below the capacity.
StatusOr<DeviceSpec> ParseDeviceSpec(const nlohmann::json& j, const std::string& source);

// `name_or_path`: a JSON file, or a shipped device name (case-insensitive,
// e.g. "H100-80GB"). NotFound (naming --device) lists the shipped ones.
StatusOr<DeviceSpec> LoadDeviceSpec(const std::string& name_or_path);

// The device as a JSON object (the same fields), for plans and tests.
nlohmann::json DeviceSpecToJson(const DeviceSpec& d);

}  // namespace pw
