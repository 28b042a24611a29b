// Checkpoints of a long run (torch-free part): directory layout, the manifest
// and the checks made before resuming. The tensors themselves are written by
// Engine::SaveCheckpoint / LoadCheckpoint (engine.h).
//
// Layout under --checkpoint-dir ROOT, one directory per saved step:
//   ROOT/step_000010/rank_0.pt ... rank_<P-1>.pt   each rank's stage parameters
//                                                  + AdamW state (temp + rename)
//   ROOT/step_000010/manifest.json                 written by rank 0 last, after
//                                                  every rank's file is in place
// A step directory without manifest.json is incomplete and never resumed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace pw::exec {

inline constexpr const char* kCheckpointFormat = "pipewright-checkpoint";
inline constexpr int kCheckpointVersion = 1;

struct CheckpointManifest {
  std::string plan_hash;  // PlanHash of the plan that wrote it
  std::string schedule;
  int pp_size = 0;
  int steps_done = 0;     // optimizer steps completed; the next step to run
  uint64_t seed = 0;      // --seed: data order and initial weights
  std::string dtype;      // "float32" | "float64"
  int64_t data_position = 0;  // sequences consumed = steps_done * batch rows
  std::vector<std::string> files;  // rank_<r>.pt, index = rank
};

// ROOT/step_<steps_done, 6 digits>.
std::string CheckpointStepDir(const std::string& root, int steps_done);
// File of `rank` inside a step directory.
std::string CheckpointRankFile(const std::string& step_dir, int rank);

// Writes step_dir/manifest.json atomically. Errors: InvalidArgument naming
// the file.
Status WriteManifest(const std::string& step_dir, const CheckpointManifest& manifest);
// Errors: NotFound (no manifest.json: not a complete checkpoint);
// InvalidArgument naming the file and field.
StatusOr<CheckpointManifest> ReadManifest(const std::string& step_dir);

// `path` is a step directory (holding manifest.json) or a root holding
// step_* directories: returns the step directory to resume from (the latest
// complete one). Errors: NotFound naming `path` (--resume).
StatusOr<std::string> ResolveResumeDir(const std::string& path);

// Refuses a checkpoint written for another plan, seed, dtype or world size,
// with the reason ("--resume DIR: checkpoint was written by plan 0123...
// (1f1b), this run's plan is 4567... (zb-h1)"). InvalidArgument.
Status CheckResumable(const CheckpointManifest& manifest, const std::string& step_dir, const std::string& plan_hash,
                      int pp_size, uint64_t seed, const std::string& dtype);

}  // namespace pw::exec
