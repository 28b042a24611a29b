// Data parallelism x pipeline parallelism under real mpirun (one process per
// rank, MpiCommunicator split into pipeline and data-parallel groups):
//   mpirun --allow-run-as-root --oversubscribe -np W executor_mpi_dp_test
// For every grid dp x pp = W this binary knows (W=2: 2x1; W=3: 1x3 and 3x1;
// W=4: 2x2; W=6: 3x2), for 1F1B, ZB-H1 and Interleaved, plain / ZeRO-1 / clipping,
// fp64: the loss of every step and every parameter after 3 AdamW steps equal
// a single process trained on the same global batches (each rank runs the
// reference itself and checks its own stages), within 1e-10 relative; with
// plain data parallelism also every gradient after step 1. Rank 0 prints the
// worst differences over all ranks. Also: the communicator's collectives
// against closed forms, the refusal of a plan for another world size, and
// (W=6) ZeRO-1 checkpoints resumed under another dp, plan and sharding.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "executor/checkpoint/checkpoint.h"
#include "executor/comm/agree.h"
#include "executor/comm/mpi_communicator.h"
#include "plan/replica_batch.h"
#include "schedules/registry.h"
#include "tests/executor/executor_test_util.h"
#include "tests/executor/mpi_test_main.h"

namespace pw::exec::testing {

const double kMpiTestWatchdogS = 120;

namespace {

constexpr double kTolerance = 1e-10;

// Rows [d*rows, (d+1)*rows) of `global` (the contract's replica slice).
TokenBatch Slice(const TokenBatch& global, int d, int rows) {
  TokenBatch b;
  b.rows = rows;
  b.seq = global.seq;
  const size_t first = static_cast<size_t>(d) * rows * global.seq, n = static_cast<size_t>(rows) * global.seq;
  b.inputs.assign(global.inputs.begin() + first, global.inputs.begin() + first + n);
  b.targets.assign(global.targets.begin() + first, global.targets.begin() + first + n);
  return b;
}

struct Grid {
  int dp, pp;
};

std::vector<Grid> GridsFor(int world) {
  switch (world) {
    case 2:
      return {{2, 1}};
    case 3:
      return {{1, 3}, {3, 1}};
    case 4:
      return {{2, 2}};
    case 6:
      return {{3, 2}};
    default:
      return {};
  }
}

enum class Variant { kPlain, kZero1, kClip };
const char* VariantName(Variant v) { return v == Variant::kPlain ? "plain" : v == Variant::kZero1 ? "zero1" : "clip"; }

// Runs one case on every rank and checks it (collective: every rank calls
// it with the same arguments).
void RunCase(const std::string& schedule, Grid g, Variant variant, int m) {
  const int world = g_comm->size();
  ASSERT_EQ(g.dp * g.pp, world);
  PlanSpec spec;
  spec.schedule = schedule;
  spec.pp_size = g.pp;
  spec.num_microbatches = m;
  spec.model = TinyModel(4);  // 6 layers: embedding, 4 blocks, head
  spec.seq_length = 8;
  spec.micro_batch_size = 2;
  spec.bytes_per_element = 8;
  spec.dp_size = g.dp;
  spec.distributed_optimizer = variant == Variant::kZero1 && g.dp > 1;
  // A threshold below the gradient norm of these batches (checked below), so
  // that clipping does scale every step.
  const double clip = 0.05;
  if (variant == Variant::kClip) spec.clip_grad_norm = clip;
  char label[128];
  std::snprintf(label, sizeof label, "%s dp=%d x pp=%d m=%d %s", schedule.c_str(), g.dp, g.pp, m, VariantName(variant));
  const std::string name = label;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << name << ": cannot build the plan: " << plan.status().ToString();
  StatusOr<ReplicaBatch> shape = ReadReplicaBatch(*plan);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  const int R = shape->rows;
  std::vector<TokenBatch> global;
  for (int i = 0; i < 3; ++i) global.push_back(RandomBatch(g.dp * R, 8, 300 + i));

  EngineOptions options = Fp64Options();
  options.clip_grad_norm = variant == Variant::kClip ? clip : 0.0;
  Status status;
  Diff grads, params;
  double worst_loss = 0.0, min_norm = INFINITY;
  std::vector<double> losses;
  {
    StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(*plan, *g_comm, options);
    ASSERT_TRUE(engine.ok()) << name << ": " << engine.status().ToString();
    Engine& e = **engine;
    EXPECT_EQ(e.dp_size(), g.dp);
    EXPECT_EQ(e.world_rank(), e.rank() * g.dp + e.dp_rank()) << "rank order of docs/DATA_PARALLEL.md";
    EXPECT_EQ(e.distributed_optimizer(), spec.distributed_optimizer);
    // The reference: one process, one stage, the whole global batch.
    std::vector<double> ref_losses;
    std::vector<NamedValues> ref_grads, ref_params;
    {
      auto model = ReferenceModel::Create(*plan->model, options);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      for (const TokenBatch& b : global) {
        StatusOr<double> l = (*model)->Step(b);
        ASSERT_TRUE(l.ok()) << l.status().ToString();
        ref_losses.push_back(*l);
        if (ref_grads.empty()) ref_grads = (*model)->Gradients();
      }
      ref_params = (*model)->Parameters();
    }
    for (int i = 0; i < 3; ++i) {
      StatusOr<StepReport> rep = e.Step(Slice(global[i], e.dp_rank(), R));
      ASSERT_TRUE(rep.ok()) << name << " world rank " << g_comm->rank() << ": " << rep.status().ToString();
      losses.push_back(rep->loss);
      worst_loss = std::max(worst_loss, std::fabs(rep->loss - ref_losses[i]) / std::fabs(ref_losses[i]));
      if (variant == Variant::kClip) min_norm = std::min(min_norm, rep->grad_norm);
      if (i == 0 && variant != Variant::kZero1) grads = WorstDiff(e.Gradients(), ref_grads);
    }
    params = WorstDiff(e.Parameters(), ref_params);
  }
  auto all = AllGatherDoubles(*g_comm, {grads.rel, params.rel, worst_loss});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  double wg = 0, wp = 0, wl = 0;
  for (const auto& v : *all) {
    wg = std::max(wg, v[0]);
    wp = std::max(wp, v[1]);
    wl = std::max(wl, v[2]);
  }
  if (g_comm->rank() == 0) {
    // ZeRO-1 leaves each rank's own (unreduced) gradients in .grad: only
    // the loss and the parameters compare.
    char grad_text[32] = "n/a";
    if (variant != Variant::kZero1) std::snprintf(grad_text, sizeof grad_text, "%.2e", wg);
    std::printf("[ dp       ] %-40s loss %.12f worst rel: loss %.2e grad %s param %.2e", name.c_str(), losses.back(),
                wl, grad_text, wp);
    if (variant == Variant::kClip) std::printf(" (norm >= %.3f, clip %.2f)", min_norm, clip);
    std::printf("\n");
    std::fflush(stdout);
  }
  EXPECT_LE(worst_loss, kTolerance) << name << ": loss";
  EXPECT_LE(grads.rel, kTolerance) << name << " world rank " << g_comm->rank()
                                   << ": gradients after step 1: " << Describe(grads);
  EXPECT_LE(params.rel, kTolerance) << name << " world rank " << g_comm->rank()
                                    << ": parameters after 3 steps: " << Describe(params);
  if (variant == Variant::kClip) {
    EXPECT_GT(min_norm, clip) << name << ": clipping never scaled (test too weak)";
  }
}

class MpiDataParallelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiDataParallelTest, MatchesSingleProcessOnTheGlobalBatch) {
  const std::vector<Grid> grids = GridsFor(g_comm->size());
  if (grids.empty()) GTEST_SKIP() << "no dp x pp grid for world size " << g_comm->size();
  for (Grid g : grids)
    for (Variant v : {Variant::kPlain, Variant::kZero1, Variant::kClip}) {
      if (v == Variant::kZero1 && g.dp == 1) continue;  // ZeRO-1 shards over replicas
      // Interleaved needs >= 2 ranks' worth of stages per rank on P ranks:
      // the microbatch count follows the family (a multiple of P).
      RunCase(GetParam(), g, v, 2 * g.pp);
    }
}

INSTANTIATE_TEST_SUITE_P(Schedules, MpiDataParallelTest, ::testing::Values("1f1b", "zb-h1", "interleaved"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The collectives of a data-parallel group against closed forms: the world
// split by rank parity (color r % 2); all-reduce of r + i, reduce-scatter and
// all-gather of known blocks, float32 and float64.
TEST(MpiCollectivesTest, SplitGroupsMatchClosedForms) {
  const int W = g_comm->size(), r = g_comm->rank();
  StatusOr<std::unique_ptr<Communicator>> group = g_comm->Split(r % 2, r, "data-parallel");
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  Communicator& c = **group;
  std::vector<int> members;
  for (int q = r % 2; q < W; q += 2) members.push_back(q);
  ASSERT_EQ(c.size(), static_cast<int>(members.size()));
  const int n = c.size();
  // All-reduce (float64): sum over members q of (q + i).
  std::vector<double> a(1000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = r + 0.5 * i;
  StatusOr<RequestId> id = c.IallReduceSum(a.data(), static_cast<int64_t>(a.size()), ElementType::kFloat64);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(c.Wait(*id).ok());
  double sum_members = 0;
  for (int q : members) sum_members += q;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - (sum_members + 0.5 * i * n)));
  EXPECT_EQ(worst, 0.0) << "all-reduce";
  // Reduce-scatter (float32): block b of member q holds q*100 + b; rank k of
  // the group gets sum_q (q*100 + k) in every element.
  const int64_t count = 7;
  std::vector<float> send(static_cast<size_t>(count * n)), recv(static_cast<size_t>(count), -1);
  for (int b = 0; b < n; ++b)
    for (int64_t i = 0; i < count; ++i) send[b * count + i] = static_cast<float>(r * 100 + b);
  id = c.IreduceScatterSum(send.data(), recv.data(), count, ElementType::kFloat32);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(c.Wait(*id).ok());
  for (int64_t i = 0; i < count; ++i) EXPECT_EQ(recv[i], static_cast<float>(sum_members * 100 + n * c.rank()));
  // All-gather (float64): block k = group rank k's world rank.
  std::vector<double> mine(3, static_cast<double>(r)), gathered(static_cast<size_t>(3 * n), -1);
  id = c.IallGatherBlocks(mine.data(), gathered.data(), 3, ElementType::kFloat64);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(c.Wait(*id).ok());
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < 3; ++i) EXPECT_EQ(gathered[k * 3 + i], static_cast<double>(members[k]));
  ASSERT_TRUE(g_comm->Barrier().ok());
}

// ---------------------------------------------------- ZeRO-1 checkpoints ---
// World 6. A global batch of 12 rows (micro-batches of 2) trained under
// several grids on subgroups of the world (the first n ranks); every run
// sees the same global batches, so all equal one process up to rounding.
//   U  dp2 x pp3 ZeRO-1, 3 steps, saved after step 3 (uninterrupted);
//   S  dp2 x pp3 ZeRO-1, 2 steps, saved (2 shards per layer);
//   resumed from S for step 3, then saved: dp3 x pp2 ZeRO-1 (ZB-H1: another
//   dp, pp and sharding) and dp1 x pp3 without ZeRO-1;
//   N  dp1 x pp3 without ZeRO-1, 2 steps, saved; resumed under dp3 x pp2
//   ZeRO-1 for step 3.
// Each final checkpoint is read by one process (dp1 x pp1, no ZeRO-1: the
// shards joined) and its parameters and AdamW state (moments and step
// counts) compared with U's: <= 1e-12 relative. U's parameters also match
// the single-process reference (<= 1e-10), the tied head included, and so
// does the same run with clipping by the global norm (0.05). Then S
// with a shard file removed, and with one truncated: the resume is refused
// on every rank naming the file, and the ranks that read it changed nothing.
constexpr int kGlobalRows = 12;

std::unique_ptr<Communicator> FirstRanks(int n) {
  auto group = g_comm->Split(g_comm->rank() < n ? 0 : 1, g_comm->rank(), "first " + std::to_string(n));
  EXPECT_TRUE(group.ok()) << group.status().ToString();
  return group.ok() ? std::move(*group) : nullptr;
}

nlohmann::json Zero1Model(bool tied) {
  nlohmann::json m = TinyModel(4);
  m["tie_word_embeddings"] = tied;
  return m;
}

StatusOr<Plan> GridPlan(const std::string& schedule, int dp, int pp, bool zero1, bool tied, double clip = 0) {
  PlanSpec spec;
  spec.schedule = schedule;
  spec.pp_size = pp;
  spec.dp_size = dp;
  spec.micro_batch_size = 2;
  spec.num_microbatches = kGlobalRows / dp / 2;
  spec.model = Zero1Model(tied);
  spec.seq_length = 8;
  spec.bytes_per_element = 8;
  spec.distributed_optimizer = zero1;
  spec.clip_grad_norm = clip;
  return BuildPlan(spec);
}

std::vector<TokenBatch> GlobalBatches() {
  std::vector<TokenBatch> out;
  for (int i = 0; i < 3; ++i) out.push_back(RandomBatch(kGlobalRows, 8, 700 + i));
  return out;
}

// Collective over the world: on the first dp*pp ranks, builds the grid's
// engine, loads `resume` (if any), runs steps [first, last) and saves the
// checkpoint after step `last` into `save`. The outcome, agreed over the world.
Status RunGrid(const std::string& schedule, int dp, int pp, bool zero1, bool tied, int first, int last,
               const std::string& resume, const std::string& save, double clip = 0, double* min_norm = nullptr) {
  const int n = dp * pp;
  std::unique_ptr<Communicator> group = FirstRanks(n);
  Status st = group ? Status::Ok() : Status::Internal("split failed");
  if (st.ok() && g_comm->rank() < n) {
    st = [&]() -> Status {
      PW_ASSIGN_OR_RETURN(Plan plan, GridPlan(schedule, dp, pp, zero1, tied, clip));
      EngineOptions options = Fp64Options();
      options.clip_grad_norm = clip;
      PW_ASSIGN_OR_RETURN(std::unique_ptr<Engine> e, Engine::Create(plan, *group, options));
      if (!resume.empty()) {
        PW_ASSIGN_OR_RETURN(CheckpointManifest man, ReadManifest(resume));
        PW_RETURN_IF_ERROR(AgreeOnStatus(e->LoadCheckpoint(resume, man), *group));
      }
      const std::vector<TokenBatch> global = GlobalBatches();
      const int rows = kGlobalRows / dp;
      for (int i = first; i < last; ++i) {
        PW_ASSIGN_OR_RETURN(StepReport r, e->Step(Slice(global[i], e->dp_rank(), rows)));
        if (min_norm != nullptr) *min_norm = std::min(*min_norm, r.grad_norm);
      }
      return e->WriteCheckpoint(save, last).status();
    }();
    st =
        st.WithContext(schedule + " dp" + std::to_string(dp) + " x pp" + std::to_string(pp) + (zero1 ? " ZeRO-1" : ""));
  }
  return AgreeOnStatus(st, *g_comm);
}

// World rank 0 alone: the parameters and AdamW state of checkpoint `dir`,
// loaded by one process without ZeRO-1 (every layer, shards joined).
struct Inspected {
  Status status;
  std::vector<NamedValues> params, optimizer;
};
Inspected Inspect(const std::string& dir, bool tied) {
  Inspected out;
  std::unique_ptr<Communicator> one = FirstRanks(1);
  if (g_comm->rank() != 0) return out;
  out.status = [&]() -> Status {
    PW_ASSIGN_OR_RETURN(Plan plan, GridPlan("1f1b", 1, 1, false, tied));
    PW_ASSIGN_OR_RETURN(std::unique_ptr<Engine> e, Engine::Create(plan, *one, Fp64Options()));
    PW_ASSIGN_OR_RETURN(CheckpointManifest man, ReadManifest(dir));
    PW_RETURN_IF_ERROR(e->LoadCheckpoint(dir, man));
    out.params = e->Parameters();
    out.optimizer = e->OptimizerState();
    return Status::Ok();
  }();
  return out;
}

TEST(MpiZero1CheckpointTest, ResumesUnderAnotherDpPlanAndSharding) {
  if (g_comm->size() != 6) GTEST_SKIP() << "needs 6 ranks (dp2 x pp3, dp3 x pp2)";
  namespace fs = std::filesystem;
  // One scratch directory, named by rank 0.
  auto names = g_comm->AllGather("/tmp/pw-zero1-ckpt-" + std::to_string(::getpid()));
  ASSERT_TRUE(names.ok());
  const std::string root = (*names)[0];
  for (bool tied : {false, true}) {
    const std::string model = tied ? "tied" : "untied";
    const std::string U = root + "/" + model + "/U", S = root + "/" + model + "/S", N = root + "/" + model + "/N";
    ASSERT_TRUE(RunGrid("1f1b", 2, 3, true, tied, 0, 3, "", U).ok());
    Status st = RunGrid("1f1b", 2, 3, true, tied, 0, 2, "", S);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (g_comm->rank() == 0) {
      StatusOr<CheckpointManifest> man = ReadManifest(S);
      ASSERT_TRUE(man.ok()) << man.status().ToString();
      EXPECT_EQ(man->optimizer_shards, 2);
      EXPECT_EQ(man->dp_size, 2);
      EXPECT_EQ(man->files.size(), 6u * 3u) << "6 layer files + 2 shard files per layer";
    }
    ASSERT_TRUE(RunGrid("1f1b", 1, 3, false, tied, 0, 2, "", N).ok());
    struct Resumed {
      std::string label, dir;
    };
    std::vector<Resumed> resumed = {{"S(dp2 pp3 ZeRO-1) -> dp3 x pp2 ZeRO-1 zb-h1", root + "/" + model + "/A"},
                                    {"S(dp2 pp3 ZeRO-1) -> dp1 x pp3", root + "/" + model + "/B"},
                                    {"N(dp1 pp3) -> dp3 x pp2 ZeRO-1", root + "/" + model + "/C"}};
    st = RunGrid("zb-h1", 3, 2, true, tied, 2, 3, S, resumed[0].dir);
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = RunGrid("1f1b", 1, 3, false, tied, 2, 3, S, resumed[1].dir);
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = RunGrid("zb-h1", 3, 2, true, tied, 2, 3, N, resumed[2].dir);
    ASSERT_TRUE(st.ok()) << st.ToString();
    Inspected u = Inspect(U, tied);
    if (g_comm->rank() == 0) {
      ASSERT_TRUE(u.status.ok()) << u.status.ToString();
      ASSERT_FALSE(u.optimizer.empty());
      // U against one process on the same global batches.
      Plan plan = *GridPlan("1f1b", 1, 1, false, tied);
      auto ref = ReferenceModel::Create(*plan.model, Fp64Options());
      ASSERT_TRUE(ref.ok()) << ref.status().ToString();
      for (const TokenBatch& b : GlobalBatches()) ASSERT_TRUE((*ref)->Step(b).ok());
      std::vector<NamedValues> ref_params = (*ref)->Parameters();
      if (tied)
        for (const NamedValues& nv : std::vector<NamedValues>(ref_params))
          if (nv.name == "embedding.wte") {
            NamedValues alias = nv;
            alias.name = "head.lm_head.weight";
            ref_params.push_back(alias);
          }
      Diff d = WorstDiff(u.params, ref_params);
      std::printf("[ zero1ck  ] %-6s U (dp2 x pp3 ZeRO-1, 3 steps) vs one process: param rel %.2e\n", model.c_str(),
                  d.rel);
      EXPECT_LE(d.rel, kTolerance) << model << ": " << Describe(d);
    }
    {
      // ZeRO-1 with clipping by the global norm (the tied matrix counted
      // once) against one process clipping the same way.
      const double clip = 0.05;
      double min_norm = INFINITY;
      const std::string K = root + "/" + model + "/K";
      st = RunGrid("1f1b", 2, 3, true, tied, 0, 3, "", K, clip, &min_norm);
      ASSERT_TRUE(st.ok()) << st.ToString();
      Inspected k = Inspect(K, tied);
      if (g_comm->rank() == 0) {
        ASSERT_TRUE(k.status.ok()) << k.status.ToString();
        Plan plan = *GridPlan("1f1b", 1, 1, false, tied, clip);
        EngineOptions options = Fp64Options();
        options.clip_grad_norm = clip;
        auto ref = ReferenceModel::Create(*plan.model, options);
        ASSERT_TRUE(ref.ok()) << ref.status().ToString();
        for (const TokenBatch& b : GlobalBatches()) ASSERT_TRUE((*ref)->Step(b).ok());
        std::vector<NamedValues> ref_params = (*ref)->Parameters();
        if (tied)
          for (const NamedValues& nv : std::vector<NamedValues>(ref_params))
            if (nv.name == "embedding.wte") {
              NamedValues alias = nv;
              alias.name = "head.lm_head.weight";
              ref_params.push_back(alias);
            }
        Diff d = WorstDiff(k.params, ref_params);
        std::printf(
            "[ zero1ck  ] %-6s dp2 x pp3 ZeRO-1 clip %.2f (norm >= %.3f), 3 steps vs one process: param rel "
            "%.2e\n",
            model.c_str(), clip, min_norm, d.rel);
        EXPECT_LE(d.rel, kTolerance) << model << " ZeRO-1 + clipping: " << Describe(d);
        EXPECT_GT(min_norm, clip) << "clipping never scaled (test too weak)";
      }
    }
    for (const Resumed& r : resumed) {
      Inspected got = Inspect(r.dir, tied);
      if (g_comm->rank() != 0) continue;
      ASSERT_TRUE(got.status.ok()) << r.label << ": " << got.status.ToString();
      EXPECT_EQ(got.params.size(), u.params.size());
      EXPECT_EQ(got.optimizer.size(), u.optimizer.size()) << r.label << ": AdamW state of every parameter";
      Diff p = WorstDiff(got.params, u.params), o = WorstDiff(got.optimizer, u.optimizer);
      std::printf("[ zero1ck  ] %-6s %-45s after step 3 vs uninterrupted: param rel %.2e, AdamW state rel %.2e (%s)\n",
                  model.c_str(), r.label.c_str(), p.rel, o.rel, o.name.c_str());
      EXPECT_LE(p.rel, 1e-12) << model << " " << r.label << ": " << Describe(p);
      EXPECT_LE(o.rel, 1e-12) << model << " " << r.label << ": " << Describe(o);
    }
    if (tied) continue;
    // A shard file missing, then one truncated: refused before any step,
    // naming the file; the parameters untouched.
    struct Broken {
      std::string file, expect;
    };
    for (const Broken& b : {Broken{"block.1.adamw_shard_1_of_2.safetensors", "is missing"},
                            Broken{"head.adamw_shard_0_of_2.safetensors", "is truncated"}}) {
      const std::string bad = root + "/" + model + "/bad";
      if (g_comm->rank() == 0) {
        fs::remove_all(bad);
        fs::copy(S, bad);
        if (b.expect == "is missing")
          fs::remove(bad + "/" + b.file);
        else
          fs::resize_file(bad + "/" + b.file, fs::file_size(bad + "/" + b.file) - 8);
      }
      ASSERT_TRUE(g_comm->Barrier().ok());
      std::unique_ptr<Communicator> group = FirstRanks(6);
      StatusOr<Plan> plan = GridPlan("zb-h1", 3, 2, true, false);
      ASSERT_TRUE(plan.ok());
      StatusOr<std::unique_ptr<Engine>> e = Engine::Create(*plan, *group, Fp64Options());
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      const std::vector<NamedValues> before = (*e)->Parameters();
      StatusOr<CheckpointManifest> man = ReadManifest(bad);
      ASSERT_TRUE(man.ok());
      const Status own = (*e)->LoadCheckpoint(bad, *man);
      Status refused = AgreeOnStatus(own, *group);
      ASSERT_FALSE(refused.ok()) << b.file;
      EXPECT_NE(refused.message().find(bad + "/" + b.file + " " + b.expect), std::string::npos) << refused.ToString();
      // A rank that found the damaged file changed nothing (the others may
      // have loaded their intact layers; the run stops before any step).
      if (!own.ok()) {
        EXPECT_EQ(WorstDiff((*e)->Parameters(), before).rel, 0.0) << "a refused checkpoint changed the parameters";
      }
      if (g_comm->rank() == 0) std::printf("[ zero1ck  ] refused: %s\n", refused.message().c_str());
    }
  }
  ASSERT_TRUE(g_comm->Barrier().ok());
  if (g_comm->rank() == 0) fs::remove_all(root);
}

// -np != pp x dp is refused before any compute, naming both numbers.
TEST(MpiDataParallelPreflightTest, RefusesAnotherWorldSize) {
  const int W = g_comm->size();
  PlanSpec spec;
  spec.schedule = "1f1b";
  spec.pp_size = 2;
  spec.num_microbatches = 2;
  spec.model = TinyModel(2);
  spec.seq_length = 8;
  spec.dp_size = W;  // 2 x W ranks needed, W started
  auto plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto engine = Engine::Create(*plan, *g_comm, EngineOptions());
  ASSERT_FALSE(engine.ok());
  const std::string msg = engine.status().message();
  EXPECT_NE(msg.find("pp_size=2 x dp_size=" + std::to_string(W) + " = " + std::to_string(2 * W) + " ranks but " +
                     std::to_string(W) + " were started"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("-np " + std::to_string(2 * W)), std::string::npos) << msg;
}

}  // namespace
}  // namespace pw::exec::testing
