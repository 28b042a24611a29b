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

}  // namespace pw::exec
