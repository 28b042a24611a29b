// Static memory (parameters, gradients and optimizer state: docs/PLAN_FORMAT.md
// `stages[].memory_bytes.static`) of each rank, broken down by the layers
// its stages hold: the embedding, the decoder blocks, the head. ZB-V and the
// other V-shaped schedules put stage 0 (embedding) and the last stage (head)
// on rank 0; this makes that visible.
//
// Each stage's parts sum to the stage's static bytes exactly, and each
// rank's to the sum over its stages (what the memory walk starts at, rule 7).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/spec/footprint.h"

namespace pw {
struct Plan;
}

namespace pw::viz {

// The static bytes of one kind of layer within one stage.
struct StaticPart {
  LayerKind kind = LayerKind::kBlock;
  int first_block = 0;  // for blocks: decoder block indices [first_block, last_block]
  int last_block = 0;
  int64_t bytes = 0;
};

struct StageStatic {
  int stage = 0;
  int layer_begin = 0;  // half-open range into the plan's layer list
  int layer_end = 0;
  int64_t bytes = 0;              // the plan's stages[].memory_bytes.static
  std::vector<StaticPart> parts;  // in layer order; empty when the layer kinds are unknown
};

struct RankStatic {
  int rank = 0;
  int64_t bytes = 0;  // sum over its stages
  int64_t embedding_bytes = 0;
  int64_t block_bytes = 0;
  int num_blocks = 0;
  int64_t head_bytes = 0;
  std::vector<StageStatic> stages;  // ascending stage index
};

struct StaticBreakdown {
  std::vector<RankStatic> ranks;  // size pp_size; empty when the plan has no static bytes
  // True when every layer's share is its parameters held x bytes per
  // parameter of the plan's dtype and these sum to each stage's static
  // bytes; false when the stage bytes (e.g. measured by a profile) are
  // apportioned over its layers by parameters held.
  bool exact = false;
  bool by_layer = false;  // false: the plan has no model/layer list (stage totals only)
  std::string method;     // one sentence saying which of the above
};

// The breakdown of `plan` (a plan from `pipewright plan` has model, layers
// and training; a schedule-only plan gives stage totals only).
StaticBreakdown StaticMemoryOf(const Plan& plan);

// "blocks 3-5" / "block 7" / "embedding" / "head".
std::string PartName(const StaticPart& p);

}  // namespace pw::viz
