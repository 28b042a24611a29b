#include "viz/svg_timeline.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace pw::viz {

namespace {

constexpr double kLeft = 80;    // room for lane labels
constexpr double kRight = 210;  // room for per-rank numbers
constexpr double kHeader = 64;  // title + summary lines
constexpr double kLaneHeight = 24;
constexpr double kLanePitch = 34;
constexpr double kReduceBarHeight = 4;  // REDUCE_GRAD bars, in the gap under a lane, below the critical-path bar
constexpr const char* kReduceColor = "#8e44ad";  // purple: the critical path is red
constexpr double kAxis = 36;                     // tick labels under the lanes
constexpr double kMemHeight = 44;
constexpr double kMemPitch = 56;
constexpr double kLegend = 40;
constexpr const char* kPairOutline = "#1a1a1a";  // the outline that joins an OVERLAP_F_B pair's halves

// Pixel coordinates: 3 decimals, trailing zeros dropped (deterministic).
std::string N(double x) {
  if (std::fabs(x) < 5e-4) x = 0;
  std::string s = StrFormat("%.3f", x);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// Seconds in data-* attributes: 10 significant digits.
std::string T(double seconds) { return StrFormat("%.10g", seconds); }

// Idle intervals of a rank inside [0, end]: the gaps between its compute blocks.
std::vector<std::pair<double, double>> IdleIntervals(const TimelineRank& r, double end) {
  std::vector<std::pair<double, double>> blocks;
  for (const TimelineBlock& b : r.compute) blocks.push_back({b.start, b.end});
  std::sort(blocks.begin(), blocks.end());
  std::vector<std::pair<double, double>> idle;
  double t = 0;
  for (const auto& [s, e] : blocks) {
    if (s > t + 1e-12) idle.push_back({t, s});
    t = std::max(t, e);
  }
  if (end > t + 1e-12) idle.push_back({t, end});
  return idle;
}

}  // namespace

const char* BlockColor(ActionType type) {
  switch (type) {
    case ActionType::kF:
      return "#4e79a7";  // blue
    case ActionType::kB:
      return "#59a14f";  // green
    case ActionType::kI:
      return "#f28e2b";  // orange
    case ActionType::kW:
      return "#9c6fb6";  // purple
    default:
      return "#888888";
  }
}

const char* BlockColor(ActionType type, int chunk) {
  if (chunk % 2 == 0) return BlockColor(type);
  switch (type) {
    case ActionType::kF:
      return "#86a9cf";  // light blue
    case ActionType::kB:
      return "#8cc97f";  // light green
    case ActionType::kI:
      return "#f7b36b";  // light orange
    case ActionType::kW:
      return "#c3a3d6";  // light purple
    default:
      return "#aaaaaa";
  }
}

double SvgGeometry::X(double seconds) const {
  if (window.spans.empty()) return x0 + seconds * px_per_s;
  const auto& first = window.spans.front();
  if (!window.Compressed() || seconds <= first.second) return x0 + (seconds - first.first) * px_per_s;
  const double cut_x = x0 + (first.second - first.first) * px_per_s;
  const double hb = window.HiddenBegin(), he = window.HiddenEnd();
  if (seconds < he) return cut_x + kCutPx * (seconds - hb) / (he - hb);
  return cut_x + kCutPx + (seconds - he) * px_per_s;
}

SvgGeometry LayoutSvg(const Timeline& t, const SvgOptions& o) {
  SvgGeometry g;
  const double extent = o.time_extent_s > 0 ? o.time_extent_s : t.makespan_s;
  g.window =
      o.window && o.time_extent_s <= 0 ? ChooseWindow(t, o.plot_width_px, kMinActionPx) : TimeWindow{{{0.0, extent}}};
  const double cut = g.window.Compressed() ? kCutPx : 0;
  const double shown = g.window.ShownSeconds();
  g.x0 = kLeft;
  g.px_per_s = shown > 0 ? (o.plot_width_px - cut) / shown : 0;
  g.plot_end_x = kLeft + o.plot_width_px;
  const double header = o.header ? kHeader : 16;
  g.lane_top0 = header;
  g.lane_height = kLaneHeight;
  g.lane_pitch = kLanePitch;
  double lanes_end = header + t.pp_size * kLanePitch + kAxis;
  bool memory =
      o.memory && std::any_of(t.ranks.begin(), t.ranks.end(), [](const TimelineRank& r) { return !r.memory.empty(); });
  const bool compact = t.pp_size > 8;
  g.memory_top0 = lanes_end + 30;
  g.memory_height = memory ? (compact ? kMemHeight * 0.7 : kMemHeight) : 0;
  g.memory_pitch = memory ? (compact ? kMemPitch * 0.7 : kMemPitch) : 0;
  if (memory) {
    int64_t peak = 1;
    for (const TimelineRank& tr : t.ranks) peak = std::max(peak, tr.peak_memory_bytes);
    g.limit_drawn = t.memory_limit_bytes && *t.memory_limit_bytes > 0 &&
                    double(peak) >= kLimitNearShare * double(*t.memory_limit_bytes);
    const double want = g.limit_drawn ? std::max<double>(peak, *t.memory_limit_bytes) * 1.02 : peak * 1.05;
    // A round top in the unit the labels use (KiB/MiB/GiB steps for bytes).
    double unit = double(t.memory_unit_bytes);
    if (t.memory_unit_bytes == 1 && t.memory_unit_name == "B")
      while (want / unit >= 1024) unit *= 1024;
    const double step = NiceStep(want / unit / 20) * unit;  // top < 1.125 want
    g.memory_top_bytes = static_cast<int64_t>(std::ceil(want / step - 1e-9) * step);
    g.memory_top_bytes = std::max<int64_t>(g.memory_top_bytes, peak);
  }
  double end = memory ? g.memory_top0 + t.pp_size * g.memory_pitch : lanes_end;
  g.width = static_cast<int>(kLeft + o.plot_width_px + kRight);
  g.height = static_cast<int>(end + kLegend);
  return g;
}

namespace {

// The compute block that sends message `m` (the F, B or I of its stage and
// microbatch on the sending rank), as an index into the rank's compute list;
// -1 if none.
int SenderBlock(const Timeline& t, const TimelineMessage& m) {
  const bool fwd = m.send.type == ActionType::kSendF;
  const auto& blocks = t.ranks[m.src_rank].compute;
  for (size_t k = 0; k < blocks.size(); ++k) {
    // A pair sends what either half produces: look at its F half for a
    // forward message and at its B half for a backward one.
    const Action a = fwd ? ForwardHalf(blocks[k].action) : BackwardHalf(blocks[k].action);
    if (a.stage != m.send.stage || a.microbatch != m.send.microbatch) continue;
    if (fwd ? a.type == ActionType::kF : (a.type == ActionType::kB || a.type == ActionType::kI))
      return static_cast<int>(k);
  }
  return -1;
}

// Index of `stage` among the rank's stages (0 for its first): the colour shade.
int ChunkOf(const TimelineRank& tr, int stage) {
  return static_cast<int>(std::find(tr.stages.begin(), tr.stages.end(), stage) - tr.stages.begin());
}

// An OVERLAP_F_B pair: one action, so one outlined box, split into its F
// half (left, forward colour, F's microbatch) and its B half (right, backward
// colour, B's microbatch) with a "&" where they join, under a dark outline;
// the block rect (class "blk OVERLAP_F_B", hover title) is transparent on top.
std::string PairBlock(int r, const TimelineBlock& b, double x, double y, double w, int f_chunk, int b_chunk, bool hi,
                      const std::string& title, const std::string& t0, const std::string& t1) {
  const double h = w / 2;
  const std::string fmb = std::to_string(b.action.microbatch), bmb = std::to_string(b.action.b_microbatch);
  const std::string name = b.action.ToString();
  std::string s = "<g class=\"pair\" data-rank=\"" + std::to_string(r) + "\" data-action=\"" + name + "\">";
  s += "<rect class=\"half F\" x=\"" + N(x) + "\" y=\"" + N(y) + "\" width=\"" + N(h) + "\" height=\"" +
       N(kLaneHeight) + "\" fill=\"" + BlockColor(ActionType::kF, f_chunk) + "\"/>";
  s += "<rect class=\"half B\" x=\"" + N(x + h) + "\" y=\"" + N(y) + "\" width=\"" + N(w - h) + "\" height=\"" +
       N(kLaneHeight) + "\" fill=\"" + BlockColor(ActionType::kB, b_chunk) + "\"/>";
  const auto text = [&](double cx, const std::string& label) {
    return "<text class=\"mb\" x=\"" + N(cx) + "\" y=\"" + N(y + kLaneHeight / 2) +
           "\" text-anchor=\"middle\" dominant-baseline=\"central\" fill=\"#ffffff\" font-size=\"11\" "
           "pointer-events=\"none\">" +
           label + "</text>";
  };
  if (h >= 7.0 * std::max(fmb.size(), bmb.size()) + 6) {
    s += text(x + h / 2, fmb) + text(x + h + (w - h) / 2, bmb);
    s += "<text class=\"join\" x=\"" + N(x + h) + "\" y=\"" + N(y + kLaneHeight / 2) +
         "\" text-anchor=\"middle\" dominant-baseline=\"central\" fill=\"#111\" font-size=\"10\" "
         "font-weight=\"bold\" pointer-events=\"none\">&amp;</text>";
  }
  // The outline (inset by half its width, so it stays inside the block),
  // then the block itself on top: exact geometry, transparent, hover title.
  s += "<rect class=\"pairbox\" x=\"" + N(x + 0.75) + "\" y=\"" + N(y + 0.75) + "\" width=\"" +
       N(std::max(0.5, w - 1.5)) + "\" height=\"" + N(kLaneHeight - 1.5) + "\" rx=\"3\" fill=\"none\" stroke=\"" +
       kPairOutline + "\" stroke-width=\"1.5\" pointer-events=\"none\"/>";
  s += "<rect class=\"blk OVERLAP_F_B" + std::string(hi ? " crit" : "") + "\" data-rank=\"" + std::to_string(r) +
       "\" data-action=\"" + name + "\" data-start=\"" + t0 + "\" data-end=\"" + t1 + "\" x=\"" + N(x) + "\" y=\"" +
       N(y) + "\" width=\"" + N(w) + "\" height=\"" + N(kLaneHeight) +
       "\" fill=\"#ffffff\" fill-opacity=\"0\"><title>" + title + "</title></rect></g>\n";
  return s;
}

}  // namespace

std::string RenderSvg(const Timeline& t, const SvgOptions& o) {
  const SvgGeometry g = LayoutSvg(t, o);
  const TimeWindow& win = g.window;
  // Messages drawn: both ends outside the hidden middle.
  std::vector<const TimelineMessage*> shown_msgs;
  if (o.arrows)
    for (const TimelineMessage& m : t.messages)
      if (!(win.Compressed() && ((m.sent_s > win.HiddenBegin() && m.sent_s < win.HiddenEnd()) ||
                                 (m.available_s > win.HiddenBegin() && m.available_s < win.HiddenEnd()))))
        shown_msgs.push_back(&m);
  const bool hover_arrows = static_cast<int>(shown_msgs.size()) > kMaxVisibleArrows;
  std::string s = StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
      "%d\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n",
      hover_arrows ? " arrows-on-hover" : "", g.width, g.height, g.width, g.height);
  s += "<defs>\n"
       "<pattern id=\"idlehatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"" +
       std::string(kIdleColor) +
       "\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bdbdbd\" stroke-width=\"1.5\"/></pattern>\n"
       "<marker id=\"arrowhead\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" "
       "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#444\"/></marker>\n"
       "<style>rect.blk:hover{stroke:#000;stroke-width:2} line.msg:hover{stroke:#d00;stroke-opacity:1}"
       " .arrows-on-hover g.sends line.msg{visibility:hidden}"
       " .arrows-on-hover g.sends:hover line.msg{visibility:visible;stroke:#d00;stroke-opacity:1}"
       " g.sends:hover rect.hit{stroke:#000;stroke-width:2}</style>\n"
       "</defs>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(g.width) + "\" height=\"" + std::to_string(g.height) +
       "\" fill=\"#ffffff\"/>\n";
  if (o.header) {
    s += "<text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">" + XmlEscape(t.title) + "</text>\n";
    s += "<text class=\"summary\" x=\"10\" y=\"44\">" +
         XmlEscape(StrFormat(
             "%s: P=%d%s, S=%d, m=%d | makespan %s | steady step %s | bubble ratio %.4f", t.kind.c_str(), t.pp_size,
             t.tp_size > 1 ? StrFormat(" (x T=%d per lane)", t.tp_size).c_str() : "", t.num_stages, t.num_microbatches,
             FormatSeconds(t.makespan_s).c_str(), FormatSeconds(t.steady_step_s).c_str(), t.bubble_ratio)) +
         "</text>\n";
  }

  // The hover text of a block, shared by the block and its hover target.
  auto block_title = [&](int r, const TimelineBlock& b, bool hi) {
    if (IsOverlap(b.action.type))
      return XmlEscape(
          StrFormat("rank %d: %s, an overlapped pair run as one action: F of stage %d microbatch %d with B of "
                    "stage %d microbatch %d, %s .. %s, %s%s",
                    r, b.action.ToString().c_str(), b.action.stage, b.action.microbatch, b.action.b_stage,
                    b.action.b_microbatch, FormatSeconds(b.start).c_str(), FormatSeconds(b.end).c_str(),
                    FormatSeconds(b.end - b.start).c_str(), hi ? ", on the critical path" : ""));
    return XmlEscape(StrFormat("rank %d: %s (stage %d, microbatch %d) %s .. %s, %s%s", r, b.action.ToString().c_str(),
                               b.action.stage, b.action.microbatch, FormatSeconds(b.start).c_str(),
                               FormatSeconds(b.end).c_str(), FormatSeconds(b.end - b.start).c_str(),
                               hi ? ", on the critical path" : ""));
  };

  // Lanes: idle first (underneath), then blocks, then the critical-path bars.
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    double y = g.LaneTop(r);
    s += StrFormat("<text x=\"10\" y=\"%s\" dominant-baseline=\"middle\">rank %d</text>\n",
                   N(y + kLaneHeight / 2).c_str(), r);
    for (const auto& [a, b] : IdleIntervals(tr, t.makespan_s)) {
      if (win.Hides(a, b)) continue;
      s += "<rect class=\"idle\" data-rank=\"" + std::to_string(r) + "\" data-start=\"" + T(a) + "\" data-end=\"" +
           T(b) + "\" x=\"" + N(g.X(a)) + "\" y=\"" + N(y) + "\" width=\"" + N(g.X(b) - g.X(a)) + "\" height=\"" +
           N(kLaneHeight) + "\" fill=\"url(#idlehatch)\"><title>" +
           XmlEscape(StrFormat("rank %d idle %s .. %s (%s)", r, FormatSeconds(a).c_str(), FormatSeconds(b).c_str(),
                               FormatSeconds(b - a).c_str())) +
           "</title></rect>\n";
    }
    std::string bars;
    for (const TimelineBlock& b : tr.compute) {
      if (win.Hides(b.start, b.end)) continue;
      double x = g.X(b.start), w = g.X(b.end) - x;
      int chunk = static_cast<int>(std::find(tr.stages.begin(), tr.stages.end(), b.action.stage) - tr.stages.begin());
      std::string name = b.action.ToString();
      bool hi = o.highlight.count({r, b.index}) > 0;
      if (IsOverlap(b.action.type)) {
        s += PairBlock(r, b, x, y, w, ChunkOf(tr, b.action.stage), ChunkOf(tr, b.action.b_stage), hi,
                       block_title(r, b, hi), T(b.start), T(b.end));
        if (hi)
          bars += "<rect class=\"critbar\" data-rank=\"" + std::to_string(r) + "\" data-action=\"" + name + "\" x=\"" +
                  N(x) + "\" y=\"" + N(y + kLaneHeight + 1.5) + "\" width=\"" + N(w) +
                  "\" height=\"3\" fill=\"#d62728\" pointer-events=\"none\"/>\n";
        continue;
      }
      s += "<rect class=\"blk " + std::string(ActionTypeName(b.action.type)) + (hi ? " crit" : "") + "\" data-rank=\"" +
           std::to_string(r) + "\" data-action=\"" + name + "\" data-start=\"" + T(b.start) + "\" data-end=\"" +
           T(b.end) + "\" x=\"" + N(x) + "\" y=\"" + N(y) + "\" width=\"" + N(w) + "\" height=\"" + N(kLaneHeight) +
           "\" fill=\"" + BlockColor(b.action.type, chunk) + "\" stroke=\"#ffffff\" stroke-width=\"" +
           (w >= 3 ? "0.5" : "0") + "\"><title>" + block_title(r, b, hi) + "</title></rect>\n";
      std::string label = std::to_string(b.action.microbatch);
      if (w >= 7.0 * label.size() + 2)
        s += "<text class=\"mb\" x=\"" + N(x + w / 2) + "\" y=\"" + N(y + kLaneHeight / 2) +
             "\" text-anchor=\"middle\" dominant-baseline=\"central\" fill=\"#ffffff\" font-size=\"11\" "
             "pointer-events=\"none\">" +
             label + "</text>\n";
      if (hi)
        bars += "<rect class=\"critbar\" data-rank=\"" + std::to_string(r) + "\" data-action=\"" + name + "\" x=\"" +
                N(x) + "\" y=\"" + N(y + kLaneHeight + 1.5) + "\" width=\"" + N(w) +
                "\" height=\"3\" fill=\"#d62728\" pointer-events=\"none\"/>\n";
    }
    s += bars;
    // Data-parallel gradient reductions (REDUCE_GRAD): a thin bar in the gap
    // under the lane, from the reduction's start to its end (its own lane:
    // it overlaps the rank's later compute).
    for (const TimelineBlock& b : tr.comm) {
      if (!IsReduceGrad(b.action.type) || win.Hides(b.start, b.end)) continue;
      const std::string name = b.action.ToString();
      s += "<rect class=\"blk REDUCE_GRAD\" data-rank=\"" + std::to_string(r) + "\" data-action=\"" + name +
           "\" data-start=\"" + T(b.start) + "\" data-end=\"" + T(b.end) + "\" x=\"" + N(g.X(b.start)) + "\" y=\"" +
           N(y + kLaneHeight + 5.5) + "\" width=\"" + N(std::max(1.0, g.X(b.end) - g.X(b.start))) + "\" height=\"" +
           N(kReduceBarHeight) + "\" fill=\"" + kReduceColor + "\"><title>" +
           XmlEscape(StrFormat("rank %d: %s (gradient reduction of stage %d over its data-parallel group) %s .. %s, %s",
                               r, name.c_str(), b.action.stage, FormatSeconds(b.start).c_str(),
                               FormatSeconds(b.end).c_str(), FormatSeconds(b.end - b.start).c_str())) +
           "</title></rect>\n";
    }
    s += StrFormat("<text x=\"%s\" y=\"%s\" dominant-baseline=\"middle\" fill=\"#333\">busy %s, idle %.1f%%</text>\n",
                   N(g.plot_end_x + 8).c_str(), N(y + kLaneHeight / 2).c_str(), FormatSeconds(tr.busy_s).c_str(),
                   t.makespan_s > 0 ? 100.0 * tr.idle_s / t.makespan_s : 0.0);
  }

  // Messages: from the sender's lane at the post time to the receiver's lane
  // when the data is there. Drawn after every lane (on top); when there are
  // many, each sending block gets a transparent hover target in a group with
  // its arrows, which show only while it is hovered.
  auto arrow = [&](const TimelineMessage& m) {
    bool down = m.dst_rank > m.src_rank;
    double y1 = g.LaneTop(m.src_rank) + (down ? kLaneHeight : 0);
    double y2 = g.LaneTop(m.dst_rank) + (down ? 0 : kLaneHeight);
    return "<line class=\"msg\" data-send=\"" + m.send.ToString() + "\" data-recv=\"" + m.recv.ToString() + "\" x1=\"" +
           N(g.X(m.sent_s)) + "\" y1=\"" + N(y1) + "\" x2=\"" + N(g.X(m.available_s)) + "\" y2=\"" + N(y2) +
           "\" stroke=\"#444\" stroke-opacity=\"0.55\" stroke-width=\"1\" marker-end=\"url(#arrowhead)\">" + "<title>" +
           XmlEscape(StrFormat("%s (rank %d) -> %s (rank %d): posted %s, available %s", m.send.ToString().c_str(),
                               m.src_rank, m.recv.ToString().c_str(), m.dst_rank, FormatSeconds(m.sent_s).c_str(),
                               FormatSeconds(m.available_s).c_str())) +
           "</title></line>\n";
  };
  if (!hover_arrows) {
    for (const TimelineMessage* m : shown_msgs) s += arrow(*m);
  } else {
    std::map<std::pair<int, int>, std::vector<const TimelineMessage*>> by_sender;
    std::vector<const TimelineMessage*> orphans;
    for (const TimelineMessage* m : shown_msgs) {
      int k = SenderBlock(t, *m);
      if (k < 0)
        orphans.push_back(m);
      else
        by_sender[{m->src_rank, k}].push_back(m);
    }
    for (const auto& [key, msgs] : by_sender) {
      const TimelineBlock& b = t.ranks[key.first].compute[key.second];
      const double x = g.X(b.start);
      s += "<g class=\"sends\"><rect class=\"hit\" x=\"" + N(x) + "\" y=\"" + N(g.LaneTop(key.first)) + "\" width=\"" +
           N(g.X(b.end) - x) + "\" height=\"" + N(kLaneHeight) + "\" fill=\"#ffffff\" fill-opacity=\"0\"><title>" +
           block_title(key.first, b, o.highlight.count({key.first, b.index}) > 0) + "</title></rect>\n";
      for (const TimelineMessage* m : msgs) s += arrow(*m);
      s += "</g>\n";
    }
    for (const TimelineMessage* m : orphans) s += "<g class=\"sends\">" + arrow(*m) + "</g>\n";
  }

  // Time axis: ticks in each shown span, at one step.
  double axis_y = g.LaneTop(t.pp_size - 1) + kLaneHeight + 8;
  double step = NiceStep(win.ShownSeconds() / 12);
  for (const auto& [a, b] : win.spans) {
    s += "<line x1=\"" + N(g.X(a)) + "\" y1=\"" + N(axis_y) + "\" x2=\"" + N(g.X(b)) + "\" y2=\"" + N(axis_y) +
         "\" stroke=\"#000\"/>\n";
    for (long k = static_cast<long>(std::ceil(a / step - 1e-9)); k * step <= b * (1 + 1e-9) && step > 0; ++k) {
      double x = g.X(k * step);
      if (win.Compressed() && ((a > 0 && x < g.X(a) + 14) || (a == 0 && x > g.X(b) - 14 && k > 0))) continue;
      s += "<line x1=\"" + N(x) + "\" y1=\"" + N(axis_y) + "\" x2=\"" + N(x) + "\" y2=\"" + N(axis_y + 4) +
           "\" stroke=\"#000\"/><text x=\"" + N(x) + "\" y=\"" + N(axis_y + 16) + "\" text-anchor=\"middle\">" +
           XmlEscape(FormatSeconds(k * step)) + "</text>\n";
    }
  }

  // Memory curves.
  if (g.memory_height > 0) {
    const int64_t top = g.memory_top_bytes;
    int64_t peak = 0;
    for (const TimelineRank& tr : t.ranks) peak = std::max(peak, tr.peak_memory_bytes);
    std::string limit_note;
    if (t.memory_limit_bytes && g.limit_drawn)
      limit_note = "; dashed red: the limit, " + FormatMemory(t, *t.memory_limit_bytes);
    else if (t.memory_limit_bytes)
      limit_note = StrFormat("; limit %s, above the axis (highest peak %.0f%% of it)",
                             FormatMemory(t, *t.memory_limit_bytes).c_str(),
                             100.0 * double(peak) / double(*t.memory_limit_bytes));
    s += "<text class=\"memtitle\" x=\"10\" y=\"" + N(g.memory_top0 - 10) +
         "\"><tspan font-weight=\"bold\">memory in use per rank</tspan> (each strip 0 .. " +
         XmlEscape(FormatMemory(t, top)) + "; grey: static, i.e. params, grads, optimizer state" +
         XmlEscape(limit_note) + ")</text>\n";
    for (int r = 0; r < t.pp_size; ++r) {
      const TimelineRank& tr = t.ranks[r];
      double y0 = g.memory_top0 + r * g.memory_pitch;
      auto Y = [&](int64_t b) { return y0 + g.memory_height * (1.0 - double(b) / double(top)); };
      s += StrFormat("<text x=\"10\" y=\"%s\" dominant-baseline=\"middle\">rank %d</text>\n",
                     N(y0 + g.memory_height / 2).c_str(), r);
      s += "<rect x=\"" + N(g.X(0)) + "\" y=\"" + N(y0) + "\" width=\"" + N(g.plot_end_x - g.X(0)) + "\" height=\"" +
           N(g.memory_height) + "\" fill=\"#f7f7f7\" stroke=\"#ccc\"/>\n";
      if (!tr.memory.empty()) {
        const int64_t base = tr.memory.front().bytes;  // the walk's start: static bytes
        if (base > 0)
          s += "<rect class=\"static\" data-rank=\"" + std::to_string(r) + "\" x=\"" + N(g.X(0)) + "\" y=\"" +
               N(Y(base)) + "\" width=\"" + N(g.plot_end_x - g.X(0)) + "\" height=\"" +
               N(y0 + g.memory_height - Y(base)) + "\" fill=\"#dddddd\"><title>" +
               XmlEscape(StrFormat("rank %d static %s", r, FormatMemory(t, base).c_str())) + "</title></rect>\n";
        std::string pts;
        int64_t cur = base;
        pts += N(g.X(0)) + "," + N(Y(cur));
        double last_x = g.X(0);
        for (const MemoryPoint& p : tr.memory) {
          double x = g.X(p.time);
          if (x - last_x >= 0.25 || p.bytes != cur) {
            pts += " " + N(x) + "," + N(Y(cur));
            cur = p.bytes;
            pts += " " + N(x) + "," + N(Y(cur));
            last_x = x;
          }
        }
        pts += " " + N(g.X(t.makespan_s)) + "," + N(Y(cur));
        s += "<polyline class=\"mem\" data-rank=\"" + std::to_string(r) + "\" points=\"" + pts +
             "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"><title>" +
             XmlEscape(StrFormat("rank %d peak memory %s", r, FormatMemory(t, tr.peak_memory_bytes).c_str())) +
             "</title></polyline>\n";
      }
      if (t.memory_limit_bytes && g.limit_drawn)
        s += "<line class=\"limit\" x1=\"" + N(g.X(0)) + "\" y1=\"" + N(Y(*t.memory_limit_bytes)) + "\" x2=\"" +
             N(g.plot_end_x) + "\" y2=\"" + N(Y(*t.memory_limit_bytes)) +
             "\" stroke=\"#d62728\" stroke-dasharray=\"5,3\"/>\n";
      s += "<text x=\"" + N(g.plot_end_x + 8) + "\" y=\"" + N(y0 + g.memory_height / 2) +
           "\" dominant-baseline=\"middle\" fill=\"#333\">peak " + XmlEscape(FormatMemory(t, tr.peak_memory_bytes)) +
           "</text>\n";
    }
  }

  // The compressed middle: a band over lanes and memory strips with zigzag
  // edges, the hidden time and how many actions each rank runs in it.
  if (win.Compressed()) {
    const double x1 = g.X(win.HiddenBegin()), x2 = x1 + kCutPx;
    const double ytop = g.LaneTop(0) - 4;
    const double ybot = g.memory_height > 0 ? g.memory_top0 + t.pp_size * g.memory_pitch : axis_y + 20;
    int hidden = 0;
    for (int r = 0; r < t.pp_size; ++r) hidden = std::max(hidden, win.HiddenActions(t, r));
    std::string what =
        StrFormat("%s of steady state compressed here (%s .. %s; up to %d actions per rank not drawn)",
                  FormatSeconds(win.HiddenEnd() - win.HiddenBegin()).c_str(), FormatSeconds(win.HiddenBegin()).c_str(),
                  FormatSeconds(win.HiddenEnd()).c_str(), hidden);
    s += "<g class=\"cut\" data-hidden-start=\"" + T(win.HiddenBegin()) + "\" data-hidden-end=\"" + T(win.HiddenEnd()) +
         "\" data-hidden-actions=\"" + std::to_string(hidden) + "\"><title>" + XmlEscape(what) + "</title>\n";
    // White over the lanes and axis, and over the memory strips (not their title).
    const double lanes_bot = axis_y + 20;
    s += "<rect x=\"" + N(x1) + "\" y=\"" + N(ytop) + "\" width=\"" + N(kCutPx) + "\" height=\"" + N(lanes_bot - ytop) +
         "\" fill=\"#ffffff\"/>\n";
    if (g.memory_height > 0)
      s += "<rect x=\"" + N(x1) + "\" y=\"" + N(g.memory_top0 - 2) + "\" width=\"" + N(kCutPx) + "\" height=\"" +
           N(ybot - g.memory_top0 + 2) + "\" fill=\"#ffffff\"/>\n";
    for (double ex : {x1 + 3, x2 - 3}) {
      for (auto [ya, yb] : {std::pair{ytop, lanes_bot - 16}, std::pair{g.memory_top0 - 2, ybot}}) {
        if (yb <= ya) continue;
        std::string zig = N(ex) + "," + N(ya);
        int k = 0;
        for (double yy = ya + 6; yy < yb; yy += 6, ++k) zig += " " + N(ex + (k % 2 ? -3 : 3)) + "," + N(yy);
        s += "<polyline points=\"" + zig + "\" fill=\"none\" stroke=\"#777\" stroke-width=\"1\"/>\n";
      }
    }
    const double cy = (g.LaneTop(0) + g.LaneTop(t.pp_size - 1) + kLaneHeight) / 2, cx = (x1 + x2) / 2;
    s +=
        "<text x=\"" + N(cx) + "\" y=\"" + N(cy) +
        "\" text-anchor=\"middle\" dominant-baseline=\"central\" "
        "font-size=\"11\" fill=\"#333\" transform=\"rotate(-90 " +
        N(cx) + " " + N(cy) + ")\">" +
        XmlEscape(StrFormat("\xE2\x89\x88 %s compressed", FormatSeconds(win.HiddenEnd() - win.HiddenBegin()).c_str())) +
        "</text>\n";
    s += "<text x=\"" + N(cx) + "\" y=\"" + N(axis_y + 16) +
         "\" text-anchor=\"middle\" fill=\"#333\">"
         "\xE2\x80\xA6</text>\n</g>\n";
  }

  // Legend.
  double ly = g.height - kLegend + 22;
  double lx = 10;
  for (ActionType a : {ActionType::kF, ActionType::kB, ActionType::kI, ActionType::kW}) {
    static const char* names[] = {"F forward", "B full backward", "I input-grad backward", "W weight-grad backward"};
    int k = a == ActionType::kF ? 0 : a == ActionType::kB ? 1 : a == ActionType::kI ? 2 : 3;
    s += "<rect x=\"" + N(lx) + "\" y=\"" + N(ly - 10) + "\" width=\"14\" height=\"14\" fill=\"" + BlockColor(a) +
         "\"/><text x=\"" + N(lx + 18) + "\" y=\"" + N(ly + 1) + "\">" + names[k] + "</text>\n";
    lx += k == 0 ? 100 : k == 1 ? 140 : k == 2 ? 170 : 185;
  }
  s += "<rect x=\"" + N(lx) + "\" y=\"" + N(ly - 10) +
       "\" width=\"14\" height=\"14\" fill=\"url(#idlehatch)\"/><text x=\"" + N(lx + 18) + "\" y=\"" + N(ly + 1) +
       "\">idle</text>\n";
  lx += 60;
  if (std::any_of(t.ranks.begin(), t.ranks.end(), [](const TimelineRank& r) { return r.stages.size() > 1; })) {
    s += "<text x=\"" + N(lx) + "\" y=\"" + N(ly + 1) + "\" fill=\"#555\">lighter: a rank's 2nd/4th.. stage</text>\n";
    lx += 205;
  }
  const bool pairs = std::any_of(t.ranks.begin(), t.ranks.end(), [](const TimelineRank& r) {
    return std::any_of(r.compute.begin(), r.compute.end(),
                       [](const TimelineBlock& b) { return IsOverlap(b.action.type); });
  });
  if (pairs) {
    s += "<g class=\"pairkey\"><rect x=\"" + N(lx) + "\" y=\"" + N(ly - 10) + "\" width=\"12\" height=\"14\" fill=\"" +
         BlockColor(ActionType::kF) + "\"/><rect x=\"" + N(lx + 12) + "\" y=\"" + N(ly - 10) +
         "\" width=\"12\" height=\"14\" fill=\"" + BlockColor(ActionType::kB) + "\"/><rect x=\"" + N(lx + 0.75) +
         "\" y=\"" + N(ly - 9.25) + "\" width=\"22.5\" height=\"12.5\" rx=\"3\" fill=\"none\" stroke=\"" +
         kPairOutline + "\" stroke-width=\"1.5\"/><text x=\"" + N(lx + 28) + "\" y=\"" + N(ly + 1) +
         "\">F&amp;B pair (OVERLAP_F_B): one action</text></g>\n";
    lx += 250;
  }
  if (!o.highlight.empty()) {
    s += "<rect x=\"" + N(lx) + "\" y=\"" + N(ly - 1) + "\" width=\"18\" height=\"3\" fill=\"#d62728\"/><text x=\"" +
         N(lx + 22) + "\" y=\"" + N(ly + 1) + "\">critical path</text>\n";
    lx += 110;
  }
  const bool reduces = std::any_of(t.ranks.begin(), t.ranks.end(), [](const TimelineRank& r) {
    return std::any_of(r.comm.begin(), r.comm.end(),
                       [](const TimelineBlock& b) { return IsReduceGrad(b.action.type); });
  });
  if (reduces) {
    s += "<rect x=\"" + N(lx) + "\" y=\"" + N(ly - 6) + "\" width=\"14\" height=\"" + N(kReduceBarHeight) +
         "\" fill=\"" + kReduceColor + "\"/><text x=\"" + N(lx + 18) + "\" y=\"" + N(ly + 1) +
         "\">REDUCE_GRAD (data-parallel all-reduce)</text>\n";
    lx += 270;
  }
  s += "<line x1=\"" + N(lx) + "\" y1=\"" + N(ly - 3) + "\" x2=\"" + N(lx + 24) + "\" y2=\"" + N(ly - 3) +
       "\" stroke=\"#444\" marker-end=\"url(#arrowhead)\"/><text x=\"" + N(lx + 30) + "\" y=\"" + N(ly + 1) +
       "\">SEND \xE2\x86\x92 RECV" + (hover_arrows ? " (hover a block)" : "") + "</text>\n";
  s += "</svg>\n";
  return s;
}

std::string SvgDocument(const Timeline& t, const SvgOptions& options) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + RenderSvg(t, options);
}

}  // namespace pw::viz
