// Stragglers: a rank whose compute is persistently slower than its peers'
// (docs/ELASTIC.md, "Stragglers"). Torch-free.
//
// Each step every rank's measured compute seconds (its F/B/I/W spans,
// StepReport::rank_busy_s) are divided by what the plan predicts for that
// rank (the simulator's busy seconds of its pipeline rank, the same for every
// replica), so that ranks with more work (a larger stage, the loss) are not
// taken for slow ones. A rank is slow in a step when its ratio exceeds
// `threshold` times the median ratio of the other ranks; it is a straggler
// when it was slow in each of the last `window` steps. The first step of a
// launch (warm-up: allocations, first touches) is not counted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "plan/plan.h"

namespace pw::exec {

struct StragglerOptions {
  // --straggler-threshold: slower than this many times the peers' median
  // (measured / planned compute); 0 = no check. Default 1.3: 30 % slower,
  // beyond the step-to-step noise of a shared machine.
  double threshold = 1.3;
  // --straggler-window: in each of this many consecutive steps.
  int window = 4;
};

// What the check found about one rank over the window that made it a
// straggler (means over the window's steps).
struct StragglerReport {
  int rank = -1;
  int first_step = 0, last_step = 0;  // the window, 1-based steps
  double compute_s = 0.0;             // its measured compute seconds per step
  double planned_s = 0.0;             // the plan's compute seconds per step for it
  double slowdown = 0.0;              // its measured / planned over the peers' median of the same
  double share = 0.0;                 // its compute seconds / the step's seconds
};

// "rank 2 on vm: compute 0.0412 s per step vs 0.0051 s planned, x1.87 its
// peers' (threshold 1.3), 41 % of the step, in each of steps 3-6" (`host`
// empty: no " on ...").
std::string DescribeStraggler(const StragglerReport& r, const std::string& host, double threshold);

// The plan's compute seconds per step of every world rank (pp_size x
// dp_size, rank g in pipeline rank g / dp_size): the simulated busy time of
// its pipeline rank. Errors: the simulator's (a plan that passed pre-flight
// simulates).
StatusOr<std::vector<double>> PlannedComputeSeconds(const Plan& plan);

class StragglerDetector {
 public:
  // `planned_s[g]`: PlannedComputeSeconds; a rank planned at 0 s is never
  // flagged.
  StragglerDetector(std::vector<double> planned_s, StragglerOptions options);

  // One step's measurement: `compute_s[g]` per world rank (same size as
  // planned_s), the step's seconds, and the step (0-based). Returns a
  // straggler the first time a rank has been slow in each of the last
  // `window` counted steps (each rank is returned once), else nullopt.
  // The first call is the warm-up step: recorded for nothing.
  std::optional<StragglerReport> Add(int step, const std::vector<double>& compute_s, double step_s);

  // Every straggler returned so far, in the order found.
  const std::vector<StragglerReport>& found() const { return found_; }
  // Per rank, the mean of measured / planned over the counted steps (0 when
  // none was counted): the summary's "compute vs plan" row.
  std::vector<double> MeanRatios() const;

 private:
  struct Seen {
    int step;
    double compute_s, slowdown, share;
  };
  std::vector<double> planned_;
  StragglerOptions options_;
  bool warm_ = false;
  std::vector<std::vector<Seen>> slow_;  // per rank: its current run of slow steps
  std::vector<double> ratio_sum_;
  int counted_ = 0;
  std::vector<bool> reported_;
  std::vector<StragglerReport> found_;
};

}  // namespace pw::exec
