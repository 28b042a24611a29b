// LoopbackCommunicator: P ranks as threads of one process, for fast tests of
// the interpreter and the executor without mpirun. Sends copy the bytes into
// the channel at post time (eager, never block); a receive matches the k-th
// message of its channel by post order (FIFO, as MPI and NCCL).
//
// Thread safety: one LoopbackHub is shared by all rank threads and is
// internally synchronised; each LoopbackCommunicator is used by one thread.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "executor/comm/communicator.h"

namespace pw::exec {

class LoopbackHub {
 public:
  // `timeout_s`: a Wait or collective that waits longer returns CommError
  // (a test that would hang fails instead).
  explicit LoopbackHub(int world_size, double timeout_s = 60.0);
  int world_size() const { return world_size_; }

 private:
  friend class LoopbackCommunicator;
  using Key = std::tuple<int, int, int>;  // (src, dst, channel)
  struct ChannelState {
    std::map<int64_t, std::vector<char>> messages;  // send index -> bytes
    int64_t sends = 0, recvs = 0;
  };
  int world_size_;
  double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, ChannelState> channels_;
  // Collectives: generation-counted rendezvous.
  int64_t gather_generation_ = 0;
  int gather_arrived_ = 0;
  std::vector<std::string> gather_slots_, gather_result_;
};

class LoopbackCommunicator : public Communicator {
 public:
  LoopbackCommunicator(std::shared_ptr<LoopbackHub> hub, int rank);
  int rank() const override { return rank_; }
  int size() const override { return hub_->world_size(); }
  std::string name() const override { return "loopback"; }
  StatusOr<RequestId> Isend(int peer, Channel channel, const void* data, int64_t bytes) override;
  StatusOr<RequestId> Irecv(int peer, Channel channel, void* data, int64_t bytes) override;
  Status Wait(RequestId id) override;
  // A send is complete at once (eager copy); a receive once its message has
  // arrived in the channel.
  StatusOr<bool> Test(RequestId id) override;
  StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override;
  Status Barrier() override;

 private:
  struct Pending {
    bool is_recv = false;
    LoopbackHub::Key key;
    int64_t index = 0;
    void* data = nullptr;
    int64_t bytes = 0;
  };
  // Delivers an arrived message to receive `p` (hub lock held; the message
  // must be in the channel). Errors: CommError on a byte-count mismatch.
  Status Deliver(const Pending& p);
  std::shared_ptr<LoopbackHub> hub_;
  int rank_;
  RequestId next_id_ = 0;
  std::map<RequestId, Pending> pending_;
};

}  // namespace pw::exec
