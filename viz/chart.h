// Two small self-contained SVG charts for the report: lines over a log2 x
// axis (bubble ratio vs m) and grouped bars (peak memory per rank by
// schedule). Deterministic output, no scripts.
#pragma once

#include <string>
#include <vector>

namespace pw::viz {

struct LineSeries {
  std::string name;
  std::vector<double> x;  // > 0 (log2 axis)
  std::vector<double> y;
};

// A line chart with a log2 x axis; `x_ticks` are labelled.
std::string LineChartSvg(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<double>& x_ticks, const std::vector<LineSeries>& series);

struct BarGroup {
  std::string name;
  std::vector<double> values;  // one bar each (e.g. per rank)
};

// Grouped vertical bars starting at 0; `bar_label` names one bar ("rank").
std::string BarChartSvg(const std::string& title, const std::string& y_label, const std::string& bar_label,
                        const std::vector<BarGroup>& groups);

}  // namespace pw::viz
