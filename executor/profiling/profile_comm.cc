// MeasureP2P (executor/profiling/profile.h): torch-free ping-pong over a Communicator.
#include <algorithm>
#include <chrono>
#include <vector>

#include "executor/profiling/profile.h"

namespace pw::exec {

StatusOr<std::vector<CommSample>> MeasureP2P(Communicator& comm, const std::vector<int64_t>& sizes, int warmup,
                                             int repetitions) {
  if (comm.size() < 2)
    return Status::InvalidArgument("P2P measurement needs 2 ranks (run under mpirun -np 2), got " +
                                   std::to_string(comm.size()));
  if (warmup < 0 || repetitions < 1)
    return Status::InvalidArgument("P2P: --warmup must be >= 0 and --repetitions >= 1");
  std::vector<CommSample> out;
  const int me = comm.rank();
  for (int64_t bytes : sizes) {
    // Separate send and receive buffers: a posted send's bytes must stay
    // unchanged until its Wait (communicator.h), and rank 0 posts its receive
    // before waiting for its send.
    std::vector<char> buf(static_cast<size_t>(std::max<int64_t>(bytes, 1)), static_cast<char>(me));
    std::vector<char> reply(buf.size());
    std::vector<double> rtt;
    PW_RETURN_IF_ERROR(comm.Barrier());
    for (int k = 0; k < warmup + repetitions; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      // Rank 0 sends forward and waits for the reply on the backward channel
      // (the directions a pipeline uses between two neighbouring ranks).
      if (me == 0) {
        PW_ASSIGN_OR_RETURN(RequestId s, comm.Isend(1, Channel::kForward, buf.data(), bytes));
        PW_ASSIGN_OR_RETURN(RequestId r, comm.Irecv(1, Channel::kBackward, reply.data(), bytes));
        PW_RETURN_IF_ERROR(comm.Wait(s));
        PW_RETURN_IF_ERROR(comm.Wait(r));
      } else if (me == 1) {
        PW_ASSIGN_OR_RETURN(RequestId r, comm.Irecv(0, Channel::kForward, buf.data(), bytes));
        PW_RETURN_IF_ERROR(comm.Wait(r));
        PW_ASSIGN_OR_RETURN(RequestId s, comm.Isend(0, Channel::kBackward, buf.data(), bytes));
        PW_RETURN_IF_ERROR(comm.Wait(s));
      }
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (k >= warmup) rtt.push_back(dt);
    }
    std::nth_element(rtt.begin(), rtt.begin() + rtt.size() / 2, rtt.end());
    out.push_back({bytes, rtt[rtt.size() / 2] / 2.0});
  }
  // Every rank returns rank 0's timings.
  std::vector<double> mine;
  for (const CommSample& c : out) mine.push_back(c.seconds);
  PW_ASSIGN_OR_RETURN(auto all, AllGatherDoubles(comm, mine));
  for (size_t k = 0; k < out.size(); ++k) out[k].seconds = all[0][k];
  return out;
}

StatusOr<std::vector<CollectiveSample>> MeasureCollectives(Communicator& comm, const std::vector<int64_t>& sizes,
                                                           int warmup, int repetitions) {
  const int t = comm.size();
  if (t < 2)
    return Status::InvalidArgument("collective measurement needs >= 2 ranks (run under mpirun -np 2), got " +
                                   std::to_string(t));
  if (warmup < 0 || repetitions < 1)
    return Status::InvalidArgument("collectives: --warmup must be >= 0 and --repetitions >= 1");
  for (int64_t bytes : sizes)
    if (bytes < 4 * t || bytes % (4 * t) != 0)
      return Status::InvalidArgument("--collective-bytes " + std::to_string(bytes) +
                                     ": must be a positive multiple of " + std::to_string(4 * t) +
                                     " (float32 elements, split over " + std::to_string(t) + " ranks)");
  std::vector<CollectiveSample> out;
  const char* kinds[] = {"all-reduce", "reduce-scatter", "all-gather"};
  for (const char* kind : kinds) {
    const std::string k = kind;
    for (int64_t bytes : sizes) {
      const int64_t n = bytes / 4, block = n / t;
      std::vector<float> full(static_cast<size_t>(n), 1.0f), part(static_cast<size_t>(block), 1.0f);
      std::vector<double> mine;
      for (int r = 0; r < warmup + repetitions; ++r) {
        PW_RETURN_IF_ERROR(comm.Barrier());
        const auto t0 = std::chrono::steady_clock::now();
        StatusOr<RequestId> id = k == "all-reduce" ? comm.IallReduceSum(full.data(), n, ElementType::kFloat32)
                                 : k == "reduce-scatter"
                                     ? comm.IreduceScatterSum(full.data(), part.data(), block, ElementType::kFloat32)
                                     : comm.IallGatherBlocks(part.data(), full.data(), block, ElementType::kFloat32);
        if (!id.ok()) return id.status();
        PW_RETURN_IF_ERROR(comm.Wait(*id));
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r >= warmup) mine.push_back(dt);
        // Keep the values bounded (the sums grow by t each all-reduce).
        if (k == "all-reduce") std::fill(full.begin(), full.end(), 1.0f);
      }
      // The slowest rank of each round, then the median over the rounds.
      PW_ASSIGN_OR_RETURN(auto all, AllGatherDoubles(comm, mine));
      std::vector<double> rounds(mine.size(), 0.0);
      for (const auto& v : all)
        for (size_t r = 0; r < rounds.size(); ++r) rounds[r] = std::max(rounds[r], v[r]);
      std::nth_element(rounds.begin(), rounds.begin() + rounds.size() / 2, rounds.end());
      out.push_back({k, t, bytes, rounds[rounds.size() / 2]});
    }
  }
  return out;
}

}  // namespace pw::exec
