#include "executor/comm/tcp_communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "base/format.h"
#include "executor/comm/tcp_socket.h"

namespace pw::exec {

namespace {

using Clock = std::chrono::steady_clock;
// Wire channels: the world's forward / backward messages are 0 / 1 and its
// AllGather / Barrier blobs 2; a group made by Split owns the channels
// base + 0 / 1 / 2 with a base derived from its identity (a multiple of 4,
// never 0), so its messages and collectives never mix with the world's or
// another group's on a shared socket.
constexpr int64_t kCollectiveChannel = 2;
bool IsCollective(int64_t channel) { return channel % 4 == kCollectiveChannel; }

// 64-bit FNV-1a of a group's identity ("/<split number>:<color>" per level):
// the members of one group compute the same value, other groups another.
int64_t GroupChannelBase(const std::string& identity) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : identity) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(((h % (uint64_t{1} << 40)) + 1) * 4);
}

}  // namespace

struct TcpCommunicator::Impl {
  int rank = 0, size = 1;
  TcpOptions options;
  std::vector<int> fds;  // per peer; -1 for self

  struct Request {
    int peer = 0;
    bool is_recv = false;
    void* data = nullptr;
    int64_t bytes = 0;
    bool done = false;
    std::string error;
  };
  struct Outgoing {
    RequestId id;
    int64_t channel;
    const void* data;
    int64_t bytes;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::map<RequestId, Request> requests;
  std::map<std::pair<int, int64_t>, std::deque<RequestId>> posted;   // (peer, channel) -> receives, FIFO
  std::map<std::pair<int, int64_t>, std::deque<std::string>> early;  // (peer, channel) -> arrived first
  std::vector<std::deque<Outgoing>> outq;                            // per peer
  std::vector<std::string> peer_error;                               // per peer: connection lost
  std::vector<std::thread> threads;
  bool closing = false;
  RequestId next_id = 1;
  int splits = 0;  // Split calls on the world (names each group)

  std::string Me() const { return "rank " + std::to_string(rank); }

  void Reader(int peer) {
    while (true) {
      int64_t header[2];
      if (!tcp::ReadAll(fds[peer], header, sizeof(header))) break;
      const int64_t channel = header[0];
      const int64_t bytes = header[1];
      void* target = nullptr;
      RequestId id = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        auto& q = posted[{peer, channel}];
        if (!IsCollective(channel) && !q.empty()) {
          id = q.front();
          q.pop_front();
          Request& r = requests[id];
          if (r.bytes == bytes) target = r.data;
        }
      }
      if (target != nullptr) {
        if (!tcp::ReadAll(fds[peer], target, bytes)) break;
        std::lock_guard<std::mutex> lock(mu);
        requests[id].done = true;
      } else {
        std::string buf(static_cast<size_t>(bytes), '\0');
        if (!tcp::ReadAll(fds[peer], buf.data(), bytes)) break;
        std::lock_guard<std::mutex> lock(mu);
        auto& q = posted[{peer, channel}];
        if (id == 0 && !IsCollective(channel) && !q.empty()) {
          // A receive was posted while the payload was being read (the lock
          // is not held during ReadAll): deliver to it, or the message would
          // sit in `early` while the receive waits in `posted` forever. FIFO
          // holds: a receive is only queued in `posted` when `early` is empty.
          id = q.front();
          q.pop_front();
          Request& r = requests[id];
          r.done = true;
          if (r.bytes == bytes)
            std::memcpy(r.data, buf.data(), buf.size());
          else
            r.error = Me() + ": receive from rank " + std::to_string(peer) + ": got " + std::to_string(bytes) +
                      " bytes, expected " + std::to_string(r.bytes);
        } else if (id != 0) {  // posted with another size: the ranks disagree on the plan
          requests[id].done = true;
          requests[id].error = Me() + ": receive from rank " + std::to_string(peer) + ": got " + std::to_string(bytes) +
                               " bytes, expected " + std::to_string(requests[id].bytes);
        } else {
          early[{peer, channel}].push_back(std::move(buf));
        }
      }
      cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu);
    if (!closing) peer_error[peer] = "rank " + std::to_string(peer) + " closed the connection (died or exited)";
    cv.notify_all();
  }

  void Writer(int peer) {
    while (true) {
      Outgoing out;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return closing || !outq[peer].empty(); });
        if (outq[peer].empty()) return;
        out = outq[peer].front();
        outq[peer].pop_front();
      }
      int64_t header[2] = {out.channel, out.bytes};
      const bool ok = tcp::WriteAll(fds[peer], header, sizeof(header)) && tcp::WriteAll(fds[peer], out.data, out.bytes);
      std::lock_guard<std::mutex> lock(mu);
      Request& r = requests[out.id];
      r.done = true;
      if (!ok) r.error = Me() + ": send to rank " + std::to_string(peer) + " failed: connection lost";
      cv.notify_all();
    }
  }

  // Waits (lock held) until `ready()` or the watchdog / a lost peer. A send
  // waits with `peer_loss_fails` false: its writer always completes it (with
  // an error if the write failed), and a peer that read the message and
  // exited must not fail a send whose completion the writer is about to mark.
  template <typename Ready>
  Status WaitFor(std::unique_lock<std::mutex>& lock, int peer, const std::string& what, Ready ready,
                 bool peer_loss_fails = true) {
    const auto t0 = Clock::now();
    while (!ready()) {
      if (peer_loss_fails && !peer_error[peer].empty())
        return Status::CommError(Me() + ": " + what + ": " + peer_error[peer]);
      if (options.watchdog_s > 0 && std::chrono::duration<double>(Clock::now() - t0).count() > options.watchdog_s) {
        return Status::CommError(Me() + ": " + what + ": no progress for " + FormatShort(options.watchdog_s) +
                                 " s (watchdog --watchdog-s): the peer died, hangs, or is far behind");
      }
      cv.wait_for(lock, std::chrono::milliseconds(100));
    }
    return Status::Ok();
  }

  RequestId Post(int peer, int64_t channel, const void* data, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    RequestId id = next_id++;
    Request r;
    r.peer = peer;
    r.bytes = bytes;
    requests[id] = r;
    outq[peer].push_back(Outgoing{id, channel, data, bytes});
    cv.notify_all();
    return id;
  }

  StatusOr<std::string> RecvBlob(int peer, int64_t channel) {
    std::unique_lock<std::mutex> lock(mu);
    auto& q = early[{peer, channel}];
    PW_RETURN_IF_ERROR(WaitFor(lock, peer, "collective with rank " + std::to_string(peer), [&] { return !q.empty(); }));
    std::string s = std::move(q.front());
    q.pop_front();
    return s;
  }

  // ---- The operations of the world and of every group (peers are world
  // ranks; `channel` a wire channel) ----
  StatusOr<RequestId> Send(int peer, int64_t channel, const void* data, int64_t bytes) {
    if (peer < 0 || peer >= size || peer == rank)
      return Status::CommError(Me() + ": send to invalid peer " + std::to_string(peer));
    return Post(peer, channel, data, bytes);
  }

  StatusOr<RequestId> Recv(int peer, int64_t channel, void* data, int64_t bytes) {
    if (peer < 0 || peer >= size || peer == rank)
      return Status::CommError(Me() + ": receive from invalid peer " + std::to_string(peer));
    std::lock_guard<std::mutex> lock(mu);
    RequestId id = next_id++;
    Request r;
    r.peer = peer;
    r.is_recv = true;
    r.data = data;
    r.bytes = bytes;
    auto& q = early[{peer, channel}];
    if (!q.empty()) {  // arrived before it was posted
      std::string msg = std::move(q.front());
      q.pop_front();
      r.done = true;
      if (static_cast<int64_t>(msg.size()) != bytes)
        r.error = Me() + ": receive from rank " + std::to_string(peer) + ": got " + std::to_string(msg.size()) +
                  " bytes, expected " + std::to_string(bytes);
      else
        std::memcpy(data, msg.data(), msg.size());
    } else {
      posted[{peer, channel}].push_back(id);
    }
    requests[id] = r;
    return id;
  }

  Status WaitRequest(RequestId id) {
    std::unique_lock<std::mutex> lock(mu);
    auto it = requests.find(id);
    if (it == requests.end()) return Status::Internal(Me() + ": wait on unknown request " + std::to_string(id));
    const int peer = it->second.peer;
    const bool is_recv = it->second.is_recv;
    const std::string what = std::string(is_recv ? "receive from" : "send to") + " rank " + std::to_string(peer);
    PW_RETURN_IF_ERROR(WaitFor(
        lock, peer, what, [&] { return requests[id].done; }, /*peer_loss_fails=*/is_recv));
    std::string error = requests[id].error;
    requests.erase(id);
    if (!error.empty()) return Status::CommError(error);
    return Status::Ok();
  }

  StatusOr<bool> TestRequest(RequestId id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = requests.find(id);
    if (it == requests.end()) return Status::Internal(Me() + ": test of unknown request " + std::to_string(id));
    const int peer = it->second.peer;
    if (!it->second.done) {
      // A send is completed by its writer, also when the peer is gone.
      if (!it->second.is_recv || peer_error[peer].empty()) return false;
      return Status::CommError(Me() + ": receive from rank " + std::to_string(peer) + ": " + peer_error[peer]);
    }
    const std::string error = it->second.error;
    requests.erase(it);
    if (!error.empty()) return Status::CommError(error);
    return true;
  }

  // AllGather among `members` (world ranks, in group rank order; this rank
  // is members[me]) on wire channel `channel`: every member sends its blob
  // to members[0], which sends the packed table back.
  StatusOr<std::vector<std::string>> AllGatherAmong(const std::vector<int>& members, int me, int64_t channel,
                                                    const std::string& mine) {
    const int n = static_cast<int>(members.size());
    std::vector<std::string> all(n);
    all[me] = mine;
    // Blocks until written, so `blob` outlives the writer's use of it.
    auto send_blob = [&](int peer, const std::string& blob) -> Status {
      return WaitRequest(Post(peer, channel, blob.data(), static_cast<int64_t>(blob.size())));
    };
    if (me == 0) {
      for (int r = 1; r < n; ++r) {
        PW_ASSIGN_OR_RETURN(all[r], RecvBlob(members[r], channel));
      }
      std::string packed;
      for (const std::string& part : all) {
        const int64_t len = static_cast<int64_t>(part.size());
        packed.append(reinterpret_cast<const char*>(&len), sizeof(len));
        packed.append(part);
      }
      for (int r = 1; r < n; ++r) PW_RETURN_IF_ERROR(send_blob(members[r], packed));
      return all;
    }
    PW_RETURN_IF_ERROR(send_blob(members[0], mine));
    PW_ASSIGN_OR_RETURN(std::string packed, RecvBlob(members[0], channel));
    size_t pos = 0;
    for (int r = 0; r < n; ++r) {
      int64_t len = 0;
      if (pos + sizeof(len) > packed.size()) return Status::CommError(Me() + ": malformed all-gather");
      std::memcpy(&len, packed.data() + pos, sizeof(len));
      pos += sizeof(len);
      if (len < 0 || pos + static_cast<size_t>(len) > packed.size())
        return Status::CommError(Me() + ": malformed all-gather");
      all[r] = packed.substr(pos, static_cast<size_t>(len));
      pos += static_cast<size_t>(len);
    }
    return all;
  }
};

namespace {

// A group of the world's ranks made by TcpCommunicator::Split (or a group's
// Split): messages, AllGather and Barrier among its members over the
// world's sockets, on the group's own wire channels (GroupChannelBase).
// No data-parallel collectives (the base class refuses them).
class TcpGroup : public Communicator {
 public:
  TcpGroup(TcpCommunicator::Impl* world, std::vector<int> members, int me, std::string identity, std::string label)
      : world_(world),
        members_(std::move(members)),
        me_(me),
        identity_(std::move(identity)),
        label_(std::move(label)),
        base_(GroupChannelBase(identity_)) {}

  int rank() const override { return me_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string name() const override { return "tcp"; }
  StatusOr<RequestId> Isend(int peer, Channel channel, const void* data, int64_t bytes) override {
    PW_ASSIGN_OR_RETURN(int world_peer, WorldPeer(peer));
    return world_->Send(world_peer, base_ + static_cast<int>(channel), data, bytes);
  }
  StatusOr<RequestId> Irecv(int peer, Channel channel, void* data, int64_t bytes) override {
    PW_ASSIGN_OR_RETURN(int world_peer, WorldPeer(peer));
    return world_->Recv(world_peer, base_ + static_cast<int>(channel), data, bytes);
  }
  Status Wait(RequestId id) override { return world_->WaitRequest(id); }
  StatusOr<bool> Test(RequestId id) override { return world_->TestRequest(id); }
  StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override {
    return world_->AllGatherAmong(members_, me_, base_ + kCollectiveChannel, mine);
  }
  Status Barrier() override { return AllGather("").status(); }
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& label) override {
    return SplitTcp(*world_, members_, me_, identity_ + "/" + std::to_string(splits_++), base_ + kCollectiveChannel,
                    color, key, label);
  }

  // The group of the ranks of `members` (world ranks; this one is
  // members[me]) that pass the same color, ranked by (key, rank in
  // `members`). `identity` names the split (the parent's identity and its
  // split count), `channel` is the parent's collective channel.
  static StatusOr<std::unique_ptr<Communicator>> SplitTcp(TcpCommunicator::Impl& world, const std::vector<int>& members,
                                                          int me, const std::string& identity, int64_t channel,
                                                          int color, int key, const std::string& label) {
    PW_ASSIGN_OR_RETURN(auto all,
                        world.AllGatherAmong(members, me, channel, std::to_string(color) + " " + std::to_string(key)));
    std::vector<std::pair<std::pair<int, int>, int>> mine;  // ((key, parent rank), world rank)
    for (int r = 0; r < static_cast<int>(all.size()); ++r) {
      int c = 0, k = 0;
      if (std::sscanf(all[r].c_str(), "%d %d", &c, &k) != 2)
        return Status::CommError(world.Me() + ": malformed split request from rank " + std::to_string(members[r]));
      if (c == color) mine.push_back({{k, r}, members[r]});
    }
    std::sort(mine.begin(), mine.end());
    std::vector<int> group;
    int my_index = -1;
    for (const auto& m : mine) {
      if (m.second == world.rank) my_index = static_cast<int>(group.size());
      group.push_back(m.second);
    }
    return std::unique_ptr<Communicator>(
        std::make_unique<TcpGroup>(&world, std::move(group), my_index, identity + ":" + std::to_string(color), label));
  }

 private:
  StatusOr<int> WorldPeer(int peer) const {
    if (peer < 0 || peer >= size() || peer == me_)
      return Status::CommError(label_ + " rank " + std::to_string(me_) + " (world rank " +
                               std::to_string(members_[me_]) + "): invalid peer " + std::to_string(peer));
    return members_[peer];
  }

  TcpCommunicator::Impl* world_;  // not owned; the world outlives its groups
  std::vector<int> members_;      // world ranks, by group rank
  int me_;
  std::string identity_;
  std::string label_;
  int64_t base_;
  int splits_ = 0;
};

}  // namespace

TcpCommunicator::TcpCommunicator() : impl_(std::make_unique<Impl>()) {}

TcpCommunicator::~TcpCommunicator() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->closing = true;
    impl_->cv.notify_all();
  }
  for (int fd : impl_->fds) tcp::Shutdown(fd);
  for (auto& t : impl_->threads) t.join();
  for (int fd : impl_->fds) tcp::Close(fd);
}

StatusOr<std::unique_ptr<TcpCommunicator>> TcpCommunicator::Create(int rank, int world_size,
                                                                   const TcpOptions& options) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    return Status::InvalidArgument("RANK " + std::to_string(rank) + " is outside WORLD_SIZE " +
                                   std::to_string(world_size));
  std::unique_ptr<TcpCommunicator> self(new TcpCommunicator());
  Impl& s = *self->impl_;
  s.rank = rank;
  s.size = world_size;
  s.options = options;
  s.fds.assign(world_size, -1);
  s.outq.resize(world_size);
  s.peer_error.resize(world_size);
  const std::string master = options.master_addr + ":" + std::to_string(options.master_port);
  auto fail = [&](const Status& st) { return Status::CommError("rank " + std::to_string(rank) + ": " + st.message()); };
  StatusOr<tcp::Endpoint> master_addr = tcp::Resolve(options.master_addr, options.master_port);
  if (!master_addr.ok()) return fail(Status::CommError("MASTER_ADDR " + master_addr.status().message()));
  std::vector<tcp::Endpoint> table(world_size);
  const int64_t table_bytes = static_cast<int64_t>(sizeof(tcp::Endpoint) * table.size());
  if (rank == 0) {
    StatusOr<int> listener = tcp::Listen(*master_addr, "MASTER_ADDR:MASTER_PORT " + master);
    if (!listener.ok()) return fail(listener.status());
    for (int k = 1; k < world_size; ++k) {
      StatusOr<int> fd = tcp::Accept(
          *listener,
          master + " (" + std::to_string(k - 1) + " of " + std::to_string(world_size - 1) + " ranks connected)",
          options.connect_timeout_s);
      if (!fd.ok()) return fail(fd.status());
      int32_t peer = -1;
      tcp::Endpoint ep;
      if (!tcp::ReadAll(*fd, &peer, sizeof(peer)) || !tcp::ReadAll(*fd, &ep, sizeof(ep)) || peer <= 0 ||
          peer >= world_size || s.fds[peer] >= 0) {
        tcp::Close(*fd);
        return fail(Status::CommError("bad hello on " + master + " (another job on this port, or two ranks " +
                                      std::to_string(peer) + ")"));
      }
      s.fds[peer] = *fd;
      table[peer] = ep;
    }
    tcp::Close(*listener);
    for (int k = 1; k < world_size; ++k)
      if (!tcp::WriteAll(s.fds[k], table.data(), table_bytes))
        return fail(
            Status::CommError("sending the address table to rank " + std::to_string(k) + " failed: connection lost"));
  } else {
    StatusOr<int> fd = tcp::Connect(*master_addr, options.connect_timeout_s, "rank 0 at " + master);
    if (!fd.ok()) return fail(fd.status());
    s.fds[0] = *fd;
    // Listen on the interface that reaches rank 0, any free port.
    StatusOr<tcp::Endpoint> local = tcp::LocalEndpoint(*fd);
    if (!local.ok()) return fail(local.status());
    local->port = 0;
    StatusOr<int> listener = tcp::Listen(*local, "a free port");
    if (!listener.ok()) return fail(listener.status());
    StatusOr<tcp::Endpoint> ep = tcp::LocalEndpoint(*listener);
    if (!ep.ok()) return fail(ep.status());
    int32_t me = rank;
    if (!tcp::WriteAll(*fd, &me, sizeof(me)) || !tcp::WriteAll(*fd, &*ep, sizeof(*ep)) ||
        !tcp::ReadAll(*fd, table.data(), table_bytes))
      return fail(Status::CommError("rendezvous with rank 0 at " + master + " failed: connection lost"));
    for (int i = 1; i < rank; ++i) {
      StatusOr<int> c = tcp::Connect(table[i], options.connect_timeout_s, "rank " + std::to_string(i));
      if (!c.ok()) return fail(c.status());
      if (!tcp::WriteAll(*c, &me, sizeof(me)))
        return fail(Status::CommError("hello to rank " + std::to_string(i) + " failed: connection lost"));
      s.fds[i] = *c;
    }
    for (int k = rank + 1; k < world_size; ++k) {
      StatusOr<int> c = tcp::Accept(*listener, "the peer port", options.connect_timeout_s);
      if (!c.ok()) return fail(c.status());
      int32_t peer = -1;
      if (!tcp::ReadAll(*c, &peer, sizeof(peer)) || peer <= rank || peer >= world_size || s.fds[peer] >= 0)
        return fail(Status::CommError("bad hello from a peer (rank " + std::to_string(peer) + ")"));
      s.fds[peer] = *c;
    }
    tcp::Close(*listener);
  }
  for (int p = 0; p < world_size; ++p) {
    if (p == rank) continue;
    s.threads.emplace_back([&s, p] { s.Reader(p); });
    s.threads.emplace_back([&s, p] { s.Writer(p); });
  }
  return self;
}

int TcpCommunicator::rank() const { return impl_->rank; }
int TcpCommunicator::size() const { return impl_->size; }

StatusOr<RequestId> TcpCommunicator::Isend(int peer, Channel channel, const void* data, int64_t bytes) {
  return impl_->Send(peer, static_cast<int>(channel), data, bytes);
}

StatusOr<RequestId> TcpCommunicator::Irecv(int peer, Channel channel, void* data, int64_t bytes) {
  return impl_->Recv(peer, static_cast<int>(channel), data, bytes);
}

Status TcpCommunicator::Wait(RequestId id) { return impl_->WaitRequest(id); }

StatusOr<bool> TcpCommunicator::Test(RequestId id) { return impl_->TestRequest(id); }

StatusOr<std::vector<std::string>> TcpCommunicator::AllGather(const std::string& mine) {
  std::vector<int> everyone(impl_->size);
  for (int r = 0; r < impl_->size; ++r) everyone[r] = r;
  return impl_->AllGatherAmong(everyone, impl_->rank, kCollectiveChannel, mine);
}

Status TcpCommunicator::Barrier() { return AllGather("").status(); }

StatusOr<std::unique_ptr<Communicator>> TcpCommunicator::Split(int color, int key, const std::string& label) {
  std::vector<int> everyone(impl_->size);
  for (int r = 0; r < impl_->size; ++r) everyone[r] = r;
  return TcpGroup::SplitTcp(*impl_, everyone, impl_->rank, std::to_string(impl_->splits++), kCollectiveChannel, color,
                            key, label);
}

}  // namespace pw::exec
