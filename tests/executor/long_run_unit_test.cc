// Torch-free parts of the long-run features: the measured trace's shape
// (one event per action, flows pair), checkpoint manifests and the resume
// refusals, the wait board. Milliseconds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "executor/checkpoint/checkpoint.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/runtime/measured_trace.h"
#include "executor/runtime/preflight.h"
#include "executor/runtime/straggler.h"
#include "executor/runtime/watchdog.h"
#include "schedules/trace_format.h"
#include "tests/testing/free_port.h"
#include "tests/testing/schedule_util.h"
#include "tests/testing/test_plans.h"

namespace pw::exec {
namespace {

using ::pw::testing::FreePort;

Plan SmallPlan(const std::string& schedule, int pp, int m) {
  PlanSpec spec;
  spec.schedule = schedule;
  spec.pp_size = pp;
  spec.num_microbatches = m;
  spec.model = {{"n_layer", 4}, {"n_embd", 16}, {"n_head", 2}, {"n_positions", 16}};
  StatusOr<Plan> plan = BuildPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return *plan;
}

// The NCCL communicator has one FIFO per rank pair and blocks: its
// pre-flight also checks rule 6b and the pair order, which a plan with a
// SEND_F posted after a SEND_B to the same peer breaks (MPI runs it).
TEST(Preflight, NcclChecksThePairOrder) {
  Plan plan = SmallPlan("zb-v", 2, 4);
  ASSERT_TRUE(PreflightCheck(plan, 2, /*one_fifo_per_pair=*/true).ok());
  ASSERT_TRUE(pw::testing::PostASendFAfterTheNextSendB(&plan.ranks[0]));
  EXPECT_TRUE(PreflightCheck(plan, 2, false).ok()) << "MPI matches by channel";
  StatusOr<CheckedPlan> nccl = PreflightCheck(plan, 2, true);
  ASSERT_FALSE(nccl.ok());
  EXPECT_NE(nccl.status().message().find("for the NCCL communicator"), std::string::npos) << nccl.status().ToString();
}

// A plan made for recomputation or bf16 would not run as predicted: the
// executor keeps every activation and computes in float32.
TEST(Preflight, RefusesRecomputeAndHalfPrecisionPlans) {
  Plan plan = SmallPlan("1f1b", 2, 4);
  ASSERT_TRUE(PreflightCheck(plan, 2).ok());
  plan.training->recompute = Recompute::kFull;
  StatusOr<CheckedPlan> st = PreflightCheck(plan, 2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("'training.recompute' is 'full'"), std::string::npos) << st.status().ToString();
  EXPECT_NE(st.status().message().find("--recompute-granularity none"), std::string::npos);
  plan.training->recompute = Recompute::kNone;
  plan.training->precision = Precision::kMixedBf16;
  st = PreflightCheck(plan, 2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("'training.dtype' is 'bf16'"), std::string::npos) << st.status().ToString();
  EXPECT_NE(st.status().message().find("--dtype fp32"), std::string::npos);
}

// Tensor parallelism: the world must be T x P x D, T must divide the heads
// (and, with sequence parallelism, the sequence length), and SP needs T > 1;
// each refused naming the field and what to do, before any compute.
TEST(Preflight, TensorParallelGridAndSizes) {
  PlanSpec spec;
  spec.schedule = "1f1b";
  spec.pp_size = 2;
  spec.num_microbatches = 4;
  spec.model = {{"n_layer", 4}, {"n_embd", 16}, {"n_head", 4}, {"n_positions", 16}};
  spec.tp_size = 2;
  spec.sequence_parallel = true;
  StatusOr<Plan> made = BuildPlan(spec);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Plan plan = *made;
  ASSERT_TRUE(PreflightCheck(plan, 4).ok());
  StatusOr<CheckedPlan> st = PreflightCheck(plan, 2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.status().message().find("plan is for tp 2 x pp 2 x dp 1 = 4 ranks but 2 were started; run with mpirun -np 4"),
      std::string::npos)
      << st.status().ToString();
  plan.tp_size = 3;  // 4 heads
  st = PreflightCheck(plan, 6);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("--tensor-model-parallel-size 3 does not divide the model's 4 attention heads"),
            std::string::npos)
      << st.status().ToString();
  EXPECT_NE(st.status().message().find("'tp_size'"), std::string::npos) << st.status().ToString();
  plan.tp_size = 1;
  st = PreflightCheck(plan, 2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("'sequence_parallel' is true with tp_size 1"), std::string::npos)
      << st.status().ToString();
}

TEST(MeasuredTrace, EveryActionOnceAndFlowsPair) {
  for (const char* schedule : {"1f1b", "zb-h1", "interleaved-1f1b", "zb-v"}) {
    Plan plan = SmallPlan(schedule, 2, 4);
    Program program = PlanProgram(plan);
    std::map<int64_t, std::multiset<std::string>> flows;
    for (int r = 0; r < plan.pp_size; ++r) {
      std::vector<ActionSpan> spans;
      for (size_t i = 0; i < program.ranks[r].size(); ++i)
        spans.push_back({static_cast<int>(i), 1e-3 * i, 1e-3 * i + 5e-4});
      nlohmann::json events = RankTraceEvents(program, r, spans);
      size_t complete = 0;
      for (const auto& e : events) {
        if (e["ph"] != "X") continue;
        const size_t i = e["args"]["index"].get<size_t>();
        ASSERT_LT(i, program.ranks[r].size()) << schedule;
        EXPECT_EQ(e["name"], program.ranks[r][i].ToString()) << schedule << " rank " << r;
        EXPECT_EQ(e["args"]["action"], e["name"]);
        EXPECT_NEAR(e["dur"].get<double>(), 500.0, 1e-6) << "µs";
        const bool comm = e["cat"] == "comm";
        EXPECT_EQ(e["tid"].get<int>(), comm ? kTraceCommTid : kTraceComputeTid) << e.dump();
        if (comm) flows[e["bind_id"].get<int64_t>()].insert(e.contains("flow_out") ? "out" : "in");
        ++complete;
      }
      EXPECT_EQ(complete, program.ranks[r].size()) << schedule << " rank " << r;
    }
    for (const auto& [id, ends] : flows)
      EXPECT_EQ(ends, (std::multiset<std::string>{"in", "out"})) << schedule << " flow " << id;
  }
}

TEST(Checkpoint, ManifestRoundTripAndRefusals) {
  const std::string root = ::testing::TempDir() + "/pw_ckpt_unit";
  std::filesystem::remove_all(root);
  const std::string dir = CheckpointStepDir(root, 10);
  EXPECT_EQ(dir, root + "/step_000010");
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories(CheckpointStepDir(root, 20));  // incomplete: no manifest
  auto model = ParseModelConfig(nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 16,
      "n_head": 2, "n_positions": 16, "vocab_size": 256})"),
                                "test");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  CheckpointManifest m;
  m.plan_hash = "aaaa";
  m.schedule = "zb-h1";
  m.pp_size = 2;
  m.steps_done = 10;
  m.seed = 7;
  m.dtype = "float32";
  m.batch_rows = 8;
  m.seq_length = 16;
  m.data_position = 80;
  m.model = CheckpointModelJson(*model);
  m.files = {{"embedding.safetensors", "embedding", 100, "0123456789abcdef"}};
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  StatusOr<std::string> resolved = ResolveCheckpointDir(root);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(*resolved, dir) << "the incomplete step_000020 must be skipped";
  StatusOr<CheckpointManifest> back = ReadManifest(dir);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->steps_done, 10);
  EXPECT_EQ(back->files.size(), 1u);
  EXPECT_EQ(back->files[0].digest, "0123456789abcdef");
  EXPECT_EQ(back->schedule, "zb-h1");
  // The plan is not a reason to refuse; model, dtype, seed and batch shape are.
  EXPECT_TRUE(CheckResumable(*back, dir, *model, 7, "float32", 8, 16).ok());
  ModelConfig wider = *model;
  wider.hidden = 32;
  Status other = CheckResumable(*back, dir, wider, 7, "float32", 8, 16);
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("field 'n_embd' is 16 but the plan's model has 32"), std::string::npos)
      << other.message();
  EXPECT_NE(CheckResumable(*back, dir, *model, 8, "float32", 8, 16).message().find("field 'seed'"), std::string::npos);
  EXPECT_NE(CheckResumable(*back, dir, *model, 7, "float64", 8, 16).message().find("field 'dtype'"), std::string::npos);
  EXPECT_NE(CheckResumable(*back, dir, *model, 7, "float32", 12, 16).message().find("global_batch_size is 12"),
            std::string::npos);
  EXPECT_NE(CheckResumable(*back, dir, *model, 7, "float32", 8, 32).message().find("field 'seq_length'"),
            std::string::npos);
  EXPECT_EQ(ReadManifest(CheckpointStepDir(root, 20)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ResolveCheckpointDir(root + "/nope").status().code(), StatusCode::kNotFound);
  // A version 1 manifest (per-rank files) is named as such.
  const std::string old = root + "/old";
  std::filesystem::create_directories(old);
  std::ofstream(old + "/manifest.json") << R"({"format": "pipewright-checkpoint", "version": 1})";
  Status v1 = ReadManifest(old).status();
  EXPECT_NE(v1.message().find("field 'version' is 1"), std::string::npos) << v1.ToString();
  std::filesystem::remove_all(root);
}

// ZeRO-1 manifests: shard entries round-trip with their index, the layer
// file lookup skips them, ManifestShardFilesOf returns them in shard order and
// names a shard the manifest lacks; a shard index out of range is refused.
TEST(Checkpoint, Zero1ShardEntries) {
  const std::string dir = ::testing::TempDir() + "/pw_ckpt_zero1_unit";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto model = ParseModelConfig(nlohmann::json::parse(R"({"model_type": "gpt2", "n_layer": 1, "n_embd": 16,
      "n_head": 2, "n_positions": 16, "vocab_size": 256})"),
                                "test");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  CheckpointManifest m;
  m.dtype = "float64";
  m.model = CheckpointModelJson(*model);
  m.dp_size = 2;
  m.optimizer_shards = 2;
  EXPECT_EQ(CheckpointShardFileName("block.0", 1, 2), "block.0.adamw_shard_1_of_2.safetensors");
  m.files = {{"block.0.safetensors", "block.0", 10, "0000000000000001"},
             {CheckpointShardFileName("block.0", 1, 2), "block.0", 12, "0000000000000003", 1},
             {CheckpointShardFileName("block.0", 0, 2), "block.0", 11, "0000000000000002", 0},
             {"head.safetensors", "head", 13, "0000000000000004"},
             {CheckpointShardFileName("head", 0, 2), "head", 14, "0000000000000005", 0}};
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  StatusOr<CheckpointManifest> back = ReadManifest(dir);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->optimizer_shards, 2);
  ASSERT_EQ(back->files.size(), 5u);
  EXPECT_EQ(back->files[1].shard, 1);
  EXPECT_EQ(back->files[0].shard, -1);
  StatusOr<CheckpointFile> layer = ManifestFileOf(*back, dir, "block.0");
  ASSERT_TRUE(layer.ok());
  EXPECT_EQ(layer->name, "block.0.safetensors");
  StatusOr<std::vector<CheckpointFile>> shards = ManifestShardFilesOf(*back, dir, "block.0");
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  ASSERT_EQ(shards->size(), 2u);
  EXPECT_EQ((*shards)[0].digest, "0000000000000002");
  EXPECT_EQ((*shards)[1].digest, "0000000000000003");
  Status missing = ManifestShardFilesOf(*back, dir, "head").status();
  EXPECT_NE(missing.message().find("no ZeRO-1 optimizer shard 1 of 2 for layer 'head' "
                                   "(head.adamw_shard_1_of_2.safetensors)"),
            std::string::npos)
      << missing.ToString();
  m.files[2].shard = 2;  // >= optimizer_shards
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  Status bad = ReadManifest(dir).status();
  EXPECT_NE(bad.message().find("has shard 2, optimizer_shards is 2"), std::string::npos) << bad.ToString();
  std::filesystem::remove_all(dir);
}

// A layer file against its manifest entry: missing, truncated, corrupt (one
// flipped byte), each named with the file and what was expected.
TEST(Checkpoint, TruncatedOrCorruptFilesAreNamed) {
  const std::string dir = ::testing::TempDir() + "/pw_ckpt_verify";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/block.0.safetensors";
  std::string bytes(4099, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 3);
  std::ofstream(path, std::ios::binary) << bytes;
  StatusOr<std::string> digest = CheckpointFileDigest(path);
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(digest->size(), 16u);
  CheckpointFile entry{"block.0.safetensors", "block.0", 4099, *digest};
  EXPECT_TRUE(VerifyCheckpointFile(dir, entry).ok());
  // Truncated.
  std::filesystem::resize_file(path, 1000);
  Status truncated = VerifyCheckpointFile(dir, entry);
  EXPECT_EQ(truncated.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(truncated.message(), "checkpoint file " + path + " is truncated: 1000 bytes, the manifest says 4099")
      << truncated.message();
  // Same size, one byte flipped.
  bytes[2050] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  Status corrupt = VerifyCheckpointFile(dir, entry);
  EXPECT_NE(corrupt.message().find("checkpoint file " + path + " is corrupt: its digest is "), std::string::npos)
      << corrupt.message();
  EXPECT_NE(corrupt.message().find("the manifest says " + *digest), std::string::npos) << corrupt.message();
  std::filesystem::remove(path);
  EXPECT_EQ(VerifyCheckpointFile(dir, entry).code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(WaitBoard, TruncatesAndTerminates) {
  WaitBoard board;
  EXPECT_STREQ(board.Text(), "");
  board.Set("rank 1, step 2, action 3 '1F2' waiting for 1RECV_F2 (microbatch 2) from rank 0");
  EXPECT_STREQ(board.Text(), "rank 1, step 2, action 3 '1F2' waiting for 1RECV_F2 (microbatch 2) from rank 0");
  board.Set(std::string(2000, 'x'));
  EXPECT_EQ(std::string(board.Text()).size(), WaitBoard::kCapacity - 1);
}

// Ranks as threads of this process, each with its own TcpCommunicator over
// loopback sockets: FIFO per (peer, channel), early arrivals, all-gather.
TEST(TcpCommunicator, RingFifoAndAllGather) {
  const int world = 3, port = FreePort();
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      TcpOptions o;
      o.master_port = port;
      o.watchdog_s = 20;
      auto comm = TcpCommunicator::Create(r, world, o);
      if (!comm.ok()) {
        errors[r] = comm.status().ToString();
        return;
      }
      TcpCommunicator& c = **comm;
      const int next = (r + 1) % world, prev = (r + world - 1) % world;
      // Three messages per channel to the next rank; the receiver posts
      // after a delay on one channel (early arrivals) and at once on the other.
      std::vector<int64_t> out(6), in(6, -1);
      std::vector<RequestId> ids;
      for (int k = 0; k < 3; ++k) {
        out[k] = 100 * r + k;
        out[3 + k] = 1000 * r + k;
        ids.push_back(*c.Isend(next, Channel::kForward, &out[k], sizeof(int64_t)));
        ids.push_back(*c.Isend(next, Channel::kBackward, &out[3 + k], sizeof(int64_t)));
      }
      for (int k = 0; k < 3; ++k) ids.push_back(*c.Irecv(prev, Channel::kBackward, &in[3 + k], sizeof(int64_t)));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (int k = 0; k < 3; ++k) ids.push_back(*c.Irecv(prev, Channel::kForward, &in[k], sizeof(int64_t)));
      for (RequestId id : ids) {
        Status st = c.Wait(id);
        if (!st.ok()) {
          errors[r] = st.ToString();
          return;
        }
      }
      for (int k = 0; k < 3; ++k)
        if (in[k] != 100 * prev + k || in[3 + k] != 1000 * prev + k)
          errors[r] = "rank " + std::to_string(r) + ": message " + std::to_string(k) + " out of order";
      auto all = c.AllGather("r" + std::to_string(r));
      if (!all.ok() || *all != std::vector<std::string>{"r0", "r1", "r2"}) errors[r] = "all-gather";
      if (!c.Barrier().ok()) errors[r] = "barrier";
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Split over TCP (the groups that bootstrap NCCL under torchrun): a 2 x 3
// grid split both ways; each group's AllGather holds its members in key
// order, a group of a group splits again, and the world's collectives still
// work after the groups'. No data-parallel collectives on any of them.
TEST(TcpCommunicator, SplitFormsGroupsOverTheSameSockets) {
  const int world = 6, port = FreePort();
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      TcpOptions o;
      o.master_port = port;
      o.watchdog_s = 20;
      auto comm = TcpCommunicator::Create(r, world, o);
      if (!comm.ok()) {
        errors[r] = comm.status().ToString();
        return;
      }
      TcpCommunicator& c = **comm;
      auto rows = c.Split(r / 3, /*key=*/-r, "row");  // key reverses the order
      auto cols = c.Split(r % 3, r, "column");
      if (!rows.ok() || !cols.ok()) {
        errors[r] = "split";
        return;
      }
      auto row_all = (*rows)->AllGather(std::to_string(r));
      auto col_all = (*cols)->AllGather(std::to_string(r));
      const int base = (r / 3) * 3;
      const std::vector<std::string> want_row = {std::to_string(base + 2), std::to_string(base + 1),
                                                 std::to_string(base)};
      const std::vector<std::string> want_col = {std::to_string(r % 3), std::to_string(r % 3 + 3)};
      if (!row_all.ok() || *row_all != want_row) errors[r] = "row all-gather";
      if (!col_all.ok() || *col_all != want_col) errors[r] = "column all-gather";
      if ((*rows)->rank() != 2 - r % 3 || (*cols)->rank() != r / 3) errors[r] = "group ranks";
      // A group of the row group: its first rank alone, the other two together.
      auto sub = (*rows)->Split((*rows)->rank() == 0 ? 0 : 1, 0, "sub");
      auto sub_all = sub.ok() ? (*sub)->AllGather(std::to_string(r)) : StatusOr<std::vector<std::string>>(sub.status());
      if (!sub_all.ok() || sub_all->size() != ((*rows)->rank() == 0 ? 1u : 2u)) errors[r] = "nested split";
      double x = 1;
      if ((*cols)->IallReduceSum(&x, 1, ElementType::kFloat64).status().code() != StatusCode::kInvalidArgument)
        errors[r] = "a tcp group ran a data-parallel collective";
      auto all = c.AllGather("w" + std::to_string(r));
      if (!all.ok() || all->size() != world || (*all)[5] != "w5") errors[r] = "world all-gather after the groups";
      if (c.data_parallel()) errors[r] = "tcp claims data-parallel collectives";
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// The straggler check (straggler.h): compute against the plan, relative to
// the peers' median; the warm-up step is not counted; a rank must be slow in
// each of `window` consecutive steps (a blip resets it); each rank is
// reported once, with its means over the window; threshold 0 is off.
TEST(Straggler, PersistentlySlowRankIsFoundOnce) {
  const std::vector<double> planned = {1.0, 2.0, 1.0, 2.0};  // ranks 1, 3 carry twice the work
  StragglerOptions so;
  so.threshold = 1.3;
  so.window = 3;
  StragglerDetector d(planned, so);
  // Warm-up: rank 0 very slow, not counted.
  EXPECT_FALSE(d.Add(0, {9.0, 2.0, 1.0, 2.0}, 10.0));
  // Proportional to the plan (+ noise below the threshold): nobody.
  EXPECT_FALSE(d.Add(1, {1.1, 2.0, 0.9, 2.4}, 3.0));
  // Rank 3 at 2x its plan (x2 its peers' median 1.0) in steps 2, 3, a blip
  // back to normal in 4, then steps 5, 6, 7.
  EXPECT_FALSE(d.Add(2, {1.0, 2.0, 1.0, 4.0}, 5.0));
  EXPECT_FALSE(d.Add(3, {1.0, 2.0, 1.0, 4.0}, 5.0));
  EXPECT_FALSE(d.Add(4, {1.0, 2.0, 1.0, 2.0}, 3.0));
  EXPECT_FALSE(d.Add(5, {1.0, 2.0, 1.0, 4.0}, 5.0));
  EXPECT_FALSE(d.Add(6, {1.0, 2.0, 1.0, 4.0}, 5.0));
  std::optional<StragglerReport> r = d.Add(7, {1.0, 2.0, 1.0, 4.0}, 5.0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->first_step, 6);
  EXPECT_EQ(r->last_step, 8);
  EXPECT_DOUBLE_EQ(r->compute_s, 4.0);
  EXPECT_DOUBLE_EQ(r->planned_s, 2.0);
  EXPECT_NEAR(r->slowdown, 2.0, 1e-12);
  EXPECT_NEAR(r->share, 0.8, 1e-12);
  EXPECT_FALSE(d.Add(8, {1.0, 2.0, 1.0, 4.0}, 5.0)) << "reported once";
  EXPECT_EQ(d.found().size(), 1u);
  const std::string text = DescribeStraggler(*r, "node7", 1.3);
  for (const char* want :
       {"rank 3 on node7:", "4 s per step vs 2 s planned", "x2.00 its peers'", "80 % of the step", "steps 6-8"})
    EXPECT_NE(text.find(want), std::string::npos) << want << " not in: " << text;
  // Mean ratios over the 8 counted steps: rank 3 at (1.2 + 2+2+1+2+2+2+2) / 8.
  EXPECT_NEAR(d.MeanRatios()[3], (1.2 + 2 * 6 + 1) / 8, 1e-12);
  // Off.
  so.threshold = 0;
  StragglerDetector off(planned, so);
  for (int step = 0; step < 10; ++step) EXPECT_FALSE(off.Add(step, {1.0, 2.0, 1.0, 40.0}, 41.0));
}

// The plan's compute per world rank: the simulator's busy seconds of its
// pipeline rank, the same for every replica (rank g = p * D + d).
TEST(Straggler, PlannedComputeFollowsThePipelineRank) {
  PlanSpec spec;
  spec.pp_size = 2;
  spec.dp_size = 2;
  spec.model = {{"model_type", "gpt2"}, {"n_layer", 2}, {"n_embd", 16}, {"n_head", 2}, {"n_positions", 16}};
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  StatusOr<std::vector<double>> planned = PlannedComputeSeconds(*plan);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  ASSERT_EQ(planned->size(), 4u);
  for (double s : *planned) EXPECT_GT(s, 0.0);
  EXPECT_EQ((*planned)[0], (*planned)[1]) << "replicas of pipeline rank 0";
  EXPECT_EQ((*planned)[2], (*planned)[3]) << "replicas of pipeline rank 1";
}

// Polls Test(id) until it returns true or an error, for at most 20 s.
StatusOr<bool> TestUntilDone(Communicator& c, RequestId id) {
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    StatusOr<bool> done = c.Test(id);
    if (!done.ok() || *done) return done;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Test() over TCP: false while the message has not arrived (the sender posts
// only after a barrier that follows the first test), then true with the data
// there; a consumed id is unknown; a size mismatch is Wait's CommError; a
// receive pending when its peer closed is the lost-connection CommError.
TEST(TcpCommunicator, TestCompletesLikeWait) {
  const int port = FreePort();
  std::vector<std::string> errors(2);
  std::thread sender([&] {
    TcpOptions o;
    o.master_port = port;
    auto comm = TcpCommunicator::Create(0, 2, o);
    if (!comm.ok()) {
      errors[0] = comm.status().ToString();
      return;
    }
    TcpCommunicator& c = **comm;
    if (!c.Barrier().ok()) {
      errors[0] = "barrier";
      return;
    }
    int64_t x = 42, y = 7;
    RequestId a = *c.Isend(1, Channel::kForward, &x, sizeof(x));
    RequestId b = *c.Isend(1, Channel::kBackward, &y, sizeof(y));
    for (RequestId id : {a, b}) {
      StatusOr<bool> done = TestUntilDone(c, id);
      if (!done.ok() || !*done) errors[0] = "send not completed: " + done.status().ToString();
    }
    if (c.Test(a).status().code() != StatusCode::kInternal) errors[0] = "consumed send id still known";
    if (!c.Barrier().ok()) errors[0] = "barrier 2";
    // Leaves: rank 1's third receive sees the connection close.
  });
  TcpOptions o;
  o.master_port = port;
  auto comm = TcpCommunicator::Create(1, 2, o);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  TcpCommunicator& c = **comm;
  int64_t x = -1, y[2] = {-1, -1}, z = -1;
  RequestId rx = *c.Irecv(0, Channel::kForward, &x, sizeof(x));
  RequestId ry = *c.Irecv(0, Channel::kBackward, y, sizeof(y));  // 16 bytes posted, 8 sent
  StatusOr<bool> first = c.Test(rx);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(*first) << "rank 0 sends only after the barrier";
  ASSERT_TRUE(c.Barrier().ok());
  StatusOr<bool> done = TestUntilDone(c, rx);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(*done);
  EXPECT_EQ(x, 42);
  EXPECT_EQ(c.Test(rx).status().code(), StatusCode::kInternal);
  done = TestUntilDone(c, ry);
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.status().message().find("receive from rank 0: got 8 bytes, expected 16"), std::string::npos)
      << done.status().ToString();
  RequestId rz = *c.Irecv(0, Channel::kForward, &z, sizeof(z));
  ASSERT_TRUE(c.Barrier().ok());
  sender.join();
  done = TestUntilDone(c, rz);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.status().code(), StatusCode::kCommError);
  EXPECT_NE(done.status().message().find("receive from rank 0: rank 0 closed the connection"), std::string::npos)
      << done.status().ToString();
  EXPECT_EQ(errors[0], "");
}

// Rank 0 of a 2-rank job whose rank 1 never starts: the rendezvous gives up
// after the connect timeout instead of waiting in accept() forever.
TEST(TcpCommunicator, RendezvousTimesOutWhenARankNeverStarts) {
  TcpOptions o;
  o.master_port = FreePort();
  o.connect_timeout_s = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  auto comm = TcpCommunicator::Create(0, 2, o);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("connect timeout"), std::string::npos) << comm.status().ToString();
  EXPECT_NE(comm.status().message().find("0 of 1 ranks connected"), std::string::npos) << comm.status().ToString();
  EXPECT_LT(waited, 10.0);
}

// A peer that never sends: the watchdog turns the wait into CommError.
TEST(TcpCommunicator, WatchdogNamesThePeer) {
  const int port = FreePort();
  Status got;
  std::thread waiter([&] {
    TcpOptions o;
    o.master_port = port;
    o.watchdog_s = 0.5;
    auto comm = TcpCommunicator::Create(0, 2, o);
    ASSERT_TRUE(comm.ok()) << comm.status().ToString();
    int64_t x = 0;
    RequestId id = *(*comm)->Irecv(1, Channel::kForward, &x, sizeof(x));
    got = (*comm)->Wait(id);
    Status ignored = (*comm)->Barrier();
    (void)ignored;
  });
  TcpOptions o;
  o.master_port = port;
  auto silent = TcpCommunicator::Create(1, 2, o);
  ASSERT_TRUE(silent.ok()) << silent.status().ToString();
  Status ignored = (*silent)->Barrier();
  (void)ignored;
  waiter.join();
  EXPECT_EQ(got.code(), StatusCode::kCommError);
  EXPECT_NE(got.message().find("receive from rank 1: no progress for 0.5 s"), std::string::npos) << got.message();
}

}  // namespace
}  // namespace pw::exec
