// Self-contained HTML pages (no network, no scripts): the SVG timeline inline,
// hover text on every block, idle gap and arrow (SVG <title>), and tables of
// the summary numbers.
#pragma once

#include <string>

#include "viz/diff.h"
#include "viz/svg_timeline.h"
#include "viz/timeline.h"

namespace pw::viz {

// One timeline: summary table, the SVG (critical path outlined), per-rank table.
std::string RenderHtmlPage(const Timeline& t, const SvgOptions& options = {});

// Measured vs simulated: both timelines on one time axis (each with its
// critical path outlined), totals, per-rank bubble and per-action tables.
std::string RenderDiffHtml(const Timeline& measured, const Timeline& simulated, const TimelineDiff& diff);

// The set of (rank, list index) of the compute blocks on `path`, for
// SvgOptions::highlight.
std::set<std::pair<int, int>> HighlightOf(const Timeline& t, const std::vector<CriticalStep>& path);

}  // namespace pw::viz
