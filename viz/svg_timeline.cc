#include "viz/svg_timeline.h"

#include <algorithm>
#include <cmath>

namespace pw::viz {

namespace {

constexpr double kLeft = 80;        // room for lane labels
constexpr double kRight = 210;      // room for per-rank numbers
constexpr double kHeader = 64;      // title + summary lines
constexpr double kLaneHeight = 24;
constexpr double kLanePitch = 34;
constexpr double kReduceBarHeight = 6;       // REDUCE_GRAD bars, in the gap under a lane
constexpr const char* kReduceColor = "#c0392b";
constexpr double kAxis = 34;        // tick labels under the lanes
constexpr double kMemHeight = 44;
constexpr double kMemPitch = 56;
constexpr double kLegend = 40;

// Pixel coordinates: 3 decimals, trailing zeros dropped (deterministic).
std::string N(double x) {
  if (std::fabs(x) < 5e-4) x = 0;
  std::string s = Fmt("%.3f", x);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// Seconds in data-* attributes: 10 significant digits.
std::string T(double seconds) { return Fmt("%.10g", seconds); }

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
    case ActionType::kF: return "#4e79a7";  // blue
    case ActionType::kB: return "#59a14f";  // green
    case ActionType::kI: return "#f28e2b";  // orange
    case ActionType::kW: return "#9c6fb6";  // purple
    default: return "#888888";
  }
}

const char* BlockColor(ActionType type, int chunk) {
  if (chunk % 2 == 0) return BlockColor(type);
  switch (type) {
    case ActionType::kF: return "#86a9cf";  // light blue
    case ActionType::kB: return "#8cc97f";  // light green
    case ActionType::kI: return "#f7b36b";  // light orange
    case ActionType::kW: return "#c3a3d6";  // light purple
    default: return "#aaaaaa";
  }
}

SvgGeometry LayoutSvg(const Timeline& t, const SvgOptions& o) {
  SvgGeometry g;
  double extent = o.time_extent_s > 0 ? o.time_extent_s : t.makespan_s;
  g.x0 = kLeft;
  g.px_per_s = extent > 0 ? o.plot_width_px / extent : 0;
  g.lane_top0 = kHeader;
  g.lane_height = kLaneHeight;
  g.lane_pitch = kLanePitch;
  double lanes_end = kHeader + t.pp_size * kLanePitch + kAxis;
  bool memory = o.memory && std::any_of(t.ranks.begin(), t.ranks.end(),
                                        [](const TimelineRank& r) { return !r.memory.empty(); });
  g.memory_top0 = lanes_end + 24;
  g.memory_height = memory ? kMemHeight : 0;
  g.memory_pitch = memory ? kMemPitch : 0;
  double end = memory ? g.memory_top0 + t.pp_size * kMemPitch : lanes_end;
  g.width = static_cast<int>(kLeft + o.plot_width_px + kRight);
  g.height = static_cast<int>(end + kLegend);
  return g;
}

std::string RenderSvg(const Timeline& t, const SvgOptions& o) {
  const SvgGeometry g = LayoutSvg(t, o);
  const double extent = o.time_extent_s > 0 ? o.time_extent_s : t.makespan_s;
  std::string s = Fmt(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n",
      g.width, g.height, g.width, g.height);
  s += "<defs>\n"
       "<pattern id=\"idlehatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"" +
       std::string(kIdleColor) +
       "\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bdbdbd\" stroke-width=\"1.5\"/></pattern>\n"
       "<marker id=\"arrowhead\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" "
       "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#444\"/></marker>\n"
       "<style>rect.blk:hover{stroke:#000;stroke-width:2} line.msg:hover{stroke:#d00;stroke-opacity:1}</style>\n"
       "</defs>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(g.width) + "\" height=\"" + std::to_string(g.height) +
       "\" fill=\"#ffffff\"/>\n";
  s += "<text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">" + XmlEscape(t.title) + "</text>\n";
  s += "<text class=\"summary\" x=\"10\" y=\"44\">" +
       XmlEscape(Fmt("%s: P=%d, S=%d, m=%d | makespan %s | steady step %s | bubble ratio %.4f", t.kind.c_str(),
                     t.pp_size, t.num_stages, t.num_microbatches, FormatSeconds(t.makespan_s).c_str(),
                     FormatSeconds(t.steady_step_s).c_str(), t.bubble_ratio)) +
       "</text>\n";

  // Lanes: idle first (underneath), then blocks.
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    double y = g.LaneTop(r);
    s += Fmt("<text x=\"10\" y=\"%s\" dominant-baseline=\"middle\">rank %d</text>\n", N(y + kLaneHeight / 2).c_str(), r);
    for (const auto& [a, b] : IdleIntervals(tr, t.makespan_s)) {
      s += "<rect class=\"idle\" data-rank=\"" + std::to_string(r) + "\" data-start=\"" + T(a) + "\" data-end=\"" +
           T(b) + "\" x=\"" + N(g.X(a)) + "\" y=\"" + N(y) + "\" width=\"" + N((b - a) * g.px_per_s) +
           "\" height=\"" + N(kLaneHeight) + "\" fill=\"url(#idlehatch)\"><title>" +
           XmlEscape(Fmt("rank %d idle %s .. %s (%s)", r, FormatSeconds(a).c_str(), FormatSeconds(b).c_str(),
                         FormatSeconds(b - a).c_str())) +
           "</title></rect>\n";
    }
    for (const TimelineBlock& b : tr.compute) {
      double w = (b.end - b.start) * g.px_per_s;
      int chunk = static_cast<int>(std::find(tr.stages.begin(), tr.stages.end(), b.action.stage) - tr.stages.begin());
      std::string name = b.action.ToString();
      bool hi = o.highlight.count({r, b.index}) > 0;
      s += "<rect class=\"blk " + std::string(ActionTypeName(b.action.type)) + (hi ? " crit" : "") +
           "\" data-rank=\"" + std::to_string(r) + "\" data-action=\"" + name + "\" data-start=\"" + T(b.start) +
           "\" data-end=\"" + T(b.end) + "\" x=\"" + N(g.X(b.start)) + "\" y=\"" + N(y) + "\" width=\"" + N(w) +
           "\" height=\"" + N(kLaneHeight) + "\" fill=\"" + BlockColor(b.action.type, chunk) + "\" stroke=\"" +
           (hi ? "#000" : "#ffffff") + "\" stroke-width=\"" + (hi ? "2.5" : "0.5") + "\"><title>" +
           XmlEscape(Fmt("rank %d: %s (stage %d, microbatch %d) %s .. %s, %s%s", r, name.c_str(), b.action.stage,
                         b.action.microbatch, FormatSeconds(b.start).c_str(), FormatSeconds(b.end).c_str(),
                         FormatSeconds(b.end - b.start).c_str(), hi ? ", on the critical path" : "")) +
           "</title></rect>\n";
      std::string label = std::to_string(b.action.microbatch);
      if (w >= 7.0 * label.size() + 2)
        s += "<text class=\"mb\" x=\"" + N(g.X(b.start) + w / 2) + "\" y=\"" + N(y + kLaneHeight / 2) +
             "\" text-anchor=\"middle\" dominant-baseline=\"central\" fill=\"#ffffff\" font-size=\"11\" "
             "pointer-events=\"none\">" +
             label + "</text>\n";
    }
    // Data-parallel gradient reductions (REDUCE_GRAD): a thin bar in the gap
    // under the lane, from the reduction's start to its end (its own lane:
    // it overlaps the rank's later compute).
    for (const TimelineBlock& b : tr.comm) {
      if (!IsReduceGrad(b.action.type)) continue;
      const std::string name = b.action.ToString();
      s += "<rect class=\"blk REDUCE_GRAD\" data-rank=\"" + std::to_string(r) + "\" data-action=\"" + name +
           "\" data-start=\"" + T(b.start) + "\" data-end=\"" + T(b.end) + "\" x=\"" + N(g.X(b.start)) +
           "\" y=\"" + N(y + kLaneHeight + 2) + "\" width=\"" + N(std::max(1.0, (b.end - b.start) * g.px_per_s)) +
           "\" height=\"" + N(kReduceBarHeight) + "\" fill=\"" + kReduceColor + "\"><title>" +
           XmlEscape(Fmt("rank %d: %s (gradient reduction of stage %d over its data-parallel group) %s .. %s, %s", r,
                         name.c_str(), b.action.stage, FormatSeconds(b.start).c_str(), FormatSeconds(b.end).c_str(),
                         FormatSeconds(b.end - b.start).c_str())) +
           "</title></rect>\n";
    }
    s += Fmt("<text x=\"%s\" y=\"%s\" dominant-baseline=\"middle\" fill=\"#333\">busy %s, idle %.1f%%</text>\n",
             N(g.X(extent) + 8).c_str(), N(y + kLaneHeight / 2).c_str(), FormatSeconds(tr.busy_s).c_str(),
             t.makespan_s > 0 ? 100.0 * tr.idle_s / t.makespan_s : 0.0);
  }

  // Messages: from the sender's lane at the post time to the receiver's lane
  // when the data is there.
  if (o.arrows) {
    for (const TimelineMessage& m : t.messages) {
      bool down = m.dst_rank > m.src_rank;
      double y1 = g.LaneTop(m.src_rank) + (down ? kLaneHeight : 0);
      double y2 = g.LaneTop(m.dst_rank) + (down ? 0 : kLaneHeight);
      s += "<line class=\"msg\" data-send=\"" + m.send.ToString() + "\" data-recv=\"" + m.recv.ToString() +
           "\" x1=\"" + N(g.X(m.sent_s)) + "\" y1=\"" + N(y1) + "\" x2=\"" + N(g.X(m.available_s)) + "\" y2=\"" +
           N(y2) + "\" stroke=\"#444\" stroke-opacity=\"0.55\" stroke-width=\"1\" marker-end=\"url(#arrowhead)\">" +
           "<title>" +
           XmlEscape(Fmt("%s (rank %d) -> %s (rank %d): posted %s, available %s", m.send.ToString().c_str(),
                         m.src_rank, m.recv.ToString().c_str(), m.dst_rank, FormatSeconds(m.sent_s).c_str(),
                         FormatSeconds(m.available_s).c_str())) +
           "</title></line>\n";
    }
  }

  // Time axis.
  double axis_y = g.LaneTop(t.pp_size - 1) + kLaneHeight + 6;
  double step = NiceStep(extent / 12);
  s += "<line x1=\"" + N(g.X(0)) + "\" y1=\"" + N(axis_y) + "\" x2=\"" + N(g.X(extent)) + "\" y2=\"" + N(axis_y) +
       "\" stroke=\"#000\"/>\n";
  for (int k = 0; k * step <= extent * (1 + 1e-9) && step > 0; ++k) {
    double x = g.X(k * step);
    s += "<line x1=\"" + N(x) + "\" y1=\"" + N(axis_y) + "\" x2=\"" + N(x) + "\" y2=\"" + N(axis_y + 4) +
         "\" stroke=\"#000\"/><text x=\"" + N(x) + "\" y=\"" + N(axis_y + 16) + "\" text-anchor=\"middle\">" +
         XmlEscape(FormatSeconds(k * step)) + "</text>\n";
  }

  // Memory curves.
  if (g.memory_height > 0) {
    int64_t top = 1;
    for (const TimelineRank& tr : t.ranks) top = std::max(top, tr.peak_memory_bytes);
    if (t.memory_limit_bytes) top = std::max(top, *t.memory_limit_bytes);
    s += "<text x=\"10\" y=\"" + N(g.memory_top0 - 8) + "\" font-weight=\"bold\">memory in use per rank (0 .. " +
         XmlEscape(FormatMemory(t, top)) + (t.memory_limit_bytes ? "; dashed red: limit" : "") + ")</text>\n";
    for (int r = 0; r < t.pp_size; ++r) {
      const TimelineRank& tr = t.ranks[r];
      double y0 = g.memory_top0 + r * g.memory_pitch;
      auto Y = [&](int64_t b) { return y0 + g.memory_height * (1.0 - double(b) / double(top)); };
      s += Fmt("<text x=\"10\" y=\"%s\" dominant-baseline=\"middle\">rank %d</text>\n",
               N(y0 + g.memory_height / 2).c_str(), r);
      s += "<rect x=\"" + N(g.X(0)) + "\" y=\"" + N(y0) + "\" width=\"" + N(extent * g.px_per_s) + "\" height=\"" +
           N(g.memory_height) + "\" fill=\"#f7f7f7\" stroke=\"#ccc\"/>\n";
      if (!tr.memory.empty()) {
        std::string pts;
        int64_t cur = tr.memory.front().bytes;
        pts += N(g.X(0)) + "," + N(Y(cur));
        for (const MemoryPoint& p : tr.memory) {
          pts += " " + N(g.X(p.time)) + "," + N(Y(cur));
          cur = p.bytes;
          pts += " " + N(g.X(p.time)) + "," + N(Y(cur));
        }
        pts += " " + N(g.X(t.makespan_s)) + "," + N(Y(cur));
        s += "<polyline class=\"mem\" data-rank=\"" + std::to_string(r) + "\" points=\"" + pts +
             "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"><title>" +
             XmlEscape(Fmt("rank %d peak memory %s", r, FormatMemory(t, tr.peak_memory_bytes).c_str())) +
             "</title></polyline>\n";
      }
      if (t.memory_limit_bytes)
        s += "<line class=\"limit\" x1=\"" + N(g.X(0)) + "\" y1=\"" + N(Y(*t.memory_limit_bytes)) + "\" x2=\"" +
             N(g.X(extent)) + "\" y2=\"" + N(Y(*t.memory_limit_bytes)) +
             "\" stroke=\"#d62728\" stroke-dasharray=\"5,3\"/>\n";
      s += "<text x=\"" + N(g.X(extent) + 8) + "\" y=\"" + N(y0 + g.memory_height / 2) +
           "\" dominant-baseline=\"middle\" fill=\"#333\">peak " + XmlEscape(FormatMemory(t, tr.peak_memory_bytes)) +
           "</text>\n";
    }
  }

  // Legend.
  double ly = g.height - kLegend + 22;
  double lx = 10;
  for (ActionType a : {ActionType::kF, ActionType::kB, ActionType::kI, ActionType::kW}) {
    static const char* names[] = {"F forward", "B full backward", "I input-grad backward", "W weight-grad backward"};
    int k = a == ActionType::kF ? 0 : a == ActionType::kB ? 1 : a == ActionType::kI ? 2 : 3;
    s += "<rect x=\"" + N(lx) + "\" y=\"" + N(ly - 10) + "\" width=\"14\" height=\"14\" fill=\"" + BlockColor(a) +
         "\"/><text x=\"" + N(lx + 18) + "\" y=\"" + N(ly + 1) + "\">" + names[k] + "</text>\n";
    lx += 190;
  }
  s += "<rect x=\"" + N(lx) + "\" y=\"" + N(ly - 10) +
       "\" width=\"14\" height=\"14\" fill=\"url(#idlehatch)\"/><text x=\"" + N(lx + 18) + "\" y=\"" + N(ly + 1) +
       "\">idle (waiting)</text>\n";
  lx += 130;
  if (std::any_of(t.ranks.begin(), t.ranks.end(), [](const TimelineRank& r) { return r.stages.size() > 1; })) {
    s += "<text x=\"" + N(lx) + "\" y=\"" + N(ly + 1) + "\" fill=\"#555\">lighter: a rank's 2nd/4th.. stage</text>\n";
    lx += 210;
  }
  const bool reduces = std::any_of(t.ranks.begin(), t.ranks.end(), [](const TimelineRank& r) {
    return std::any_of(r.comm.begin(), r.comm.end(), [](const TimelineBlock& b) { return IsReduceGrad(b.action.type); });
  });
  if (reduces) {
    s += "<rect x=\"" + N(lx) + "\" y=\"" + N(ly - 6) + "\" width=\"14\" height=\"" + N(kReduceBarHeight) +
         "\" fill=\"" + kReduceColor + "\"/><text x=\"" + N(lx + 18) + "\" y=\"" + N(ly + 1) +
         "\">REDUCE_GRAD (data-parallel all-reduce)</text>\n";
    lx += 270;
  }
  s += "<line x1=\"" + N(lx) + "\" y1=\"" + N(ly - 3) + "\" x2=\"" + N(lx + 24) + "\" y2=\"" + N(ly - 3) +
       "\" stroke=\"#444\" marker-end=\"url(#arrowhead)\"/><text x=\"" + N(lx + 30) + "\" y=\"" + N(ly + 1) +
       "\">SEND \xE2\x86\x92 RECV</text>\n";
  s += "</svg>\n";
  return s;
}

std::string SvgDocument(const Timeline& t, const SvgOptions& options) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + RenderSvg(t, options);
}

}  // namespace pw::viz
