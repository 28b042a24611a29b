// Self-contained SVG of a timeline: one lane per rank with a block per compute
// action at its real start and width (microbatch number on the block, F/B/I/W
// colours), idle gaps drawn as hatched grey blocks exactly where the rank
// waits (never compacted away), an arrow per SEND -> RECV message, a memory
// over time curve per rank with the limit line, and the summary numbers.
// Every block carries <title> hover text and data-* attributes (rank, action,
// start, end in seconds) so tests and scripts can check what is drawn.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "viz/timeline.h"

namespace pw::viz {

struct SvgOptions {
  int plot_width_px = 1100;   // pixels given to the time axis
  double time_extent_s = 0;   // time shown on the axis; 0 = the makespan (set it to align two timelines)
  bool arrows = true;         // SEND -> RECV arrows
  bool memory = true;         // memory curves below the lanes
  // Blocks to outline (critical path), by (rank, index in the rank's list).
  std::set<std::pair<int, int>> highlight;
};

// Where things are drawn: the view and the tests use the same numbers.
struct SvgGeometry {
  double x0 = 0;           // x of time 0
  double px_per_s = 0;     // pixels per second
  double lane_top0 = 0;    // y of rank 0's lane top
  double lane_height = 0;  // block height
  double lane_pitch = 0;   // distance between lane tops
  double memory_top0 = 0;  // y of rank 0's memory strip top
  double memory_height = 0;
  double memory_pitch = 0;
  int width = 0;           // whole SVG
  int height = 0;
  double X(double seconds) const { return x0 + seconds * px_per_s; }
  double LaneTop(int rank) const { return lane_top0 + rank * lane_pitch; }
};

// Fill colours (#rrggbb) of each compute type and of idle time.
const char* BlockColor(ActionType type);
// The same, lighter for a rank's odd-numbered local stage (chunk 1, 3, ...).
const char* BlockColor(ActionType type, int chunk);
inline constexpr const char* kIdleColor = "#d9d9d9";

// The geometry RenderSvg uses for `t` and `options`.
SvgGeometry LayoutSvg(const Timeline& t, const SvgOptions& options = {});

// The <svg> element (no XML prolog, so it can be inlined in HTML).
std::string RenderSvg(const Timeline& t, const SvgOptions& options = {});

// A standalone .svg file: XML prolog + RenderSvg.
std::string SvgDocument(const Timeline& t, const SvgOptions& options = {});

}  // namespace pw::viz
