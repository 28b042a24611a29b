#include "planner/data_parallel.h"

namespace pw {

namespace {

// (D-1)/D x bytes / bandwidth (0 for an infinite link).
double RingBandwidthSeconds(int64_t bytes, int dp_size, const CommModel& link) {
  if (link.bandwidth_bytes_per_s <= 0) return 0.0;
  return static_cast<double>(dp_size - 1) / dp_size * static_cast<double>(bytes) / link.bandwidth_bytes_per_s;
}

}  // namespace

double RingAllReduceSeconds(int64_t bytes, int dp_size, const CommModel& link) {
  if (dp_size <= 1 || bytes <= 0) return 0.0;
  return 2.0 * RingBandwidthSeconds(bytes, dp_size, link) + link.latency_s;
}

double RingReduceScatterSeconds(int64_t bytes, int dp_size, const CommModel& link) {
  if (dp_size <= 1 || bytes <= 0) return 0.0;
  return RingBandwidthSeconds(bytes, dp_size, link) + link.latency_s;
}

double BucketedAllReduceSeconds(int64_t bytes, int dp_size, const CommModel& link, int64_t bucket_bytes) {
  if (dp_size <= 1 || bytes <= 0) return 0.0;
  const int64_t buckets = (bytes + bucket_bytes - 1) / bucket_bytes;
  return 2.0 * RingBandwidthSeconds(bytes, dp_size, link) + static_cast<double>(buckets) * link.latency_s;
}

ParamBytes BytesPerParam(Precision precision) {
  switch (precision) {
    case Precision::kMixedBf16:
      return {4, 2, 12};
    case Precision::kFp32:
      return {4, 4, 8};
    case Precision::kFp64:
      return {8, 8, 16};
  }
  return {};
}

double StageReduceSeconds(int64_t params, const DataParallelSpec& dp) {
  if (dp.dp_size <= 1 || params <= 0) return 0.0;
  const ParamBytes pb = BytesPerParam(dp.precision);
  if (dp.distributed_optimizer)
    return RingReduceScatterSeconds(params * pb.grad, dp.dp_size, dp.link) +
           RingReduceScatterSeconds(params * pb.param, dp.dp_size, dp.link);  // the all-gather costs the same
  return BucketedAllReduceSeconds(params * pb.grad, dp.dp_size, dp.link, dp.bucket_bytes);
}

int64_t StaticBytesOfParams(int64_t params, const DataParallelSpec& dp) {
  const ParamBytes pb = BytesPerParam(dp.precision);
  if (!dp.distributed_optimizer || dp.dp_size <= 1) return params * pb.Total();
  return params * (pb.grad + pb.param) + (params * pb.optimizer + dp.dp_size - 1) / dp.dp_size;
}

int64_t ReduceBufferBytes(int64_t params, const DataParallelSpec& dp) {
  return dp.dp_size > 1 ? params * BytesPerParam(dp.precision).grad : 0;
}

}  // namespace pw
