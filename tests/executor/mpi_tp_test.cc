// Tensor parallelism x pipeline x data parallelism under real mpirun (one
// process per rank; the world split into pipeline, data-parallel and
// tensor-parallel groups, docs/DATA_PARALLEL.md):
//   mpirun --allow-run-as-root --oversubscribe -np W executor_mpi_tp_test
// W=2: TP2 x PP1; W=4: TP2 x PP2 and TP2 x PP1 x DP2; for GPT-2 (4 heads)
// and Llama with GQA (4 heads, 2 kv heads) and Qwen3 (per-head q/k norms),
// over 1F1B, ZB-H1, Interleaved and DualPipeV, with and without sequence
// parallelism, clipping, tied heads and ZeRO-1 (each at least once per
// model, table below), fp64: the loss of every step equals a single process
// trained on the same global batches, and every parameter after 3 AdamW
// steps (shards gathered over the TP group, Engine::GatheredParameters)
// equals the single process's within 1e-10 relative. Vocabularies that do
// not divide 128 t (200, 300) make the padded rows real. Rank 0 prints the
// worst differences over all ranks. Every compute action's tensor-parallel
// collectives are counted and compared with the planner's footprint
// (models/spec/footprint.h tp_comm_f / _i / _w of its stage's layers): F
// runs tp_comm_f, I runs tp_comm_i (with SP, the embedding's all-gather of
// its output gradient), W runs none -- the split backward keeps its shape.
// Also: a plan for another world size is
// refused before any compute, naming the grid and -np.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>

#include "executor/comm/mpi_communicator.h"
#include "models/spec/footprint.h"
#include "plan/replica_batch.h"
#include "tests/executor/executor_test_util.h"
#include "tests/executor/mpi_test_main.h"

namespace pw::exec::testing {

const double kMpiTestWatchdogS = 120;

namespace {

constexpr double kTolerance = 1e-10;
constexpr int kSeq = 8;

// GPT-2: C = 16, 4 heads, F = 64, V = 200 (padded to 256 for t = 2).
nlohmann::json Gpt2(bool tied) {
  return {{"model_type", "gpt2"},
          {"n_layer", 4},
          {"n_embd", 16},
          {"n_head", 4},
          {"n_positions", 16},
          {"vocab_size", 200},
          {"tie_word_embeddings", tied}};
}

// Llama with GQA: C = 16, 4 heads, 2 kv heads, D = 4, F = 32, V = 300 (padded
// to 512 for t = 2: rank 1 holds 44 real rows and 212 padding rows).
nlohmann::json Llama(const char* type, bool tied) {
  return {{"model_type", type},       {"hidden_size", 16},
          {"num_hidden_layers", 4},   {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"head_dim", 4},
          {"intermediate_size", 32},  {"max_position_embeddings", 16},
          {"vocab_size", 300},        {"tie_word_embeddings", tied},
          {"rms_norm_eps", 1e-6}};
}

// `rows` sequences of kSeq tokens below `vocab` (targets too).
TokenBatch Batch(int rows, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TokenBatch b;
  b.rows = rows;
  b.seq = kSeq;
  for (int i = 0; i < rows * kSeq; ++i) {
    b.inputs.push_back(static_cast<int64_t>(rng() % vocab));
    b.targets.push_back(static_cast<int64_t>(rng() % vocab));
  }
  return b;
}

// Rows [d*rows, (d+1)*rows) of `global`.
TokenBatch Slice(const TokenBatch& global, int d, int rows) {
  TokenBatch b;
  b.rows = rows;
  b.seq = global.seq;
  const size_t first = static_cast<size_t>(d) * rows * global.seq, n = static_cast<size_t>(rows) * global.seq;
  b.inputs.assign(global.inputs.begin() + first, global.inputs.begin() + first + n);
  b.targets.assign(global.targets.begin() + first, global.targets.begin() + first + n);
  return b;
}

struct Case {
  const char* model;  // "gpt2", "llama", "qwen3"
  const char* schedule;
  int tp, pp, dp;
  bool sp, tied, clip, zero1;
};

std::string CaseName(const Case& c) {
  char text[160];
  std::snprintf(text, sizeof text, "%s %s TP%d x PP%d x DP%d%s%s%s%s", c.model, c.schedule, c.tp, c.pp, c.dp,
                c.sp ? " sp" : "", c.tied ? " tied" : "", c.clip ? " clip" : "", c.zero1 ? " zero1" : "");
  return text;
}

// Tensor-parallel collectives the planner's footprint puts in F, in I (plus
// W's: the embedding's output-gradient all-gather with SP runs where its
// input-gradient path is, in I) and in W (none left) for the layers
// [begin, end) of `plan`'s model.
struct Collectives {
  int64_t f = 0, i = 0;
};
Collectives PlannedCollectives(const Plan& plan, int begin, int end) {
  TrainingShape shape;
  shape.micro_batch_size = 2;
  shape.seq_length = kSeq;
  shape.precision = Precision::kFp64;
  shape.tp_size = plan.tp_size;
  shape.sequence_parallel = plan.sequence_parallel;
  const std::vector<LayerSpec> layers = BuildLayerList(*plan.model);
  Collectives c;
  for (int l = begin; l < end; ++l) {
    LayerFootprint fp = ComputeFootprint(*plan.model, layers[l], shape);
    c.f += static_cast<int64_t>(fp.tp_comm_f.size());
    c.i += static_cast<int64_t>(fp.tp_comm_i.size());
    EXPECT_TRUE(fp.tp_comm_w.empty()) << layers[l].name << ": W runs no tensor-parallel collective";
  }
  return c;
}

// Runs one case on every rank and checks it (collective).
void RunCase(const Case& c) {
  const std::string name = CaseName(c);
  ASSERT_EQ(c.tp * c.pp * c.dp, g_comm->size()) << name;
  PlanSpec spec;
  spec.schedule = c.schedule;
  spec.pp_size = c.pp;
  spec.num_microbatches = 2 * c.pp;  // interleaved and DualPipeV want a multiple of P
  spec.model = std::string(c.model) == "gpt2" ? Gpt2(c.tied) : Llama(c.model, c.tied);
  spec.seq_length = kSeq;
  spec.micro_batch_size = 2;
  spec.bytes_per_element = 8;
  spec.dp_size = c.dp;
  spec.tp_size = c.tp;
  spec.sequence_parallel = c.sp;
  spec.distributed_optimizer = c.zero1;
  const double clip = 0.05;  // below these batches' gradient norm (checked below)
  if (c.clip) spec.clip_grad_norm = clip;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << name << ": cannot build the plan: " << plan.status().ToString();
  ASSERT_EQ(plan->tp_size, c.tp);
  ASSERT_EQ(plan->sequence_parallel, c.sp);
  StatusOr<ReplicaBatch> shape = ReadReplicaBatch(*plan);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  const int R = shape->rows;
  const int64_t vocab = plan->model->vocab, C = plan->model->hidden;
  // The plan's messages between stages are what the executor sends: a
  // microbatch's (b, T, C), or its sequence shard (b, T/t, C) with SP.
  for (const PlanStage& s : plan->stages)
    if (s.index + 1 < plan->num_stages) {
      EXPECT_EQ(s.memory.send_forward, int64_t{2} * (c.sp ? kSeq / c.tp : kSeq) * C * 8)
          << name << ": stage " << s.index << " forward message bytes";
    }
  std::vector<TokenBatch> global;
  for (int i = 0; i < 3; ++i) global.push_back(Batch(c.dp * R, vocab, 500 + i));

  EngineOptions options = Fp64Options();
  options.clip_grad_norm = c.clip ? clip : 0.0;
  Diff params;
  double worst_loss = 0.0, min_norm = INFINITY;
  std::vector<double> losses;
  {
    StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(*plan, *g_comm, options);
    ASSERT_TRUE(engine.ok()) << name << ": " << engine.status().ToString();
    Engine& e = **engine;
    EXPECT_EQ(e.tp_size(), c.tp);
    EXPECT_EQ(e.dp_size(), c.dp);
    EXPECT_EQ(e.world_rank(), e.rank() * c.dp * c.tp + e.dp_rank() * c.tp + e.tp_rank())
        << "rank order g = pp*D*T + dp*T + tp (docs/DATA_PARALLEL.md)";
    EXPECT_EQ(e.distributed_optimizer(), c.zero1);
    std::vector<double> ref_losses;
    std::vector<NamedValues> ref_params;
    {
      auto model = ReferenceModel::Create(*plan->model, options);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      for (const TokenBatch& b : global) {
        StatusOr<double> l = (*model)->Step(b);
        ASSERT_TRUE(l.ok()) << l.status().ToString();
        ref_losses.push_back(*l);
      }
      ref_params = (*model)->Parameters();
    }
    if (plan->model->tied) {
      // The reference's head uses the token table itself; the last stage's
      // replica must equal it.
      const std::string& table = FamilyInfo(plan->model->family).token_table;
      for (const NamedValues& nv : ref_params)
        if (nv.name == table) {
          NamedValues alias = nv;
          alias.name = "head.lm_head.weight";
          ref_params.push_back(alias);
          break;
        }
    }
    // Collectives per action of the first step: the count read before
    // action k + 1 minus the count before action k is action k's.
    const Program program = PlanProgram(*plan);
    const std::vector<Action>& actions = program.ranks[e.rank()];
    std::vector<int64_t> before(actions.size(), -1);
    StepHooks hooks;
    hooks.before_action = [&](int k) { before[k] = e.TensorParallelCollectives(); };
    for (int i = 0; i < 3; ++i) {
      StatusOr<StepReport> rep = e.Step(Slice(global[i], e.dp_rank(), R), true, i == 0 ? &hooks : nullptr);
      ASSERT_TRUE(rep.ok()) << name << " world rank " << g_comm->rank() << ": " << rep.status().ToString();
      losses.push_back(rep->loss);
      worst_loss = std::max(worst_loss, std::fabs(rep->loss - ref_losses[i]) / std::fabs(ref_losses[i]));
      if (c.clip) min_norm = std::min(min_norm, rep->grad_norm);
      if (i > 0) continue;
      int checked_w = 0, checked_i = 0;
      for (size_t k = 0; k + 1 < actions.size(); ++k) {  // the last one's count includes the step's end
        const Action& a = actions[k];
        const int64_t ran = before[k + 1] - before[k];
        const PlanStage& st = plan->stages[a.stage];
        const Collectives want = PlannedCollectives(*plan, st.layer_begin, st.layer_end);
        if (a.type == ActionType::kF) {
          EXPECT_EQ(ran, want.f) << name << ": " << a.ToString() << " ran " << ran << " TP collectives";
        } else if (a.type == ActionType::kI) {
          EXPECT_EQ(ran, want.i) << name << ": " << a.ToString() << " ran " << ran << " TP collectives";
          ++checked_i;
        } else if (a.type == ActionType::kW) {
          EXPECT_EQ(ran, 0) << name << ": " << a.ToString() << " (weight gradients) ran " << ran << " TP collectives";
          ++checked_w;
        } else if (a.type == ActionType::kB) {
          EXPECT_EQ(ran, want.i) << name << ": " << a.ToString() << " ran " << ran << " TP collectives";
        }
      }
      if (std::string(c.schedule) == "zb-h1") {
        EXPECT_GT(checked_w, 0) << name;
        EXPECT_GT(checked_i, 0) << name;
      }
    }
    StatusOr<std::vector<NamedValues>> full = e.GatheredParameters();
    ASSERT_TRUE(full.ok()) << name << ": " << full.status().ToString();
    params = WorstDiff(*full, ref_params);
  }
  auto all = AllGatherDoubles(*g_comm, {params.rel, worst_loss});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  double wp = 0, wl = 0;
  for (const auto& v : *all) {
    wp = std::max(wp, v[0]);
    wl = std::max(wl, v[1]);
  }
  if (g_comm->rank() == 0) {
    std::printf("[ tp       ] %-52s loss %.12f worst rel: loss %.2e param %.2e", name.c_str(), losses.back(), wl, wp);
    if (c.clip) std::printf(" (norm >= %.3f, clip %.2f)", min_norm, clip);
    std::printf("\n");
    std::fflush(stdout);
  }
  EXPECT_LE(worst_loss, kTolerance) << name << ": loss";
  EXPECT_LE(params.rel, kTolerance) << name << " world rank " << g_comm->rank()
                                    << ": parameters after 3 steps: " << Describe(params);
  if (c.clip) {
    EXPECT_GT(min_norm, clip) << name << ": clipping never scaled (test too weak)";
  }
}

// Every model has each schedule, SP on and off, clipping, a tied head and
// ZeRO-1 at least once over W = 2 and W = 4.
std::vector<Case> CasesFor(int world) {
  //       model    schedule       tp pp dp  sp     tied   clip   zero1
  if (world == 2)
    return {
        {"gpt2", "1f1b", 2, 1, 1, false, false, false, false},  {"gpt2", "zb-h1", 2, 1, 1, true, true, true, false},
        {"llama", "1f1b", 2, 1, 1, true, true, false, false},   {"llama", "zb-h1", 2, 1, 1, false, false, true, false},
        {"qwen3", "1f1b", 2, 1, 1, false, false, false, false}, {"qwen3", "zb-h1", 2, 1, 1, true, false, false, false}};
  if (world == 4)
    return {{"gpt2", "interleaved", 2, 2, 1, true, true, false, false},
            {"gpt2", "dualpipev", 2, 2, 1, false, false, true, false},
            {"gpt2", "1f1b", 2, 1, 2, true, false, true, true},
            {"llama", "interleaved", 2, 2, 1, false, true, true, false},
            {"llama", "dualpipev", 2, 2, 1, true, false, false, false},
            {"llama", "zb-h1", 2, 1, 2, false, true, false, true},
            {"llama", "1f1b", 2, 2, 1, true, false, true, false}};
  return {};
}

TEST(MpiTensorParallelTest, MatchesSingleProcessOnTheGlobalBatch) {
  const std::vector<Case> cases = CasesFor(g_comm->size());
  if (cases.empty()) GTEST_SKIP() << "no TP grid for world size " << g_comm->size();
  for (const Case& c : cases) RunCase(c);
}

// A TP plan for twice this world is refused on every rank before any
// compute, naming the grid and the -np to use.
TEST(MpiTensorParallelTest, RefusesAPlanForAnotherWorldSize) {
  const int W = g_comm->size();
  PlanSpec spec;
  spec.schedule = "1f1b";
  spec.pp_size = W;  // tp 2 x pp W = 2 W ranks
  spec.num_microbatches = 2 * W;
  spec.model = Gpt2(false);
  spec.seq_length = kSeq;
  spec.bytes_per_element = 8;
  spec.tp_size = 2;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(*plan, *g_comm, Fp64Options());
  ASSERT_FALSE(engine.ok());
  const std::string want = "plan is for tp 2 x pp " + std::to_string(W) + " x dp 1 = " + std::to_string(2 * W) +
                           " ranks but " + std::to_string(W) + " were started; run with mpirun -np " +
                           std::to_string(2 * W);
  EXPECT_NE(engine.status().message().find(want), std::string::npos) << engine.status().ToString();
}

}  // namespace
}  // namespace pw::exec::testing
