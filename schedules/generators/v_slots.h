// Unit-slot grids of V-shape schedules (arXiv 2405.15362, "Pipeline
// Parallelism with Controllable Memory", Qi et al. 2024; the authors'
// repository sail-sg/zero-bubble-pipeline-parallelism, scheduler/
// zbv_greedy.py and v_auto_schedule.py). Internal to schedules/generators.
//
// A V-shape rank r (0-based, P ranks) holds chunk 0 = stage r and chunk 1 =
// stage 2P - 1 - r. Its six pass kinds are written with the paper's letters:
//   'F' forward of chunk 0      'f' forward of chunk 1
//   'B' input gradient (I) of chunk 1, 'b' I of chunk 0
//   'W' weight gradient of chunk 1,    'w' W of chunk 0
// A slot grid gives each rank one row of characters, one per unit time slot
// (' ' = idle). Memory in slot grids counts chunk activations: F/f +1,
// W/w -1 (an I frees nothing, the paper's accounting).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "schedules/registry.h"

namespace pw {

using SlotGrid = std::vector<std::string>;  // [rank] -> one char per slot

inline constexpr int kSlotPeriod = 6;                // slots per microbatch and rank: 2 chunks x (F, I, W)
inline constexpr const char* kSlotKinds = "FfBbWw";  // a pass kind's letter; index = kind

// Kind index of a grid character (its position in kSlotKinds), -1 for
// anything else (idle ' ', padding). Inline: the grid walks call it for
// every slot.
inline int SlotKind(char c) {
  for (int k = 0; k < kSlotPeriod; ++k)
    if (kSlotKinds[k] == c) return k;
  return -1;
}

// Turns a grid into a compute-only program for req (V placement, v = 2):
// each rank's passes in slot order, the k-th occurrence of a letter on a
// rank being microbatch k. The grid must hold every pass of every
// microbatch exactly once (the generators check it first).
Program ProgramFromSlots(const ScheduleRequest& req, const SlotGrid& grid);

// Peak of the activation count (F/f +1, W/w -1) over the row, chunk units.
int SlotPeak(const std::string& row);

// V-Half / V-Min through the fixed-block path of zbv_greedy.py: repeat the
// block `offsets` (per rank: slot of F, f, B, b of microbatch 0) every 6
// slots for m microbatches, move passes into earlier idle slots without
// raising the peak (once with W's placed, once with W's implicit), squeeze
// with unit costs, and place W's (chunk 1 first) in the idle slots.
SlotGrid FixedBlockSlots(int P, int m, const std::vector<std::array<int, 4>>& offsets);

// V-auto's construction for one building block (v_auto_schedule.py
// schedule_by_building_block): `block[r]` holds rank r's slots of
// F, f, B, b, W, w in a period of 6 (or -1). Repeat, squeeze, reorder the
// warm-up, drop the padding microbatches (m < 2P), reorder the cool-down,
// fill bubbles greedily without raising the peak. Returns false if the
// block's peak exceeds `max_mem` (chunk units) or 2P, or if the result is
// not a valid V schedule; else fills `out` and `peak`.
bool BlockSchedule(int P, int m, const std::vector<std::array<int, 6>>& block, int max_mem, SlotGrid* out, int* peak);

// The building blocks V-auto searches (v_auto_schedule.py schedule and
// get_building_block; paper Appendix A): the first rank's F at slot 0 and
// its f, B, b at distinct slots 1..5 (W, w in the first free slots after
// B, b), the next ranks shifted by uniform offsets [d, -1, d, -1] for the
// first len0 ranks and [d', -1, d', -1] (d' <= d) after, d, d' in 1..5.
// Calls visit(block) for each in the reference's order; visit returns true
// to end the scan over len0 for the current (pattern, d, d'), as the
// reference does once a block's peak passes the limit.
void ForEachVBlock(int P, const std::function<bool(const std::vector<std::array<int, 6>>&)>& visit);

}  // namespace pw
