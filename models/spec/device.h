// A device (one GPU, one pipeline rank): memory, compute rate and the link to
// its pipeline neighbours. Shipped specs live in models/devices/*.json
// (A100-40GB, A100-80GB, H100-80GB, H200-141GB); users may pass their own
// JSON with the same fields:
//   {"name": "H100-80GB", "memory_bytes": 85899345920,
//    "peak_flops": 9.89e14, "efficiency": 0.4,
//    "memory_bandwidth_bytes_per_s": 3.35e12,
//    "p2p_bandwidth_bytes_per_s": 5.0e10, "p2p_latency_s": 1e-5,
//    "gpus_per_node": 8, "intra_node_bandwidth_bytes_per_s": 4.5e11,
//    "inter_node_bandwidth_bytes_per_s": 5.0e10,
//    "runtime_reserve": {"cuda_context_bytes": 1073741824,
//                        "nccl_buffers_bytes": 268435456,
//                        "fragmentation_fraction": 0.05, "source": "..."},
//    "source": "..."}
// `memory_bytes` is the capacity the device reports (nvidia-smi's total);
// `runtime_reserve` (optional; none = 0) is what a training process cannot
// give to parameters and activations. Plans use capacity - reserve.
// The three data-parallel fields (optional) set the links the gradient
// collectives run on: absent, gpus_per_node is 1 and both bandwidths are the
// p2p one.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

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
  int64_t memory_bytes = 0;  // capacity the device reports, bytes
  RuntimeReserve reserve;    // kept free for the runtime (ReserveBytes)
  double peak_flops = 0;     // peak dense bf16 FLOP/s (vendor datasheet)
  double efficiency = 0.5;   // achievable fraction of peak_flops on transformer GEMMs (a planning assumption)
  double memory_bandwidth_bytes_per_s = 0;  // HBM bandwidth, for memory-bound layers (embedding)
  double p2p_bandwidth_bytes_per_s = 0;     // one direction, between pipeline neighbours
  double p2p_latency_s = 0;
  // Data-parallel collectives (docs/ALGORITHMS.md, "Data parallelism").
  int gpus_per_node = 1;                        // devices that share the intra-node link (NVLink)
  double intra_node_bandwidth_bytes_per_s = 0;  // one direction, per device, inside a node; 0 = p2p bandwidth
  double inter_node_bandwidth_bytes_per_s = 0;  // one direction, per device, across nodes; 0 = p2p bandwidth
  std::string source;                           // where the numbers come from

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
  // True if each data-parallel group of `dp_size` adjacent ranks (the
  // contract's rank order g = pp_rank * dp_size + dp_rank) lies inside one
  // node: dp_size <= gpus_per_node and gpus_per_node % dp_size == 0.
  bool DataParallelGroupInNode(int dp_size) const { return dp_size <= gpus_per_node && gpus_per_node % dp_size == 0; }
  // The link a data-parallel group's ring runs on: latency p2p_latency_s,
  // bandwidth intra-node if DataParallelGroupInNode, else inter-node.
  CommModel DataParallelLink(int dp_size) const {
    const double intra =
        intra_node_bandwidth_bytes_per_s > 0 ? intra_node_bandwidth_bytes_per_s : p2p_bandwidth_bytes_per_s;
    const double inter =
        inter_node_bandwidth_bytes_per_s > 0 ? inter_node_bandwidth_bytes_per_s : p2p_bandwidth_bytes_per_s;
    return CommModel{p2p_latency_s, DataParallelGroupInNode(dp_size) ? intra : inter};
  }
};

// Parses a device object. InvalidArgument names the field ("<source>:
// field 'peak_flops' must be a positive number"); efficiency must be in (0, 1];
// runtime_reserve's byte counts >= 0, its fraction in [0, 0.5], and the
// reserve below the capacity; gpus_per_node an integer >= 1 and the two
// node bandwidths positive when given.
StatusOr<DeviceSpec> ParseDeviceSpec(const nlohmann::json& j, const std::string& source);

// `name_or_path`: a JSON file, or a shipped device name (case-insensitive,
// e.g. "H100-80GB"). NotFound (naming --device) lists the shipped ones.
StatusOr<DeviceSpec> LoadDeviceSpec(const std::string& name_or_path);

// The device as a JSON object (the same fields), for plans and tests.
nlohmann::json DeviceSpecToJson(const DeviceSpec& d);

}  // namespace pw
