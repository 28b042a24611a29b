// Evaluation of one planner candidate (schedule family x v x batch split x
// recompute): its costs, its layer split under the memory limit, and its
// simulated step through the schedules core (schedules/pipeline.h). Shared
// state across candidates: cost tables per (micro-batch size, recompute) and
// the unit-cost memory walks per (family, v, m), from a UnitOrders that
// SearchDeviceSplits shares across splits. Used by planner.cc and
// device_splits.cc.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "planner/data_parallel.h"
#include "planner/memory_profile.h"
#include "planner/partition.h"
#include "planner/planner.h"
#include "schedules/registry.h"

namespace pw {

inline constexpr int64_t kUnlimitedBytes = std::numeric_limits<int64_t>::max();

// The unit-cost orders of the schedule families and their memory walks,
// shared by the searches of one planner run. GenerateSchedule of a request
// with empty costs (unit costs) and no memory limit depends on nothing but
// (family, P, v, m), and OneMicrobatchOrder on (family, P, v), so one order
// serves every split (T, D, ZeRO-1), micro-batch size and recompute with
// the same P and m: SearchDeviceSplits shares one UnitOrders across its
// splits. Not thread-safe.
class UnitOrders {
 public:
  // One generated order: `status` is the generator's (the rest is empty when
  // it failed); `profile` its memory walk, `stage_to_rank` its placement.
  struct Order {
    Status status;
    std::vector<int> stage_to_rank;
    std::shared_ptr<const MemoryProfile> profile;
  };
  // The family's order for m microbatches on P ranks with v stages each
  // (GenerateSchedule with unit costs, no limit), generated once.
  const Order& Full(const ScheduleInfo& family, int P, int v, int m);
  // Its one-microbatch order (OneMicrobatchOrder), generated once.
  const Order& Least(const ScheduleInfo& family, int P, int v);

 private:
  std::map<std::tuple<std::string, int, int, int>, Order> full_;  // (family, P, v, m)
  std::map<std::tuple<std::string, int, int>, Order> least_;      // (family, P, v)
};

class CandidateSearch {
 public:
  // `limit`: per-rank bytes (kUnlimitedBytes = none). `orders`: the unit
  // orders to use and add to (shared with other searches), or nullptr for
  // the search's own. `model`, `options` and `orders` must outlive the search.
  CandidateSearch(const PlannerModel& model, const PlannerOptions& options, int64_t limit,
                  UnitOrders* orders = nullptr);

  int64_t limit() const { return limit_; }

  // Layer costs for micro-batch size `b` and recompute `r`, computed once
  // (CostsFor); with ZeRO-1 each layer's static bytes hold 1/D of its
  // optimizer state (StaticBytesOfParams). Errors: CostsFor's.
  StatusOr<const LayerCostTable*> Table(int64_t b, Recompute r);
  // Parameters of each layer of a table from Table() (its static bytes before
  // any ZeRO-1 sharding / StaticBytesPerParam).
  const std::vector<int64_t>& LayerParams(const LayerCostTable* table) const { return params_.at(table); }
  // The data-parallel model of this search (D, ZeRO-1, link, precision).
  const DataParallelSpec& data_parallel() const { return dp_; }

  // Evaluates `c` (schedule, v, batch, recompute already set) of `family` in
  // place: feasible with its predictions and artifacts, or rejected with a
  // RejectKind and the reason with its numbers.
  void Evaluate(Candidate& c, const ScheduleInfo& family, Recompute rc, const StageOverrides& overrides);

  // The best step of a feasible candidate evaluated so far (+inf if none).
  double best_step() const { return best_step_; }

 private:
  // The order of a fixed-order family does not depend on costs: its unit
  // program gives the memory walk for the partitioner. A memory-adaptive
  // family (zb-auto, zb-v) changes its order to fit the limit: its unit
  // program (no limit) is the order it prefers, and the walk of one
  // microbatch in flight (OneMicrobatchOrder) the least it can run in.
  struct UnitProgram {
    Status status;
    std::vector<int> stage_to_rank;
    std::shared_ptr<const MemoryProfile> profile;  // the family's order with no memory limit
    std::shared_ptr<const MemoryProfile> least;    // memory-adaptive families: OneMicrobatchOrder
  };
  // One candidate's shape and its layer costs as prefix sums.
  struct Layout {
    const LayerCostTable* table = nullptr;
    int P = 0, v = 0, S = 0, L = 0;
    const std::vector<int>* stage_to_rank = nullptr;
    std::vector<int64_t> static_prefix, act_prefix, stash_prefix;  // size L + 1
  };
  // A split and the per-rank peaks it gives under one memory walk.
  struct Split {
    bool fits = false;
    Boundaries boundaries;
    std::vector<int64_t> peaks, transient;
    int worst = 0;  // the rank with the largest peak
  };

  const UnitProgram& Unit(const ScheduleInfo& family, int v, int m);
  // The family's one-microbatch order (OneMicrobatchOrder) at v, once per
  // (family, v): `profile` is its walk, the least memory any order of the
  // family holds (every order runs at least one microbatch through all of a
  // rank's stages), so a split that does not fit it rejects the candidate
  // before the m-microbatch order is generated.
  const UnitProgram& Least(const ScheduleInfo& family, int v);
  // --layers-per-stage as boundaries; empty when not given. Errors
  // (InvalidArgument) when its counts do not fit S stages of L layers.
  StatusOr<Boundaries> GivenSplit(int S, int L) const;
  // Per-rank peak of split `b` under the walk `profile`: static + the walk's
  // peak + the largest recompute workspace of the rank's stages (written to
  // `transient`).
  std::vector<int64_t> RankPeaks(const Layout& lay, const MemoryProfile& profile, const Boundaries& b,
                                 std::vector<int64_t>* transient) const;
  // The split for walk `profile`: `start` (time-optimal or given) if it fits;
  // else (not `fixed`) a memory-aware one — exact for v = 1, each stage within
  // limit / v for v > 1; if none fits, `start` with fits = false.
  Split SplitFor(const Layout& lay, const MemoryProfile& profile, const Boundaries& start, bool fixed,
                 const StageOverrides& overrides) const;
  // Generates with the real costs, runs the pipeline chain and records the
  // prediction, or rejects `c`.
  void Simulate(Candidate& c, const ScheduleInfo& family, const Layout& lay, const UnitProgram& unit,
                const Split& split);
  // A lower bound of the step of any order of `m` microbatches on split `b`
  // (seconds), the larger of two:
  //  - the busiest rank's compute: sum over its stages of m (F + B);
  //  - Little's law on memory: microbatch j holds stage k's activation from
  //    the end of F(k, j) to the end of I(k, j), at least the chain
  //    sum_{s>k} (F_s + I_s) + I_k; the room left on k's rank (limit -
  //    static - workspace) holds at most K_k = floor(room / activation_k)
  //    of them at once, so the m microbatches take >= m chain_k / K_k.
  // Both hold for any schedule the simulator accepts (rule 7's memory).
  double LowerBound(const Layout& lay, const Boundaries& b, const std::vector<int64_t>& transient, int m) const;
  // Little's law before any order is generated, for every split at once:
  // true when some split of the layers into S stages lets each stage k
  // ([i, j)) hold the microbatches a step of `step` seconds needs in flight,
  //   floor((limit - static[i, j)) / activation[i, j)) >= m chain / step,
  //   chain = (F + I)[j, L) + I[i, j)
  // (LowerBound's second term, ignoring the other stages of the rank and
  // the workspace, so it only admits more). The condition is monotone in i
  // (a shorter stage holds less and waits less), so a DP over stages finds
  // such a split in O(S L + L log L).
  bool SomeSplitAdmits(const LayerCostTable& table, int S, int m, double step) const;
  // Rejects `c` as kBound when prune_by_bound and `bound` exceeds the step
  // to beat; returns true if rejected.
  bool PrunedByBound(Candidate& c, double bound, const char* what);
  // Fills c's predictions from a simulation of `lowered`.
  void Record(Candidate& c, const Program& lowered, const SimResult& sim, const std::vector<int64_t>& transient) const;

  const PlannerModel& model_;
  const PlannerOptions& opt_;
  int64_t limit_ = kUnlimitedBytes;
  std::map<std::pair<int64_t, int>, LayerCostTable> tables_;      // (b, recompute) -> costs
  std::map<const LayerCostTable*, std::vector<int64_t>> params_;  // per table: parameters of each layer
  DataParallelSpec dp_;
  double best_step_ = std::numeric_limits<double>::infinity();
  std::map<std::tuple<std::string, int, int>, UnitProgram> units_;  // (family, v, m)
  std::map<std::pair<std::string, int>, UnitProgram> least_;        // (family, v): one microbatch
  UnitOrders own_orders_;                                           // used when none is shared
  UnitOrders* orders_ = nullptr;                                    // the shared ones, or &own_orders_
};

// The tensor-parallel flags of `options` against the model and the device,
// before any costing: InvalidArgument naming the flag (T < 1, T not dividing
// heads / kv heads / ffn, T > gpus_per_node on a GPU, T > 1 without a HF
// config); notes (appended to `notes`) for allowed oddities (T above
// gpus_per_node on a CPU device). Planner-internal (planner.cc).
Status CheckTensorParallelRequest(const PlannerModel& model, const PlannerOptions& options,
                                  std::vector<std::string>* notes);

// EvaluateCandidates (planner.h) with the unit orders `orders` shared with
// other searches: the same result, with each unit order generated once for
// all of them.
StatusOr<SearchResult> EvaluateCandidates(const PlannerModel& model, const PlannerOptions& options, UnitOrders& orders);

}  // namespace pw
