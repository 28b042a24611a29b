// Terminal timeline: one row per rank, time scaled by the real durations.
//
// Each block prints as its type letter (F, B, I, W) followed by the
// microbatch number and then the lower-case letter for the rest of its width
// ("F3ff", "B12bbb"); idle time prints as '.'. When the whole step does not
// fit `width` columns at one column per shortest action, time is compressed
// (one column = makespan / width) and the header says so; a column then
// shows the block that covers most of it ('.' when idle covers most).
#pragma once

#include <string>

#include "launch/viz/timeline.h"

namespace pw::viz {

struct AsciiOptions {
  int width = 120;     // total columns of each line, labels included (>= 40)
  bool color = false;  // ANSI background colours per type (for a terminal)
};

// The timeline, then a legend with makespan, steady step, bubble ratio and per
// rank busy, idle and peak memory. Ends with a newline.
std::string RenderAscii(const Timeline& t, const AsciiOptions& options = {});

}  // namespace pw::viz
