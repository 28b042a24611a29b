// The interpreter's comm logic with a FakeBackend (one double per message)
// and the loopback communicator: every schedule family, several P and m, in
// milliseconds. Also the data loader.
#include "executor/runtime/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <tuple>

#include "executor/comm/loopback_communicator.h"
#include "executor/data/data.h"
#include "models/torch/executor_model.h"
#include "schedules/lower.h"
#include "schedules/registry.h"
#include "schedules/validate.h"

namespace pw::exec {
namespace {

// Stage s adds 1 in forward (stage 0 reads mb+1); backward doubles the
// gradient (the last stage starts from 1). So the input of F(s, mb) must be
// mb+1+s and the gradient received by I/B(s, mb) must be 2^(S-1-s).
// Sends: SendCompleted must come once per SEND, after its SendBuffer and
// before EndStep; it poisons the sent value (as freeing a tensor would), and
// records after how many compute actions of the step it came.
class FakeBackend : public StageBackend {
 public:
  FakeBackend(const Program& p, int rank) : p_(p), rank_(rank) {}
  using SendKey = std::tuple<int, int, int>;  // (type, stage, mb)
  // Compute actions run before each send's completion, in the last step.
  const std::map<SendKey, int>& completed_after() const { return last_completed_after_; }
  Status Forward(int s, int mb) override {
    ++computes_;
    double x;
    if (s == 0)
      x = mb + 1;
    else if (p_.stage_to_rank[s - 1] == rank_)
      x = st_[{s - 1, mb}].out;
    else
      x = st_[{s, mb}].recv_in;
    if (x != mb + 1 + s) return Status::ComputeError("F input " + std::to_string(x));
    st_[{s, mb}].out = x + 1;
    st_[{s, mb}].f = true;
    return Status::Ok();
  }
  Status Backward(int s, int mb, bool input_only) override {
    ++computes_;
    auto& st = st_[{s, mb}];
    if (!st.f) return Status::ComputeError("backward before F");
    double g;
    if (s == p_.num_stages - 1)
      g = 1;
    else if (p_.stage_to_rank[s + 1] == rank_)
      g = st_[{s + 1, mb}].grad_in;
    else
      g = st.recv_grad;
    if (g != std::pow(2.0, p_.num_stages - 1 - s)) return Status::ComputeError("gradient " + std::to_string(g));
    st.grad_in = 2 * g;
    st.i = true;
    if (!input_only) st.w = true;
    return Status::Ok();
  }
  Status BackwardWeight(int s, int mb) override {
    ++computes_;
    auto& st = st_[{s, mb}];
    if (!st.i || st.w) return Status::ComputeError("W without I, or twice");
    st.w = true;
    return Status::Ok();
  }
  StatusOr<MessageBuffer> SendBuffer(ActionType t, int s, int mb) override {
    auto& st = st_[{s, mb}];
    if (!posted_.insert({static_cast<int>(t), s, mb}).second) return Status::Internal("SendBuffer twice");
    return MessageBuffer{t == ActionType::kSendF ? &st.out : &st.grad_in, sizeof(double)};
  }
  void SendCompleted(ActionType t, int s, int mb) override {
    const SendKey key{static_cast<int>(t), s, mb};
    if (posted_.count(key) == 0 || completed_after_.count(key) > 0) {
      send_error_ = "SendCompleted(" + MakeAction(s, t, mb).ToString() + ") before its SendBuffer, or twice";
      return;
    }
    completed_after_[key] = computes_;
    auto& st = st_[{s, mb}];
    (t == ActionType::kSendF ? st.out : st.grad_in) = -999;  // the buffer is gone
  }
  StatusOr<MessageBuffer> RecvBuffer(ActionType t, int s, int mb) override {
    auto& st = st_[{s, mb}];
    return MessageBuffer{t == ActionType::kRecvF ? &st.recv_in : &st.recv_grad, sizeof(double)};
  }
  Status EndStep() override {
    for (auto& [k, st] : st_)
      if (!st.w) return Status::ComputeError("weight gradient missing");
    if (!send_error_.empty()) return Status::Internal(send_error_);
    for (const SendKey& key : posted_)
      if (completed_after_.count(key) == 0)
        return Status::Internal(
            "EndStep before SendCompleted(" +
            MakeAction(std::get<1>(key), static_cast<ActionType>(std::get<0>(key)), std::get<2>(key)).ToString() + ")");
    st_.clear();
    posted_.clear();
    last_completed_after_ = std::move(completed_after_);
    completed_after_.clear();
    computes_ = 0;
    return Status::Ok();
  }

 private:
  struct St {
    double out = 0, grad_in = 0, recv_in = -1, recv_grad = -1;
    bool f = false, i = false, w = false;
  };
  const Program& p_;
  int rank_;
  std::map<std::pair<int, int>, St> st_;
  std::set<SendKey> posted_;
  std::map<SendKey, int> completed_after_, last_completed_after_;
  int computes_ = 0;
  std::string send_error_;
};

std::vector<Status> RunAll(const Program& program, double timeout_s = 10.0) {
  auto hub = std::make_shared<LoopbackHub>(program.pp_size, timeout_s);
  std::vector<Status> out(program.pp_size);
  std::vector<std::thread> threads;
  for (int r = 0; r < program.pp_size; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      FakeBackend backend(program, r);
      for (int step = 0; step < 2 && out[r].ok(); ++step) out[r] = RunRankStep(program, step, comm, backend).status();
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(InterpreterTest, EveryFamilyCompletesWithCorrectDataFlow) {
  for (const std::string& family : ScheduleNames()) {
    for (int p : {1, 2, 3, 4}) {
      for (int m : {1, p + 1, 2 * p}) {
        ScheduleRequest req;
        req.schedule = family;
        req.pp_size = p;
        req.num_microbatches = m;
        StatusOr<Program> compute = GenerateSchedule(req);
        ASSERT_TRUE(compute.ok()) << family << " P=" << p << " m=" << m << ": " << compute.status().ToString();
        StatusOr<Program> lowered = AddSendRecv(*compute, UniformCosts(compute->num_stages));
        ASSERT_TRUE(lowered.ok()) << family << " P=" << p << " m=" << m << ": " << lowered.status().ToString();
        std::vector<Status> st = RunAll(*lowered);
        for (int r = 0; r < p; ++r)
          ASSERT_TRUE(st[r].ok()) << family << " P=" << p << " m=" << m << " rank " << r << ": " << st[r].ToString();
      }
    }
  }
}

TEST(InterpreterTest, ComputeBeforeReceiveIsAnErrorNamingTheAction) {
  ScheduleRequest req;
  req.schedule = "1f1b";
  req.pp_size = 2;
  req.num_microbatches = 2;
  StatusOr<Program> compute = GenerateSchedule(req);
  ASSERT_TRUE(compute.ok());
  StatusOr<Program> lowered = AddSendRecv(*compute, UniformCosts(2));
  ASSERT_TRUE(lowered.ok());
  Program bad = *lowered;
  auto& r1 = bad.ranks[1];
  for (size_t i = 0; i < r1.size(); ++i)
    if (r1[i].ToString() == "1RECV_F0") {
      r1.erase(r1.begin() + static_cast<long>(i));
      break;
    }
  std::vector<Status> st = RunAll(bad, /*timeout_s=*/0.5);  // rank 0 then waits in vain
  EXPECT_FALSE(st[1].ok());
  EXPECT_NE(st[1].message().find("'1F0'"), std::string::npos) << st[1].ToString();
  EXPECT_NE(st[1].message().find("before receiving its input"), std::string::npos) << st[1].ToString();
}

TEST(DataTest, DeterministicShiftedByOne) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + i % 26);
  auto a = TextDataset::FromBytes(text, 8, 7);
  auto b = TextDataset::FromBytes(text, 8, 7);
  auto c = TextDataset::FromBytes(text, 8, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  TokenBatch x = a->Batch(3, 4), y = b->Batch(3, 4), z = c->Batch(3, 4);
  EXPECT_EQ(x.inputs, y.inputs);
  EXPECT_NE(x.inputs, z.inputs);
  for (int r = 0; r < 4; ++r)
    for (int t = 0; t + 1 < 8; ++t) EXPECT_EQ(x.targets[r * 8 + t], x.inputs[r * 8 + t + 1]);
  EXPECT_FALSE(TextDataset::FromBytes("short", 8, 1).ok());
}

}  // namespace
}  // namespace pw::exec

namespace pw::exec {
namespace {

// Loopback underneath; checks the interpreter's batching contract that NCCL
// groups rely on: every post inside a batch, no nesting, no Wait while a
// batch is open (a group's work is enqueued only when it closes).
class BatchCheckingCommunicator : public LoopbackCommunicator {
 public:
  using LoopbackCommunicator::LoopbackCommunicator;
  Status BeginBatch() override {
    if (open_) return Status::Internal("nested batch");
    open_ = true;
    ++batches_;
    return Status::Ok();
  }
  Status EndBatch() override {
    if (!open_) return Status::Internal("EndBatch without BeginBatch");
    open_ = false;
    return Status::Ok();
  }
  StatusOr<RequestId> Isend(int peer, Channel c, const void* d, int64_t b) override {
    if (!open_) return Status::Internal("Isend outside a batch");
    return LoopbackCommunicator::Isend(peer, c, d, b);
  }
  StatusOr<RequestId> Irecv(int peer, Channel c, void* d, int64_t b) override {
    if (!open_) return Status::Internal("Irecv outside a batch");
    return LoopbackCommunicator::Irecv(peer, c, d, b);
  }
  Status Wait(RequestId id) override {
    if (open_) return Status::Internal("Wait while a batch is open");
    return LoopbackCommunicator::Wait(id);
  }
  int batches() const { return batches_; }

 private:
  bool open_ = false;
  int batches_ = 0;
};

TEST(InterpreterTest, ConsecutiveSendsAndReceivesArePostedAsOneBatch) {
  for (const char* family : {"1f1b", "interleaved-1f1b", "zb-v"}) {
    ScheduleRequest req;
    req.schedule = family;
    req.pp_size = 4;
    req.num_microbatches = 8;
    StatusOr<Program> compute = GenerateSchedule(req);
    ASSERT_TRUE(compute.ok());
    StatusOr<Program> lowered = AddSendRecv(*compute, UniformCosts(compute->num_stages));
    ASSERT_TRUE(lowered.ok());
    auto hub = std::make_shared<LoopbackHub>(4, 10.0);
    std::vector<Status> out(4);
    std::vector<int> batches(4), runs(4);
    std::vector<std::thread> threads;
    for (int r = 0; r < 4; ++r)
      threads.emplace_back([&, r] {
        BatchCheckingCommunicator comm(hub, r);
        FakeBackend backend(*lowered, r);
        out[r] = RunRankStep(*lowered, 0, comm, backend).status();
        batches[r] = comm.batches();
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < 4; ++r) {
      const auto& list = lowered->ranks[r];
      for (size_t i = 0; i < list.size(); ++i) runs[r] += IsComm(list[i].type) && (i == 0 || !IsComm(list[i - 1].type));
      ASSERT_TRUE(out[r].ok()) << family << " rank " << r << ": " << out[r].ToString();
      EXPECT_EQ(batches[r], runs[r]) << family << " rank " << r;
    }
  }
}

Program Lowered(const std::string& family, int p, int m) {
  ScheduleRequest req;
  req.schedule = family;
  req.pp_size = p;
  req.num_microbatches = m;
  StatusOr<Program> compute = GenerateSchedule(req);
  EXPECT_TRUE(compute.ok()) << family << ": " << compute.status().ToString();
  StatusOr<Program> lowered = AddSendRecv(*compute, UniformCosts(compute->num_stages));
  EXPECT_TRUE(lowered.ok()) << family << ": " << lowered.status().ToString();
  return *lowered;
}

// Loopback whose sends are never seen complete by Test (a slow link): they
// are all waited at the end of the step.
class SlowSendCommunicator : public LoopbackCommunicator {
 public:
  using LoopbackCommunicator::LoopbackCommunicator;
  StatusOr<bool> Test(RequestId) override { return false; }
};

// Runs two steps of `program` on loopback ranks (communicator type Comm);
// returns each rank's status, the last step's send completions and timing.
template <typename Comm>
std::vector<Status> RunTwoSteps(const Program& program, std::vector<std::map<FakeBackend::SendKey, int>>* completed,
                                std::vector<RankStepTiming>* timing = nullptr) {
  auto hub = std::make_shared<LoopbackHub>(program.pp_size, 10.0);
  std::vector<Status> out(program.pp_size);
  completed->assign(program.pp_size, {});
  if (timing) timing->assign(program.pp_size, {});
  std::vector<std::thread> threads;
  for (int r = 0; r < program.pp_size; ++r)
    threads.emplace_back([&, r] {
      Comm comm(hub, r);
      FakeBackend backend(program, r);
      StepHooks hooks;
      hooks.record_spans = true;
      for (int step = 0; step < 2 && out[r].ok(); ++step) {
        StatusOr<RankStepTiming> t = RunRankStep(program, step, comm, backend, &hooks);
        out[r] = t.status();
        if (t.ok() && timing) (*timing)[r] = *t;
      }
      (*completed)[r] = backend.completed_after();
    });
  for (auto& t : threads) t.join();
  return out;
}

// Loopback sends complete at post (eager copy), so the interpreter must see
// each one complete right after the first compute action that follows it
// (or at the end of the step when none follows), and tell the backend once.
// The SEND's span ends there: after that compute's end.
TEST(InterpreterTest, SendCompletedOnceAtTheFirstComputeAfterTheSend) {
  for (const char* family : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v"}) {
    const Program program = Lowered(family, 4, 8);
    std::vector<std::map<FakeBackend::SendKey, int>> completed;
    std::vector<RankStepTiming> timing;
    std::vector<Status> st = RunTwoSteps<LoopbackCommunicator>(program, &completed, &timing);
    for (int r = 0; r < 4; ++r) {
      ASSERT_TRUE(st[r].ok()) << family << " rank " << r << ": " << st[r].ToString();
      const auto& list = program.ranks[r];
      std::map<FakeBackend::SendKey, int> want;
      int sends = 0;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i].type != ActionType::kSendF && list[i].type != ActionType::kSendB) continue;
        ++sends;
        size_t next = i + 1;
        while (next < list.size() && IsComm(list[next].type)) ++next;
        int before = 0;  // computes up to and including `next`
        for (size_t j = 0; j < list.size() && j <= next; ++j) before += IsComm(list[j].type) ? 0 : 1;
        want[{static_cast<int>(list[i].type), list[i].stage, list[i].microbatch}] = before;
        if (next < list.size()) {
          EXPECT_GE(timing[r].spans[i].end_s, timing[r].spans[next].end_s)
              << family << " rank " << r << " " << list[i].ToString() << ": completion observed after "
              << list[next].ToString();
        }
      }
      EXPECT_EQ(static_cast<int>(completed[r].size()), sends) << family << " rank " << r;
      EXPECT_EQ(completed[r], want) << family << " rank " << r;
    }
  }
}

TEST(InterpreterTest, SendsNotSeenCompleteAreWaitedAtTheEndOfTheStep) {
  const Program program = Lowered("1f1b", 3, 6);
  std::vector<std::map<FakeBackend::SendKey, int>> completed;
  std::vector<Status> st = RunTwoSteps<SlowSendCommunicator>(program, &completed);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r].ToString();
    int computes = 0, sends = 0;
    for (const Action& a : program.ranks[r]) {
      computes += IsComm(a.type) ? 0 : 1;
      sends += a.type == ActionType::kSendF || a.type == ActionType::kSendB;
    }
    ASSERT_EQ(static_cast<int>(completed[r].size()), sends) << "rank " << r;
    for (const auto& [key, after] : completed[r]) EXPECT_EQ(after, computes) << "rank " << r;
  }
}

// A send that fails when tested is reported like a failed wait, naming the
// SEND action and its peer.
class FailingTestCommunicator : public LoopbackCommunicator {
 public:
  using LoopbackCommunicator::LoopbackCommunicator;
  StatusOr<bool> Test(RequestId) override { return Status::CommError("link down"); }
};

TEST(InterpreterTest, FailedSendTestNamesTheSend) {
  const Program program = Lowered("1f1b", 2, 2);  // rank 0: 0F0 0SEND_F0 0F1 ...
  auto hub = std::make_shared<LoopbackHub>(2, 1.0);
  FailingTestCommunicator comm(hub, 0);
  FakeBackend backend(program, 0);
  Status st = RunRankStep(program, 0, comm, backend).status();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kCommError);
  EXPECT_NE(st.message().find("action 1 '0SEND_F0': waiting for rank 1 to receive microbatch 0: link down"),
            std::string::npos)
      << st.ToString();
}

// Test() on loopback: a send is complete at once; a receive once its message
// is in the channel, with the data copied and the byte count checked; a
// consumed id is unknown afterwards.
TEST(LoopbackCommunicatorTest, TestCompletesLikeWait) {
  auto hub = std::make_shared<LoopbackHub>(2, 1.0);
  LoopbackCommunicator a(hub, 0), b(hub, 1);
  double out = 3.5, in = 0, in2[2] = {0, 0};
  StatusOr<RequestId> recv = b.Irecv(0, Channel::kForward, &in, sizeof(in));
  ASSERT_TRUE(recv.ok());
  StatusOr<bool> t = b.Test(*recv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(*t) << "nothing was sent yet";
  EXPECT_EQ(in, 0);
  StatusOr<RequestId> send = a.Isend(1, Channel::kForward, &out, sizeof(out));
  ASSERT_TRUE(send.ok());
  t = a.Test(*send);
  ASSERT_TRUE(t.ok() && *t) << "eager send";
  EXPECT_EQ(a.Test(*send).status().code(), StatusCode::kInternal) << "consumed";
  EXPECT_EQ(a.Wait(*send).code(), StatusCode::kInternal) << "consumed";
  t = b.Test(*recv);
  ASSERT_TRUE(t.ok() && *t) << t.status().ToString();
  EXPECT_EQ(in, 3.5);
  EXPECT_EQ(b.Test(*recv).status().code(), StatusCode::kInternal);
  // Another channel is independent; a size mismatch is the error Wait gives.
  StatusOr<RequestId> back = b.Irecv(0, Channel::kBackward, in2, sizeof(in2));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(*b.Test(*back));
  ASSERT_TRUE(a.Isend(1, Channel::kBackward, &out, sizeof(out)).ok());
  t = b.Test(*back);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kCommError);
  EXPECT_NE(t.status().message().find("has 8 bytes, expected 16"), std::string::npos) << t.status().ToString();
}

}  // namespace
}  // namespace pw::exec

namespace pw::exec {
namespace {

// Every family the registry knows is built from the one model vocabulary;
// what the executor does not build is refused naming the field (here GPT-2
// with grouped-query attention, which a hand-written plan section could say).
TEST(ExecutorModelTest, RegistryFamiliesBuildOthersAreRefusedNamingTheField) {
  for (const char* text :
       {R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 8, "n_head": 2, "n_positions": 16, "vocab_size": 256,
            "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0})",
        R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
            "intermediate_size": 16, "max_position_embeddings": 16, "vocab_size": 256})",
        R"({"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
            "head_dim": 6, "intermediate_size": 16, "max_position_embeddings": 16, "vocab_size": 256})"}) {
    auto m = ParseModelConfig(nlohmann::json::parse(text), "cfg");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_TRUE(models::CheckExecutorModel(*m, "cfg").ok()) << text;
  }
  auto gpt = ParseModelConfig(
      nlohmann::json::parse(
          R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 8, "n_head": 2, "n_positions": 16, "vocab_size": 256})"),
      "cfg");
  ASSERT_TRUE(gpt.ok());
  Status st = models::CheckExecutorModel(*gpt, "cfg");  // HF's default dropout 0.1
  EXPECT_NE(st.message().find("cfg: field 'dropout' is true"), std::string::npos) << st.message();
  ModelConfig gqa = *gpt;
  gqa.dropout = false;
  gqa.num_kv_heads = 1;
  st = models::CheckExecutorModel(gqa, "cfg");
  EXPECT_NE(st.message().find("cfg: field 'num_key_value_heads' (1) differs"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace pw::exec
