#include "executor/comm/loopback_communicator.h"

#include <chrono>
#include <cstring>

namespace pw::exec {

StatusOr<std::vector<std::vector<double>>> AllGatherDoubles(Communicator& comm, const std::vector<double>& mine) {
  std::string bytes(mine.size() * sizeof(double), '\0');
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllGather(bytes));
  std::vector<std::vector<double>> out(all.size());
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() % sizeof(double) != 0)
      return Status::CommError("rank " + std::to_string(comm.rank()) + ": AllGatherDoubles: rank " + std::to_string(r) +
                               " sent " + std::to_string(all[r].size()) + " bytes");
    out[r].resize(all[r].size() / sizeof(double));
    if (!all[r].empty()) std::memcpy(out[r].data(), all[r].data(), all[r].size());
  }
  return out;
}

Status RefuseDataParallel(const Communicator& comm) {
  std::string how = comm.name() == "tcp" ? " (torchrun launch; there --comm nccl on GPUs runs data parallelism)" : "";
  return Status::InvalidArgument(
      "plan field 'dp_size' > 1 (pipewright plan --dp): the " + comm.name() + " communicator" + how +
      " runs one pipeline replica and has no data-parallel collectives; launch data-parallel runs with "
      "launch/mpirun.sh or launch/srun.sh (mpirun -np pp_size x dp_size), or plan with --dp 1");
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Split(int, int, const std::string&) {
  return RefuseDataParallel(*this);
}
StatusOr<RequestId> Communicator::IallReduceSum(void*, int64_t, ElementType) { return RefuseDataParallel(*this); }
StatusOr<RequestId> Communicator::IreduceScatterSum(const void*, void*, int64_t, ElementType) {
  return RefuseDataParallel(*this);
}
StatusOr<RequestId> Communicator::IallGatherBlocks(const void*, void*, int64_t, ElementType) {
  return RefuseDataParallel(*this);
}

LoopbackHub::LoopbackHub(int world_size, double timeout_s)
    : world_size_(world_size), timeout_s_(timeout_s), gather_slots_(world_size) {}

LoopbackCommunicator::LoopbackCommunicator(std::shared_ptr<LoopbackHub> hub, int rank)
    : hub_(std::move(hub)), rank_(rank) {}

StatusOr<RequestId> LoopbackCommunicator::Isend(int peer, Channel channel, const void* data, int64_t bytes) {
  if (peer < 0 || peer >= size() || peer == rank_)
    return Status::CommError("rank " + std::to_string(rank_) + ": send to invalid peer " + std::to_string(peer));
  std::vector<char> copy(static_cast<size_t>(bytes));
  if (bytes > 0) std::memcpy(copy.data(), data, static_cast<size_t>(bytes));
  {
    std::lock_guard<std::mutex> lock(hub_->mu_);
    auto& ch = hub_->channels_[{rank_, peer, static_cast<int>(channel)}];
    ch.messages[ch.sends++] = std::move(copy);
  }
  hub_->cv_.notify_all();
  Pending p;
  p.is_recv = false;
  RequestId id = next_id_++;
  pending_[id] = p;
  return id;
}

StatusOr<RequestId> LoopbackCommunicator::Irecv(int peer, Channel channel, void* data, int64_t bytes) {
  if (peer < 0 || peer >= size() || peer == rank_)
    return Status::CommError("rank " + std::to_string(rank_) + ": receive from invalid peer " + std::to_string(peer));
  Pending p;
  p.is_recv = true;
  p.key = {peer, rank_, static_cast<int>(channel)};
  p.data = data;
  p.bytes = bytes;
  {
    std::lock_guard<std::mutex> lock(hub_->mu_);
    p.index = hub_->channels_[p.key].recvs++;
  }
  RequestId id = next_id_++;
  pending_[id] = p;
  return id;
}

Status LoopbackCommunicator::Wait(RequestId id) {
  auto it = pending_.find(id);
  if (it == pending_.end())
    return Status::Internal("rank " + std::to_string(rank_) + ": wait on unknown request " + std::to_string(id));
  Pending p = it->second;
  pending_.erase(it);
  if (!p.is_recv) return Status::Ok();  // eager: the bytes were copied at post time
  std::unique_lock<std::mutex> lock(hub_->mu_);
  auto& ch = hub_->channels_[p.key];
  const int src = std::get<0>(p.key);
  bool arrived = hub_->cv_.wait_for(lock, std::chrono::duration<double>(hub_->timeout_s_),
                                    [&] { return ch.messages.count(p.index) > 0; });
  if (!arrived)
    return Status::CommError("rank " + std::to_string(rank_) + ": receive #" + std::to_string(p.index) + " from rank " +
                             std::to_string(src) + " timed out after " + std::to_string(hub_->timeout_s_) + " s");
  return Deliver(p);
}

Status LoopbackCommunicator::Deliver(const Pending& p) {
  auto& ch = hub_->channels_[p.key];
  const int src = std::get<0>(p.key);
  std::vector<char> msg = std::move(ch.messages[p.index]);
  ch.messages.erase(p.index);
  if (static_cast<int64_t>(msg.size()) != p.bytes)
    return Status::CommError("rank " + std::to_string(rank_) + ": message #" + std::to_string(p.index) + " from rank " +
                             std::to_string(src) + " has " + std::to_string(msg.size()) + " bytes, expected " +
                             std::to_string(p.bytes));
  if (p.bytes > 0) std::memcpy(p.data, msg.data(), msg.size());
  return Status::Ok();
}

StatusOr<bool> LoopbackCommunicator::Test(RequestId id) {
  auto it = pending_.find(id);
  if (it == pending_.end())
    return Status::Internal("rank " + std::to_string(rank_) + ": test of unknown request " + std::to_string(id));
  const Pending p = it->second;
  if (!p.is_recv) {  // eager: the bytes were copied at post time
    pending_.erase(it);
    return true;
  }
  std::lock_guard<std::mutex> lock(hub_->mu_);
  if (hub_->channels_[p.key].messages.count(p.index) == 0) return false;
  pending_.erase(it);
  PW_RETURN_IF_ERROR(Deliver(p));
  return true;
}

StatusOr<std::vector<std::string>> LoopbackCommunicator::AllGather(const std::string& mine) {
  std::unique_lock<std::mutex> lock(hub_->mu_);
  const int64_t generation = hub_->gather_generation_;
  hub_->gather_slots_[rank_] = mine;
  if (++hub_->gather_arrived_ == size()) {
    hub_->gather_result_ = hub_->gather_slots_;
    hub_->gather_arrived_ = 0;
    ++hub_->gather_generation_;
    hub_->cv_.notify_all();
    return hub_->gather_result_;
  }
  bool done = hub_->cv_.wait_for(lock, std::chrono::duration<double>(hub_->timeout_s_),
                                 [&] { return hub_->gather_generation_ != generation; });
  if (!done) return Status::CommError("rank " + std::to_string(rank_) + ": all-gather timed out (a rank is missing)");
  return hub_->gather_result_;
}

Status LoopbackCommunicator::Barrier() { return AllGather("").status(); }

}  // namespace pw::exec
