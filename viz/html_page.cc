#include "viz/html_page.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace pw::viz {

namespace {

const char* kStyle =
    "<style>\n"
    "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:16px;color:#222;background:#fff}\n"
    "h1{font-size:20px;margin:0 0 8px 0} h2{font-size:16px;margin:18px 0 6px 0}\n"
    "table{border-collapse:collapse;font-size:13px} td,th{border:1px solid #ccc;padding:2px "
    "8px;text-align:right;white-space:nowrap}\n"
    "th{background:#f0f0f0} td.l,th.l{text-align:left}\n"
    ".note{color:#555;font-size:12px}\n"
    "</style>\n";

std::string Head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + XmlEscape(title) +
         "</title>\n" + kStyle + "</head>\n<body>\n";
}

std::string RankTable(const Timeline& t) {
  std::string s =
      "<table>\n<tr><th>rank</th><th class=\"l\">stages</th><th>busy</th><th>idle</th><th>idle %</th>"
      "<th>peak memory</th></tr>\n";
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    s += StrFormat("<tr><td>%d</td><td class=\"l\">%s</td><td>%s</td><td>%s</td><td>%.1f</td><td>%s</td></tr>\n", r,
                   StagesText(tr.stages).c_str(), XmlEscape(FormatSeconds(tr.busy_s)).c_str(),
                   XmlEscape(FormatSeconds(tr.idle_s)).c_str(), t.makespan_s > 0 ? 100 * tr.idle_s / t.makespan_s : 0.0,
                   tr.memory.empty() ? "&ndash;" : XmlEscape(FormatMemory(t, tr.peak_memory_bytes)).c_str());
  }
  return s + "</table>\n";
}

std::string SummaryTable(const Timeline& t) {
  std::string s = "<table>\n";
  s += "<tr><th class=\"l\">source</th><td class=\"l\">" + XmlEscape(t.kind) + "</td></tr>\n";
  s += "<tr><th class=\"l\">schedule</th><td class=\"l\">" + XmlEscape(t.schedule) + "</td></tr>\n";
  s += StrFormat("<tr><th class=\"l\">P, S, m</th><td class=\"l\">%d ranks, %d stages, %d microbatches</td></tr>\n",
                 t.pp_size, t.num_stages, t.num_microbatches);
  s += "<tr><th class=\"l\">makespan</th><td class=\"l\">" + XmlEscape(FormatSeconds(t.makespan_s)) + "</td></tr>\n";
  s += "<tr><th class=\"l\">steady step</th><td class=\"l\">" + XmlEscape(FormatSeconds(t.steady_step_s)) +
       "</td></tr>\n";
  s += StrFormat("<tr><th class=\"l\">bubble ratio</th><td class=\"l\">%.4f</td></tr>\n", t.bubble_ratio);
  if (t.memory_limit_bytes)
    s += "<tr><th class=\"l\">memory limit</th><td class=\"l\">" + XmlEscape(FormatMemory(t, *t.memory_limit_bytes)) +
         "</td></tr>\n";
  return s + "</table>\n";
}

// Static memory per rank by layer: a stacked bar (embedding, blocks, head)
// and the numbers, then each stage's parts.
std::string StaticTable(const Timeline& t) {
  const StaticBreakdown& sb = t.static_memory;
  if (sb.ranks.empty()) return "";
  int64_t most = 1;
  for (const RankStatic& r : sb.ranks) most = std::max(most, r.bytes);
  std::string s =
      "<h2>Static memory per rank</h2>\n<p class=\"note\">Parameters, gradients and optimizer state, "
      "held for the whole step (the grey base of the memory strips). By layer: " +
      XmlEscape(sb.method) + ".</p>\n";
  s += "<table class=\"static\">\n<tr><th>rank</th><th class=\"l\">stages</th><th>embedding</th><th>blocks</th>"
       "<th>head</th><th>total</th><th class=\"l\"></th><th class=\"l\">by stage</th></tr>\n";
  for (const RankStatic& r : sb.ranks) {
    std::string stages, detail;
    for (const StageStatic& st : r.stages) {
      stages += (stages.empty() ? "" : ",") + std::to_string(st.stage);
      std::string parts;
      for (const StaticPart& p : st.parts)
        parts += (parts.empty() ? "" : " + ") + PartName(p) + " " + FormatMemory(t, p.bytes);
      detail += (detail.empty() ? "" : "; ") + StrFormat("stage %d: ", st.stage) +
                (parts.empty() ? FormatMemory(t, st.bytes) : parts);
    }
    auto cell = [&](int64_t b) {
      return sb.by_layer && b > 0 ? XmlEscape(FormatMemory(t, b)) : std::string("&ndash;");
    };
    auto bar = [&](int64_t b, const char* color, const std::string& what) {
      double w = 260.0 * double(b) / double(most);
      return b > 0 ? StrFormat(
                         "<span title=\"%s\" "
                         "style=\"display:inline-block;vertical-align:middle;height:12px;width:%.1fpx;background:%s\">"
                         "</span>",
                         XmlEscape(what).c_str(), w, color)
                   : std::string();
    };
    std::string bars = sb.by_layer ? bar(r.embedding_bytes, "#e15759", "embedding") +
                                         bar(r.block_bytes, "#76b7b2", StrFormat("%d blocks", r.num_blocks)) +
                                         bar(r.head_bytes, "#edc948", "head")
                                   : bar(r.bytes, "#76b7b2", "static");
    s += StrFormat(
        "<tr><td>%d</td><td class=\"l\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
        "<td class=\"l bar\">%s</td><td class=\"l\" style=\"white-space:normal\">%s</td></tr>\n",
        r.rank, stages.c_str(), cell(r.embedding_bytes).c_str(),
        sb.by_layer ? (XmlEscape(FormatMemory(t, r.block_bytes)) + StrFormat(" (%d)", r.num_blocks)).c_str()
                    : "&ndash;",
        cell(r.head_bytes).c_str(), XmlEscape(FormatMemory(t, r.bytes)).c_str(), bars.c_str(),
        XmlEscape(detail).c_str());
  }
  s += "</table>\n";
  if (sb.by_layer)
    s += "<p class=\"note\"><span style=\"background:#e15759\">&nbsp;&nbsp;&nbsp;</span> embedding "
         "<span style=\"background:#76b7b2\">&nbsp;&nbsp;&nbsp;</span> decoder blocks (count in brackets) "
         "<span style=\"background:#edc948\">&nbsp;&nbsp;&nbsp;</span> head</p>\n";
  return s;
}

}  // namespace

std::set<std::pair<int, int>> HighlightOf(const Timeline& t, const std::vector<CriticalStep>& path) {
  std::set<std::pair<int, int>> out;
  for (const CriticalStep& c : path)
    for (const TimelineBlock& b : t.ranks[c.rank].compute)
      if (b.action == c.action) out.insert({c.rank, b.index});
  return out;
}

std::string RenderHtmlPage(const Timeline& t, const SvgOptions& options) {
  SvgOptions o = options;
  std::vector<CriticalStep> path = CriticalPath(t);
  if (o.highlight.empty()) o.highlight = HighlightOf(t, path);
  o.header = false;  // the page's own title and table
  const SvgGeometry g = LayoutSvg(t, o);
  std::string s = Head(t.title);
  s += "<h1>" + XmlEscape(t.title) + "</h1>\n" + SummaryTable(t);
  s += "<p class=\"note\">Blocks are drawn at their " + std::string(t.kind == "measured" ? "measured" : "simulated") +
       " start and duration; hatched grey is time a rank waits; arrows go from each SEND to the moment its RECV has "
       "the data; a red bar under a block marks the critical path (" +
       std::to_string(path.size()) + " actions). Hover for details.";
  if (g.window.Compressed())
    s += " The step is long: shown are " + XmlEscape(g.window.Describe()) +
         " (warm-up and the first two steady-state periods, the last two and the cool-down); the middle " +
         XmlEscape(FormatSeconds(g.window.HiddenEnd() - g.window.HiddenBegin())) +
         " of steady state is compressed into the marked band (<code>show --window all</code> draws every action).";
  s += "</p>\n";
  s += "<div>\n" + RenderSvg(t, o) + "</div>\n";
  s += "<h2>Per rank</h2>\n" + RankTable(t);
  s += StaticTable(t);
  s += "</body>\n</html>\n";
  return s;
}

std::string RenderDiffHtml(const Timeline& measured, const Timeline& simulated, const TimelineDiff& d) {
  SvgOptions o;
  o.time_extent_s = std::max(measured.makespan_s, simulated.makespan_s);  // one time axis: no window
  o.header = false;                                                       // each drawing has its <h2>
  std::string s = Head("measured vs simulated: " + measured.title);
  s += "<h1>Measured vs simulated</h1>\n";
  s += "<table>\n<tr><th></th><th>measured</th><th>simulated</th><th>diff</th></tr>\n";
  auto row = [&](const char* name, double m, double sim, bool seconds) {
    std::string dm = seconds ? FormatSeconds(m) : StrFormat("%.4f", m);
    std::string ds = seconds ? FormatSeconds(sim) : StrFormat("%.4f", sim);
    std::string diff =
        seconds ? (sim != 0 ? StrFormat("%+.1f%%", 100 * (m - sim) / sim) : "&ndash;") : StrFormat("%+.4f", m - sim);
    s += "<tr><th class=\"l\">" + std::string(name) + "</th><td>" + XmlEscape(dm) + "</td><td>" + XmlEscape(ds) +
         "</td><td>" + diff + "</td></tr>\n";
  };
  row("makespan", d.measured_makespan_s, d.simulated_makespan_s, true);
  row("steady step", d.measured_steady_s, d.simulated_steady_s, true);
  row("bubble ratio", d.measured_bubble, d.simulated_bubble, false);
  s += "</table>\n";
  o.highlight = HighlightOf(measured, d.measured_critical);
  s += "<h2>Measured: " + XmlEscape(measured.title) + "</h2>\n<div>\n" + RenderSvg(measured, o) + "</div>\n";
  o.highlight = HighlightOf(simulated, d.simulated_critical);
  s += "<h2>Simulated: " + XmlEscape(simulated.title) + "</h2>\n<div>\n" + RenderSvg(simulated, o) + "</div>\n";
  s += "<h2>Per rank bubble (idle / makespan)</h2>\n<table>\n<tr><th>rank</th><th>busy measured</th>"
       "<th>busy simulated</th><th>bubble measured</th><th>bubble simulated</th><th>diff</th></tr>\n";
  for (const RankDiff& r : d.ranks)
    s += StrFormat("<tr><td>%d</td><td>%s</td><td>%s</td><td>%.4f</td><td>%.4f</td><td>%+.4f</td></tr>\n", r.rank,
                   XmlEscape(FormatSeconds(r.measured_busy_s)).c_str(),
                   XmlEscape(FormatSeconds(r.simulated_busy_s)).c_str(), r.measured_bubble, r.simulated_bubble,
                   r.measured_bubble - r.simulated_bubble);
  s += "</table>\n";
  auto path_row = [&](const char* name, const std::vector<CriticalStep>& p) {
    std::string t;
    for (const CriticalStep& c : p)
      t += (t.empty() ? "" : " &rarr; ") + StrFormat("r%d:", c.rank) + c.action.ToString();
    s += "<p><b>" + std::string(name) + "</b> (" + std::to_string(p.size()) + " actions): " + t + "</p>\n";
  };
  s += "<h2>Critical paths</h2>\n";
  path_row("measured", d.measured_critical);
  path_row("simulated", d.simulated_critical);
  s += "<h2>Per action</h2>\n<table>\n<tr><th>rank</th><th class=\"l\">action</th><th>start measured</th>"
       "<th>start simulated</th><th>duration measured</th><th>duration simulated</th><th>diff</th></tr>\n";
  for (const ActionDiff& a : d.actions)
    s += StrFormat(
        "<tr><td>%d</td><td class=\"l\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", a.rank,
        a.action.ToString().c_str(), XmlEscape(FormatSeconds(a.measured_start)).c_str(),
        XmlEscape(FormatSeconds(a.simulated_start)).c_str(), XmlEscape(FormatSeconds(a.measured_dur)).c_str(),
        XmlEscape(FormatSeconds(a.simulated_dur)).c_str(),
        a.simulated_dur != 0 ? StrFormat("%+.1f%%", 100 * (a.measured_dur - a.simulated_dur) / a.simulated_dur).c_str()
                             : "&ndash;");
  s += "</table>\n</body>\n</html>\n";
  return s;
}

}  // namespace pw::viz
