// Self-contained SVG of a timeline: one lane per rank with a block per compute
// action at its real start and width (microbatch number on the block, F/B/I/W
// colours), idle gaps drawn as hatched grey blocks exactly where the rank
// waits (never compacted away), an arrow per SEND -> RECV message, a memory
// over time curve per rank, and the summary numbers. Every block carries
// <title> hover text and data-* attributes (rank, action, start, end in
// seconds) so tests and scripts can check what is drawn.
//
// Views at any size:
// - A long step is drawn as a window (viz/window.h): warm-up and two
//   steady-state periods, a cut of kCutPx pixels marked "compressed" (class
//   "cut", with the hidden time and action count), then two periods and the
//   cool-down. Time maps to x piecewise linearly (SvgGeometry::X), so a block
//   crossing the cut is drawn up to its edge; blocks wholly inside it are not
//   drawn. A window is used when the shortest action would get fewer than
//   kMinActionPx pixels on the whole step.
// - Arrows: every message shown is drawn; when more than kMaxVisibleArrows
//   are shown they are hidden until the block that sends them is hovered
//   (CSS only, no script).
// - The critical path is a red bar under its blocks (class "critbar"), never
//   a fill or outline that hides the lane.
// - Memory strips share one axis from 0 to a round value just above the
//   highest peak (SvgGeometry::memory_top_bytes); the limit is drawn (dashed
//   red) only when the highest peak is at least kLimitNearShare of it, else
//   the title says how far below it the peak is. The static part (params,
//   grads, optimizer state: the walk's start) is shaded grey.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "viz/timeline.h"
#include "viz/window.h"

namespace pw::viz {

inline constexpr double kCutPx = 44;            // width of the compressed middle
inline constexpr double kMinActionPx = 5;       // below this the shortest action calls for a window
inline constexpr int kMaxVisibleArrows = 160;   // more shown messages: arrows on hover only
inline constexpr double kLimitNearShare = 0.8;  // draw the limit when peak >= this share of it

struct SvgOptions {
  int plot_width_px = 1100;  // pixels given to the time axis
  double time_extent_s = 0;  // time shown on the axis; 0 = the makespan (set it to align two timelines; no window then)
  bool window = true;        // a long step as a window with a compressed middle (false: the whole step)
  bool header = true;        // title and summary line (an HTML page has its own)
  bool arrows = true;        // SEND -> RECV arrows
  bool memory = true;        // memory curves below the lanes
  // Blocks to outline (critical path), by (rank, index in the rank's list).
  std::set<std::pair<int, int>> highlight;
};

// Where things are drawn: the view and the tests use the same numbers.
struct SvgGeometry {
  double x0 = 0;           // x of time 0
  double px_per_s = 0;     // pixels per second inside the shown spans
  double lane_top0 = 0;    // y of rank 0's lane top
  double lane_height = 0;  // block height
  double lane_pitch = 0;   // distance between lane tops
  double memory_top0 = 0;  // y of rank 0's memory strip top
  double memory_height = 0;
  double memory_pitch = 0;
  int width = 0;  // whole SVG
  int height = 0;
  TimeWindow window;             // what is shown (one span, or two around a cut of kCutPx)
  double plot_end_x = 0;         // x of the end of the time axis
  int64_t memory_top_bytes = 0;  // memory axis maximum (0 without memory strips)
  bool limit_drawn = false;      // the memory limit line is on the axis
  // x of a time: linear in each shown span; the hidden middle maps linearly
  // onto the cut (continuous, non-decreasing).
  double X(double seconds) const;
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
