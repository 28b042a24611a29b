// Terminal timeline: one row per rank, time scaled by the real durations.
//
// Every compute action is drawn: the columns it covers are its start and end
// times rounded to the nearest column, and an action too short to keep a
// column of its own (when time is compressed) is put in the column of its
// midpoint. A column holding one action shows that action; a column holding
// several shows '*' (mixed); a column holding none shows '.' (idle).
//
// An action's columns read as its type letter (F, B, I, W) and then the
// lower-case letter to its end. Its microbatch is written either inline after
// the letter ("F3ff", "B12bbb") when every action on the drawing has room for
// its whole number and no column is mixed, or else downwards in ':' lines
// under each rank row, one line per decimal digit, under the action's letter
// (F over 1 over 2 = microbatch 12). Under a '*' column the ':' lines give
// the microbatch its actions share, blank when they have several. A number
// is never truncated, so microbatch 10 never reads like 11.
//
// When the whole step does not fit `width` columns at one column per shortest
// action, time is compressed (one column = makespan / available columns) and
// the header says so and names the width that draws every action in its own
// columns. SEND/RECV are not drawn (waits show as idle); see --format html or
// trace for the comm lanes.
#pragma once

#include <string>

#include "viz/timeline.h"

namespace pw::viz {

struct AsciiOptions {
  int width = 120;     // total columns of each line, labels included (>= 40)
  bool color = false;  // ANSI background colours per type (for a terminal)
  // A long step as a window (viz/window.h): warm-up and two steady-state
  // periods, a "~~~" cut, two periods and the cool-down. Used only when the
  // whole step would be compressed below one column per shortest action.
  bool window = true;
};

// The timeline, then a legend stating the conventions above, makespan, steady
// step, bubble ratio and per rank busy, idle and peak memory. Every line of
// the drawing (rank rows, ':' lines, time axis) is at most `width` columns;
// prose lines may be longer. Ends with a newline. Never fails: a timeline
// without compute time gives the title line and "(no compute time to draw)".
std::string RenderAscii(const Timeline& t, const AsciiOptions& options = {});

// The per-rank static memory lines of `t.static_memory` (embedding, blocks,
// head, and the stages), or "" when it is empty. RenderAscii ends with them.
std::string RenderStaticMemoryText(const Timeline& t);

}  // namespace pw::viz
