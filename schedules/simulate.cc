#include "schedules/simulate.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace pw {

int64_t MemoryDelta(ActionType type, const StageMemory& memory) {
  switch (type) {  // docs/PLAN_FORMAT.md rule 7
    case ActionType::kF:
      return memory.activation;
    case ActionType::kB:
      return -memory.activation;
    case ActionType::kI:
      return memory.wstash - memory.activation;
    case ActionType::kW:
      return -memory.wstash;
    default:
      return 0;
  }
}

double BubbleRatio(double sum_busy_s, int ranks, double makespan_s) {
  const double total = ranks * makespan_s;
  return total > 0 ? 1.0 - sum_busy_s / total : 0.0;
}

namespace {

constexpr double kNotDone = -1.0;
enum Dir { kFwd = 0, kBwd = 1 };

struct SentMessage {
  int stage;  // sending stage
  int microbatch;
  double arrival;  // post time + message time
};

// Simulation state shared by the per-rank advance loop.
class Engine {
 public:
  Engine(const Program& p, const StageCosts& c) : p_(p), c_(c), lowered_(p.HasComms()) {
    size_t sm = static_cast<size_t>(p.num_stages) * p.num_microbatches;
    f_end_.assign(sm, kNotDone);
    bwd_end_.assign(sm, kNotDone);
    i_done_.assign(sm, false);
    if (lowered_) {
      recv_slot_.assign(sm * 2, -1);
      channel_of_.assign(static_cast<size_t>(p.pp_size) * p.pp_size * 2, -1);
    }
    blocked_.assign(p.pp_size, Blocked{});
    pos_.assign(p.pp_size, 0);
    free_.assign(p.pp_size, 0.0);
    reduce_free_.assign(p.pp_size, 0.0);
    held_buffers_.assign(p.pp_size, 0);
    mem_.assign(p.pp_size, 0);
    result_.timing.resize(p.pp_size);
    result_.per_rank.resize(p.pp_size);
    for (int r = 0; r < p.pp_size; ++r) {
      result_.timing[r].resize(p.ranks[r].size());
      result_.per_rank[r].memory.reserve(p.ranks[r].size());  // one point per compute action (at most)
    }
    for (int s = 0; s < p.num_stages; ++s) mem_[p.stage_to_rank[s]] += c.memory[s].static_bytes;
    for (int r = 0; r < p.pp_size; ++r) {
      result_.per_rank[r].start_memory_bytes = mem_[r];
      result_.per_rank[r].peak_memory_bytes = mem_[r];
      result_.per_rank[r].first_compute_start_s = std::numeric_limits<double>::infinity();
    }
  }

  StatusOr<SimResult> Run() {
    std::deque<int> work;
    for (int r = 0; r < p_.pp_size; ++r) work.push_back(r);
    while (!work.empty()) {
      int r = work.front();
      work.pop_front();
      Status st = Advance(r, &work);
      if (!st.ok()) return st;
    }
    return Finish();
  }

 private:
  size_t Key(int stage, int mb) const { return static_cast<size_t>(stage) * p_.num_microbatches + mb; }
  int RankOf(int stage) const { return p_.stage_to_rank[stage]; }

  // Dense id of the channel (src rank -> dst rank, direction).
  int Channel(int src, int dst, int dir) {
    size_t key = (static_cast<size_t>(src) * p_.pp_size + dst) * 2 + dir;
    int& id = channel_of_[key];
    if (id >= 0) return id;
    id = static_cast<int>(sends_.size());
    sends_.emplace_back();
    recv_count_.push_back(0);
    channel_dst_.push_back(dst);
    return id;
  }

  Status Error(int r, const std::string& why) const {
    const Action& a = p_.ranks[r][pos_[r]];
    return Status::InvalidArgument("rank " + std::to_string(r) + ", action " + std::to_string(pos_[r]) + " '" +
                                   a.ToString() + "': " + why + "\n" +
                                   FormatGrid(p_, {{r, static_cast<int>(pos_[r])}}));
  }

  // Waits for a message (lowered program) or a remote producer (compute-only).
  // Returns true and sets *arrival if available; false after registering r.
  // On a protocol error returns true with *err set.
  bool Incoming(int r, int stage, int mb, Dir dir, double* arrival, Status* err) {
    int producer_stage = dir == kFwd ? stage - 1 : stage + 1;
    if (!lowered_) {
      size_t k = Key(producer_stage, mb);
      double end = dir == kFwd ? f_end_[k] : bwd_end_[k];
      if (end == kNotDone) {
        blocked_[r] = Blocked{true, false, dir, producer_stage, mb, -1, 0};
        return false;
      }
      const StageMemory& m = c_.memory[producer_stage];
      *arrival = end + c_.comm.MessageSeconds(dir == kFwd ? m.send_forward : m.send_backward);
      return true;
    }
    int64_t slot = recv_slot_[Key(stage, mb) * 2 + dir];
    if (slot < 0) {
      *err = Error(r, std::string("computing before receiving its input: no ") + (dir == kFwd ? "RECV_F" : "RECV_B") +
                          " for stage " + std::to_string(stage) + " microbatch " + std::to_string(mb) +
                          " earlier on this rank");
      return true;
    }
    int c = static_cast<int>(slot >> 32);
    size_t k = static_cast<size_t>(slot & 0xffffffff);
    if (sends_[c].size() <= k) {
      blocked_[r] = Blocked{true, true, dir, producer_stage, mb, c, k};
      return false;
    }
    const SentMessage& msg = sends_[c][k];
    if (msg.stage != producer_stage || msg.microbatch != mb) {
      *err = Error(r, "FIFO mismatch: message " + std::to_string(k) + " on the channel from rank " +
                          std::to_string(RankOf(producer_stage)) + " carries stage " + std::to_string(msg.stage) +
                          " microbatch " + std::to_string(msg.microbatch) + " but this rank expects stage " +
                          std::to_string(producer_stage) + " microbatch " + std::to_string(mb));
      return true;
    }
    *arrival = msg.arrival;
    return true;
  }

  // What a blocked rank waits for: a remote producer (compute-only
  // program) or the k-th message of channel c (lowered program).
  struct Blocked {
    bool active = false;
    bool on_message = false;
    Dir dir = kFwd;
    int producer_stage = -1;
    int microbatch = -1;
    int channel = -1;
    size_t k = 0;
  };

  std::string Describe(int r) const {
    const Blocked& b = blocked_[r];
    if (!b.active) return "nothing (internal error)";
    std::string what = (b.dir == kFwd ? "the forward output of stage " : "the input gradient from stage ") +
                       std::to_string(b.producer_stage) + " microbatch " + std::to_string(b.microbatch);
    if (b.on_message)
      what += " (message " + std::to_string(b.k) + " of the channel from rank " +
              std::to_string(RankOf(b.producer_stage)) + "; its SEND was never posted)";
    return what;
  }

  // Wakes the rank waiting for the output of (stage, mb) in direction dir.
  void WakeProducer(int stage, int mb, Dir dir, std::deque<int>* work) {
    int consumer_stage = dir == kFwd ? stage + 1 : stage - 1;
    int q = RankOf(consumer_stage);
    Blocked& b = blocked_[q];
    if (b.active && !b.on_message && b.dir == dir && b.producer_stage == stage && b.microbatch == mb) {
      b.active = false;
      work->push_back(q);
    }
  }

  // Wakes the receiver of channel c if it waits for message k.
  void WakeMessage(int c, size_t k, std::deque<int>* work) {
    int q = channel_dst_[c];
    Blocked& b = blocked_[q];
    if (b.active && b.on_message && b.channel == c && b.k == k) {
      b.active = false;
      work->push_back(q);
    }
  }

  // When the input of F(s, mb) on rank r is there: kReady with *ready
  // raised to it, kBlocked (r registered as waiting), or kError with *err.
  enum Input { kReady, kBlocked, kError };
  Input ForwardInput(int r, int s, int mb, double* ready, Status* err) {
    if (f_end_[Key(s, mb)] != kNotDone) {
      *err = Error(r, "forward " + MakeAction(s, ActionType::kF, mb).ToString() + " computed twice");
      return kError;
    }
    if (s == 0) return kReady;
    if (RankOf(s - 1) == r) {
      if (f_end_[Key(s - 1, mb)] == kNotDone) {
        *err = Error(r, "needs " + MakeAction(s - 1, ActionType::kF, mb).ToString() +
                            " of the same rank, which has not run before it");
        return kError;
      }
      *ready = std::max(*ready, f_end_[Key(s - 1, mb)]);
      return kReady;
    }
    double arrival = 0;
    if (!Incoming(r, s, mb, kFwd, &arrival, err)) return kBlocked;
    if (!err->ok()) return kError;
    *ready = std::max(*ready, arrival);
    return kReady;
  }

  // The same for the input gradient of a backward (B or I) of (s, mb).
  Input BackwardInput(int r, int s, int mb, double* ready, Status* err) {
    const size_t k = Key(s, mb);
    if (bwd_end_[k] != kNotDone) {
      *err = Error(r, "input-gradient backward of stage " + std::to_string(s) + " microbatch " + std::to_string(mb) +
                          " computed twice");
      return kError;
    }
    if (f_end_[k] == kNotDone) {
      *err = Error(r, "backward before its forward " + MakeAction(s, ActionType::kF, mb).ToString());
      return kError;
    }
    if (s + 1 >= p_.num_stages) return kReady;
    if (RankOf(s + 1) == r) {
      if (bwd_end_[Key(s + 1, mb)] == kNotDone) {
        *err = Error(r, "needs the input gradient of stage " + std::to_string(s + 1) + " microbatch " +
                            std::to_string(mb) + " (same rank), which has not been computed before it");
        return kError;
      }
      *ready = std::max(*ready, bwd_end_[Key(s + 1, mb)]);
      return kReady;
    }
    double arrival = 0;
    if (!Incoming(r, s, mb, kBwd, &arrival, err)) return kBlocked;
    if (!err->ok()) return kError;
    *ready = std::max(*ready, arrival);
    return kReady;
  }

  Status Advance(int r, std::deque<int>* work) {
    const auto& list = p_.ranks[r];
    blocked_[r].active = false;
    while (pos_[r] < list.size()) {
      const Action& a = list[pos_[r]];
      const int s = a.stage, mb = a.microbatch;
      const size_t k = IsReduceGrad(a.type) ? 0 : Key(s, mb);
      ActionTiming& t = result_.timing[r][pos_[r]];
      switch (a.type) {
        case ActionType::kSendF:
        case ActionType::kSendB: {
          bool fwd = a.type == ActionType::kSendF;
          int peer_stage = fwd ? s + 1 : s - 1;
          if (peer_stage < 0 || peer_stage >= p_.num_stages)
            return Error(r, std::string("stage ") + std::to_string(s) + " has no " + (fwd ? "next" : "previous") +
                                " stage to send to");
          if (RankOf(peer_stage) == r)
            return Error(r, "stages " + std::to_string(s) + " and " + std::to_string(peer_stage) + " share rank " +
                                std::to_string(r) + ": no SEND/RECV between them");
          double produced = fwd ? f_end_[k] : bwd_end_[k];
          if (produced == kNotDone)
            return Error(r, std::string("SEND before the ") + (fwd ? "F" : "I/B") + " that produces its tensor");
          int c = Channel(r, RankOf(peer_stage), fwd ? kFwd : kBwd);
          const StageMemory& m = c_.memory[s];
          sends_[c].push_back({s, mb, free_[r] + c_.comm.MessageSeconds(fwd ? m.send_forward : m.send_backward)});
          t.start = t.end = free_[r];
          WakeMessage(c, sends_[c].size() - 1, work);
          break;
        }
        case ActionType::kRecvF:
        case ActionType::kRecvB: {
          bool fwd = a.type == ActionType::kRecvF;
          int peer_stage = fwd ? s - 1 : s + 1;
          if (peer_stage < 0 || peer_stage >= p_.num_stages)
            return Error(r, std::string("stage ") + std::to_string(s) + " has no " + (fwd ? "previous" : "next") +
                                " stage to receive from");
          if (RankOf(peer_stage) == r)
            return Error(r, "stages " + std::to_string(s) + " and " + std::to_string(peer_stage) + " share rank " +
                                std::to_string(r) + ": no SEND/RECV between them");
          int c = Channel(RankOf(peer_stage), r, fwd ? kFwd : kBwd);
          int64_t& slot = recv_slot_[k * 2 + (fwd ? kFwd : kBwd)];
          if (slot >= 0) return Error(r, "received twice");
          slot = (static_cast<int64_t>(c) << 32) | static_cast<int64_t>(recv_count_[c]++);
          t.start = t.end = free_[r];
          break;
        }
        case ActionType::kF: {
          double ready = free_[r];
          Status err;
          const Input in = ForwardInput(r, s, mb, &ready, &err);
          if (in == kBlocked) return Status::Ok();
          if (in == kError) return err;
          double end = ready + c_.stages[s].f;
          Compute(r, t, ready, end, MemoryDelta(a.type, c_.memory[s]));
          f_end_[k] = end;
          if (!lowered_ && s + 1 < p_.num_stages && RankOf(s + 1) != r) WakeProducer(s, mb, kFwd, work);
          break;
        }
        case ActionType::kB:
        case ActionType::kI: {
          bool full = a.type == ActionType::kB;
          double ready = free_[r];
          Status err;
          const Input in = BackwardInput(r, s, mb, &ready, &err);
          if (in == kBlocked) return Status::Ok();
          if (in == kError) return err;
          double end = ready + (full ? c_.stages[s].B() : c_.stages[s].i);
          Compute(r, t, ready, end, MemoryDelta(a.type, c_.memory[s]));
          bwd_end_[k] = end;
          i_done_[k] = !full;
          if (!lowered_ && s > 0 && RankOf(s - 1) != r) WakeProducer(s, mb, kBwd, work);
          break;
        }
        case ActionType::kOverlapFB: {
          // One step of StageCost::OverlapFB seconds that starts when the
          // inputs of both halves are there; both outputs appear at its end.
          const int bs = a.b_stage, bmb = a.b_microbatch;
          double ready = free_[r];
          Status err;
          Input in = ForwardInput(r, s, mb, &ready, &err);
          if (in == kBlocked) return Status::Ok();
          if (in == kError) return err;
          in = BackwardInput(r, bs, bmb, &ready, &err);
          if (in == kBlocked) return Status::Ok();
          if (in == kError) return err;
          const double end = ready + c_.stages[s].OverlapFB(c_.stages[bs]);
          // The memory walk takes the halves one after the other, as the
          // executor runs them (rule 7): the F half's activation is held
          // before the B half frees its own, so the peak can fall between
          // them. The F half's point is placed at its share of the pair's
          // time, F / (F + B).
          const double f_s = c_.stages[s].f, fb_s = f_s + c_.stages[bs].B();
          const double f_end = fb_s > 0 ? ready + (end - ready) * (f_s / fb_s) : ready;
          Compute(r, t, ready, end, MemoryDelta(ActionType::kF, c_.memory[s]), f_end);
          MemoryStep(r, end, MemoryDelta(ActionType::kB, c_.memory[bs]));
          f_end_[k] = end;
          bwd_end_[Key(bs, bmb)] = end;
          i_done_[Key(bs, bmb)] = false;
          if (!lowered_ && s + 1 < p_.num_stages && RankOf(s + 1) != r) WakeProducer(s, mb, kFwd, work);
          if (!lowered_ && bs > 0 && RankOf(bs - 1) != r) WakeProducer(bs, bmb, kBwd, work);
          break;
        }
        case ActionType::kW: {
          if (!i_done_[k])
            return Error(r, "weight-gradient pass before its " + MakeAction(s, ActionType::kI, mb).ToString());
          i_done_[k] = false;  // a second W for the same (stage, microbatch) is an error
          double ready = free_[r];
          Compute(r, t, ready, ready + c_.stages[s].w, MemoryDelta(a.type, c_.memory[s]));
          break;
        }
        case ActionType::kReduceGrad: {
          // Posted when the rank reaches it; runs on the rank's own
          // data-parallel lane (one collective at a time, in list order)
          // while the rank goes on computing.
          const double start = std::max(free_[r], reduce_free_[r]);
          t.start = start;
          t.end = start + c_.stages[s].reduce_grad;
          reduce_free_[r] = t.end;
          // Its gradient buffer is held until the step ends (Finish).
          const int64_t buffer = c_.memory[s].reduce_buffer;
          if (buffer != 0) {
            mem_[r] += buffer;
            held_buffers_[r] += buffer;
            RankResult& rr = result_.per_rank[r];
            rr.peak_memory_bytes = std::max(rr.peak_memory_bytes, mem_[r]);
            rr.memory.push_back({free_[r], mem_[r]});  // allocated when posted
          }
          break;
        }
      }
      ++pos_[r];
    }
    return Status::Ok();
  }

  // A compute from `start` to `end` whose memory change `mem_delta` is
  // recorded at `mem_time` (its end unless given).
  void Compute(int r, ActionTiming& t, double start, double end, int64_t mem_delta, double mem_time = -1) {
    t.start = start;
    t.end = end;
    free_[r] = end;
    RankResult& rr = result_.per_rank[r];
    rr.busy_s += end - start;
    rr.first_compute_start_s = std::min(rr.first_compute_start_s, start);
    rr.last_compute_end_s = std::max(rr.last_compute_end_s, end);
    MemoryStep(r, mem_time < 0 ? end : mem_time, mem_delta);
  }

  // One step of rank r's memory walk (rule 7), a point of its timeline.
  void MemoryStep(int r, double time, int64_t mem_delta) {
    RankResult& rr = result_.per_rank[r];
    mem_[r] += mem_delta;
    rr.peak_memory_bytes = std::max(rr.peak_memory_bytes, mem_[r]);
    rr.memory.push_back({time, mem_[r]});
  }

  StatusOr<SimResult> Finish() {
    std::vector<GridMark> marks;
    std::string why;
    for (int r = 0; r < p_.pp_size; ++r) {
      if (pos_[r] < p_.ranks[r].size()) {
        marks.push_back({r, static_cast<int>(pos_[r])});
        why += "\n  rank " + std::to_string(r) + " is stuck at action " + std::to_string(pos_[r]) + " '" +
               p_.ranks[r][pos_[r]].ToString() + "' waiting for " + Describe(r);
      }
    }
    if (!marks.empty())
      return Status::InvalidArgument("deadlock: no rank can make progress" + why + "\n" + FormatGrid(p_, marks));
    double sum_busy = 0;
    // Rule 11: each rank's optimizer step runs after its last action and its
    // reductions, for the sum of its stages' optimizer seconds (compute).
    std::vector<double> optimizer(p_.pp_size, 0.0), actions_end(p_.pp_size, 0.0);
    for (int s = 0; s < p_.num_stages; ++s) optimizer[p_.stage_to_rank[s]] += c_.stages[s].optimizer;
    for (int r = 0; r < p_.pp_size; ++r) {
      for (const ActionTiming& t : result_.timing[r]) actions_end[r] = std::max(actions_end[r], t.end);
      result_.makespan_s = std::max(result_.makespan_s, actions_end[r]);
      if (optimizer[r] > 0)
        result_.makespan_s = std::max(result_.makespan_s, std::max(actions_end[r], reduce_free_[r]) + optimizer[r]);
    }
    for (int r = 0; r < p_.pp_size; ++r) {
      RankResult& rr = result_.per_rank[r];
      if (held_buffers_[r] != 0) {  // the optimizer step frees the reduction buffers
        mem_[r] -= held_buffers_[r];
        rr.memory.push_back({result_.makespan_s, mem_[r]});
      }
      rr.end_memory_bytes = mem_[r];
      if (rr.first_compute_start_s == std::numeric_limits<double>::infinity()) rr.first_compute_start_s = 0;
      rr.optimizer_s = optimizer[r];
      rr.busy_s += optimizer[r];
      sum_busy += rr.busy_s;
      // A rank's next step needs its reduced gradients and its optimizer step
      // (which waits for its REDUCE_GRADs): they end its step too.
      result_.steady_step_s =
          std::max(result_.steady_step_s,
                   std::max(rr.last_compute_end_s, reduce_free_[r]) + optimizer[r] - rr.first_compute_start_s);
    }
    double total = p_.pp_size * result_.makespan_s;
    result_.bubble_ratio = BubbleRatio(sum_busy, p_.pp_size, result_.makespan_s);
    result_.bubble_overhead = sum_busy > 0 ? (total - sum_busy) / sum_busy : 0.0;
    return std::move(result_);
  }

  const Program& p_;
  const StageCosts& c_;
  const bool lowered_;
  std::vector<double> f_end_, bwd_end_;
  std::vector<bool> i_done_;
  std::vector<int64_t> recv_slot_;  // (channel << 32 | k) per (stage, mb, dir)
  std::vector<int> channel_of_;     // dense (src, dst, dir) -> channel id or -1
  std::vector<std::vector<SentMessage>> sends_;
  std::vector<size_t> recv_count_;
  std::vector<int> channel_dst_;  // channel id -> receiving rank
  std::vector<Blocked> blocked_;  // per rank
  std::vector<size_t> pos_;
  std::vector<double> free_;
  std::vector<double> reduce_free_;    // per rank: when its data-parallel lane is free
  std::vector<int64_t> held_buffers_;  // per rank: reduction buffers held until the step ends
  std::vector<int64_t> mem_;
  SimResult result_;
};

}  // namespace

StatusOr<SimResult> Simulate(const Program& program, const StageCosts& costs) {
  PW_RETURN_IF_ERROR(CheckProgramShape(program));
  if (static_cast<int>(costs.stages.size()) != program.num_stages ||
      static_cast<int>(costs.memory.size()) != program.num_stages)
    return Status::InvalidArgument("costs describe " + std::to_string(costs.stages.size()) + " stages (memory " +
                                   std::to_string(costs.memory.size()) + ") but the program has " +
                                   std::to_string(program.num_stages));
  Engine engine(program, costs);
  return engine.Run();
}

}  // namespace pw
