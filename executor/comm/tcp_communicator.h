// TcpCommunicator: the Communicator over plain TCP sockets, for launchers
// without MPI (`torchrun --no-python`, which sets RANK / WORLD_SIZE /
// LOCAL_RANK / MASTER_ADDR / MASTER_PORT). CPU buffers only.
//
// Rendezvous: rank 0 listens on MASTER_ADDR:MASTER_PORT; every other rank
// opens its own listening socket (ephemeral port), connects to rank 0 and
// tells it (rank, port); rank 0 answers with the table of all addresses;
// then each rank j connects to every rank i < j: a full mesh, one socket per
// peer. Messages on a socket are framed (channel, bytes) and delivered in
// order, so each (peer, channel) is a FIFO (PLAN_FORMAT rule 4). One reader
// thread per peer fills posted receives (or queues early messages); Isend
// hands the message to a writer thread per peer and never blocks.
// AllGather / Barrier go through rank 0 on a third channel.
//
// Split: groups over the same sockets (each group's messages and collectives
// on wire channels of its own), with messages, AllGather and Barrier but no
// data-parallel collectives: they bootstrap the NCCL communicators of a
// torchrun launch (`run --comm nccl`: the pipeline and data-parallel groups'
// ncclUniqueIds travel through them). data_parallel() stays false, so a CPU
// plan with dp_size > 1 is still refused before any compute.
//
// The sockets themselves (connect with retries, accept with a timeout, full
// reads and writes) are tcp_socket.h.
//
// Thread safety: the Communicator methods are called from one thread (the
// rank's); the reader/writer threads share state under one mutex.
#pragma once

#include <memory>
#include <string>

#include "executor/comm/communicator.h"

namespace pw::exec {

struct TcpOptions {
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR
  int master_port = 29500;                // MASTER_PORT
  // Rendezvous: how long to keep retrying the connection to rank 0 / peers,
  // and how long rank 0 / a peer waits for each incoming connection.
  double connect_timeout_s = 60.0;
  // Watchdog: a Wait or collective without progress for this long returns
  // CommError naming the peer (0 = forever).
  double watchdog_s = 0.0;
};

class TcpCommunicator : public Communicator {
 public:
  // Collective over `world_size` processes. Errors: CommError naming the
  // rank, the address and the system error (bind, connect, timeout).
  static StatusOr<std::unique_ptr<TcpCommunicator>> Create(int rank, int world_size, const TcpOptions& options);
  ~TcpCommunicator() override;  // closes the sockets, joins the threads

  int rank() const override;
  int size() const override;
  std::string name() const override { return "tcp"; }
  StatusOr<RequestId> Isend(int peer, Channel channel, const void* data, int64_t bytes) override;
  StatusOr<RequestId> Irecv(int peer, Channel channel, void* data, int64_t bytes) override;
  Status Wait(RequestId id) override;
  // True once the writer thread has handed a send to the socket, or a
  // receive's payload was read. A lost peer is reported (CommError) only
  // while the request is still incomplete, as by Wait.
  StatusOr<bool> Test(RequestId id) override;
  StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override;
  Status Barrier() override;
  // The ranks passing the same `color` form a group ranked by (`key`, this
  // rank), like MPI_Comm_split; collective over this communicator. The group
  // must not outlive this communicator. Errors: CommError (a lost peer, the
  // watchdog) naming the rank.
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& label) override;

  struct Impl;  // the sockets and threads (tcp_communicator.cc; its groups share it)

 private:
  TcpCommunicator();
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::exec
