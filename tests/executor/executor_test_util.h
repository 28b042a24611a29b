// Helpers of the executor tests: tiny models, plans, batches, loopback runs
// (ranks as threads) and tensor comparisons that print the worst tensor.
// Torch-free: the tests talk to the executor through engine.h.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "executor/comm/loopback_communicator.h"
#include "executor/runtime/engine.h"
#include "executor/runtime/reference.h"
#include "tests/testing/test_plans.h"

namespace pw::exec::testing {

// A small GPT: C=16, 2 heads, positions 16, byte vocabulary.
inline nlohmann::json TinyModel(int n_layer) {
  return {{"n_layer", n_layer}, {"n_embd", 16}, {"n_head", 2}, {"n_positions", 16}, {"vocab_size", 256}};
}

// `rows` random sequences of `seq` tokens (targets random too).
inline TokenBatch RandomBatch(int rows, int seq, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TokenBatch b;
  b.rows = rows;
  b.seq = seq;
  for (int i = 0; i < rows * seq; ++i) {
    b.inputs.push_back(static_cast<int64_t>(rng() % 256));
    b.targets.push_back(static_cast<int64_t>(rng() % 256));
  }
  return b;
}

struct Diff {
  std::string name;      // worst tensor
  double rel = 0.0;      // max |a - b| / max |b| over the tensor
  double abs = 0.0;      // max |a - b|
  std::string detail;    // first values of both
  bool missing = false;  // a tensor of `got` is absent from `want`
};

// Compares every tensor of `got` with the same-named tensor of `want`;
// returns the worst one.
inline Diff WorstDiff(const std::vector<NamedValues>& got, const std::vector<NamedValues>& want) {
  Diff worst;
  for (const auto& g : got) {
    const NamedValues* w = nullptr;
    for (const auto& x : want)
      if (x.name == g.name) w = &x;
    if (w == nullptr || w->values.size() != g.values.size()) {
      worst.name = g.name;
      worst.missing = true;
      worst.rel = INFINITY;
      return worst;
    }
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < g.values.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(g.values[i] - w->values[i]));
      max_ref = std::max(max_ref, std::fabs(w->values[i]));
    }
    const double rel = max_diff / std::max(max_ref, 1e-300);
    if (max_diff == 0) continue;
    if (rel > worst.rel || worst.name.empty()) {
      std::ostringstream os;
      os.precision(12);
      os << "got [";
      for (size_t i = 0; i < std::min<size_t>(4, g.values.size()); ++i) os << (i ? ", " : "") << g.values[i];
      os << "] want [";
      for (size_t i = 0; i < std::min<size_t>(4, w->values.size()); ++i) os << (i ? ", " : "") << w->values[i];
      os << "]";
      worst = {g.name, rel, max_diff, os.str(), false};
    }
  }
  return worst;
}

inline std::string Describe(const Diff& d) {
  if (d.missing) return "tensor " + d.name + " missing in the reference (or of another size)";
  std::ostringstream os;
  os << "worst tensor " << (d.name.empty() ? "(all equal)" : d.name) << ": rel diff " << d.rel << ", abs diff " << d.abs
     << " " << d.detail;
  return os.str();
}

// What one rank of a loopback run saw.
struct RankRun {
  Status status;
  std::vector<StepReport> reports;
  std::vector<NamedValues> grads_after_first;  // after step 1
  std::vector<NamedValues> params_after_last;  // after the last step
  std::vector<StashReport> stash;              // of the first step
  int live_graphs = -1;                        // after the last step
};

// Runs `plan` on `world` loopback ranks (threads), one Step per batch.
// `per_rank` (optional) runs on each rank's thread after every step.
inline std::vector<RankRun> RunLoopback(const Plan& plan, int world, const std::vector<TokenBatch>& batches,
                                        const EngineOptions& options, double timeout_s = 60.0) {
  auto hub = std::make_shared<LoopbackHub>(world, timeout_s);
  std::vector<RankRun> runs(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      RankRun& out = runs[r];
      StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(plan, comm, options);
      if (!engine.ok()) {
        out.status = engine.status();
        return;
      }
      for (size_t i = 0; i < batches.size(); ++i) {
        StatusOr<StepReport> rep = (*engine)->Step(batches[i]);
        if (!rep.ok()) {
          out.status = rep.status();
          return;
        }
        out.reports.push_back(*rep);
        if (i == 0) {
          out.grads_after_first = (*engine)->Gradients();
          out.stash = (*engine)->Stash();
        }
      }
      out.params_after_last = (*engine)->Parameters();
      out.live_graphs = (*engine)->LiveGraphsAfterStep();
    });
  }
  for (auto& t : threads) t.join();
  return runs;
}

// The reference run of the same batches: loss of step 1, grads after step 1,
// params after the last step.
struct ReferenceRun {
  Status status;
  double first_loss = 0.0;
  std::vector<NamedValues> grads_after_first, params_after_last;
};

inline ReferenceRun RunReference(const ModelConfig& model, const std::vector<TokenBatch>& batches,
                                 const EngineOptions& options) {
  ReferenceRun out;
  auto ref = ReferenceModel::Create(model, options);
  if (!ref.ok()) {
    out.status = ref.status();
    return out;
  }
  for (size_t i = 0; i < batches.size(); ++i) {
    StatusOr<double> loss = (*ref)->Step(batches[i]);
    if (!loss.ok()) {
      out.status = loss.status();
      return out;
    }
    if (i == 0) {
      out.first_loss = *loss;
      out.grads_after_first = (*ref)->Gradients();
    }
  }
  out.params_after_last = (*ref)->Parameters();
  return out;
}

inline EngineOptions Fp64Options() {
  EngineOptions o;
  o.double_precision = true;
  o.lr = 1e-2;
  o.weight_decay = 0.01;
  return o;
}

// The equivalence check of every schedule family: `plan` on loopback ranks
// against the single-process reference over `batches` (fp64): the loss of
// step 1, every gradient after step 1 and every parameter after the last step
// within `tolerance` (relative), every parameter on exactly one rank, no
// autograd graph left alive. Returns the gradients of step 1 (empty when a
// rank failed) for extra checks; `name` labels the failures and the printed
// worst differences.
inline std::vector<NamedValues> ExpectMatchesReference(const Plan& plan, const std::vector<TokenBatch>& batches,
                                                       const std::string& name, double tolerance,
                                                       const EngineOptions& options = Fp64Options()) {
  const int P = plan.pp_size;
  std::vector<RankRun> runs = RunLoopback(plan, P, batches, options, /*timeout_s=*/20.0);
  ReferenceRun ref = RunReference(*plan.model, batches, options);
  EXPECT_TRUE(ref.status.ok()) << ref.status.ToString();
  if (!ref.status.ok()) return {};
  if (plan.model->tied) {
    // The reference's head uses the token table itself; the pipeline's last
    // stage holds a replica "head.lm_head.weight" that must equal it (value
    // and gradient: the sum of both uses).
    const std::string& table = FamilyInfo(plan.model->family).token_table;
    for (auto* list : {&ref.grads_after_first, &ref.params_after_last}) {
      for (const NamedValues& nv : *list)
        if (nv.name == table) {
          NamedValues alias = nv;
          alias.name = "head.lm_head.weight";
          list->push_back(alias);
          break;
        }
    }
  }
  std::vector<NamedValues> grads, params;
  bool all_ok = true;
  for (int r = 0; r < P; ++r) {
    EXPECT_TRUE(runs[r].status.ok()) << name << ": rank " << r << ": " << runs[r].status.ToString();
    all_ok &= runs[r].status.ok();
  }
  if (!all_ok) return {};
  for (int r = 0; r < P; ++r) {
    grads.insert(grads.end(), runs[r].grads_after_first.begin(), runs[r].grads_after_first.end());
    params.insert(params.end(), runs[r].params_after_last.begin(), runs[r].params_after_last.end());
    EXPECT_EQ(runs[r].live_graphs, 0) << name << ": rank " << r << " keeps autograd graphs after the step";
  }
  EXPECT_EQ(grads.size(), ref.grads_after_first.size()) << name << ": every parameter lives on one rank";
  const double loss = runs[0].reports[0].loss;
  EXPECT_LE(std::fabs(loss - ref.first_loss), tolerance * std::fabs(ref.first_loss))
      << name << ": loss " << loss << " vs reference " << ref.first_loss;
  Diff g = WorstDiff(grads, ref.grads_after_first);
  EXPECT_LE(g.rel, tolerance) << name << ": gradients after step 1: " << Describe(g);
  Diff p = WorstDiff(params, ref.params_after_last);
  EXPECT_LE(p.rel, tolerance) << name << ": parameters after " << batches.size() << " steps: " << Describe(p);
  std::printf("[ equiv    ] %-46s loss %.12f grad rel %.2e (%s) param rel %.2e\n", name.c_str(), loss, g.rel,
              g.name.c_str(), p.rel);
  return grads;
}

}  // namespace pw::exec::testing
