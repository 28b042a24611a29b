#include "viz/chart.h"

#include <algorithm>
#include <cmath>

#include "viz/timeline.h"

namespace pw::viz {

namespace {

const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kPaletteSize = 10;

std::string N(double x) {
  if (std::fabs(x) < 5e-7) x = 0;
  return StrFormat("%.6g", x);
}

double NiceCeil(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double k : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (k * p >= v * (1 - 1e-12)) return k * p;
  return 10 * p;
}

std::string Header(int w, int h, const std::string& title) {
  return StrFormat(
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
             "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
             "font-size=\"12\">\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
             w, h, w, h, w, h) +
         "<text x=\"" + N(w / 2.0) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" +
         XmlEscape(title) + "</text>\n";
}

// Horizontal grid lines and y labels for [0, top].
std::string YAxis(double left, double right, double top_px, double bottom_px, double top, const std::string& label) {
  std::string s;
  for (int k = 0; k <= 5; ++k) {
    double v = top * k / 5, y = bottom_px - (bottom_px - top_px) * k / 5;
    s += "<line x1=\"" + N(left) + "\" y1=\"" + N(y) + "\" x2=\"" + N(right) + "\" y2=\"" + N(y) +
         "\" stroke=\"#e0e0e0\"/><text x=\"" + N(left - 6) + "\" y=\"" + N(y + 4) + "\" text-anchor=\"end\">" +
         StrFormat("%.4g", v) + "</text>\n";
  }
  s += "<text transform=\"translate(16," + N((top_px + bottom_px) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       XmlEscape(label) + "</text>\n";
  return s;
}

}  // namespace

std::string LineChartSvg(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<double>& x_ticks, const std::vector<LineSeries>& series) {
  const int w = 760, h = 420;
  const double left = 70, right = 560, top_px = 40, bottom_px = 360;
  double ymax = 0, xmin = 0, xmax = 0;
  bool first = true;
  for (const LineSeries& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      ymax = std::max(ymax, s.y[i]);
      xmin = first ? s.x[i] : std::min(xmin, s.x[i]);
      xmax = first ? s.x[i] : std::max(xmax, s.x[i]);
      first = false;
    }
  for (double t : x_ticks) {
    xmin = first ? t : std::min(xmin, t);
    xmax = first ? t : std::max(xmax, t);
    first = false;
  }
  double top = NiceCeil(ymax);
  double lx0 = std::log2(std::max(xmin, 1e-12)), lx1 = std::log2(std::max(xmax, 1e-12));
  if (lx1 <= lx0) lx1 = lx0 + 1;
  auto X = [&](double x) { return left + (right - left) * (std::log2(x) - lx0) / (lx1 - lx0); };
  auto Y = [&](double y) { return bottom_px - (bottom_px - top_px) * y / top; };
  std::string s = Header(w, h, title) + YAxis(left, right, top_px, bottom_px, top, y_label);
  for (double t : x_ticks)
    s += "<line x1=\"" + N(X(t)) + "\" y1=\"" + N(bottom_px) + "\" x2=\"" + N(X(t)) + "\" y2=\"" + N(bottom_px + 4) +
         "\" stroke=\"#000\"/><text x=\"" + N(X(t)) + "\" y=\"" + N(bottom_px + 18) + "\" text-anchor=\"middle\">" +
         StrFormat("%g", t) + "</text>\n";
  s += "<line x1=\"" + N(left) + "\" y1=\"" + N(bottom_px) + "\" x2=\"" + N(right) + "\" y2=\"" + N(bottom_px) +
       "\" stroke=\"#000\"/>\n<text x=\"" + N((left + right) / 2) + "\" y=\"" + N(bottom_px + 40) +
       "\" text-anchor=\"middle\">" + XmlEscape(x_label) + "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const LineSeries& ls = series[k];
    const char* c = kPalette[k % kPaletteSize];
    std::string pts;
    for (size_t i = 0; i < ls.x.size(); ++i) pts += (pts.empty() ? "" : " ") + N(X(ls.x[i])) + "," + N(Y(ls.y[i]));
    s += "<polyline class=\"series\" data-name=\"" + XmlEscape(ls.name) + "\" points=\"" + pts +
         "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"2\"/>\n";
    for (size_t i = 0; i < ls.x.size(); ++i)
      s += "<circle cx=\"" + N(X(ls.x[i])) + "\" cy=\"" + N(Y(ls.y[i])) + "\" r=\"3.5\" fill=\"" + c + "\"><title>" +
           XmlEscape(StrFormat("%s: m=%g, %.4f", ls.name.c_str(), ls.x[i], ls.y[i])) + "</title></circle>\n";
    double ly = top_px + 10 + 20 * k;
    s += "<line x1=\"" + N(right + 20) + "\" y1=\"" + N(ly) + "\" x2=\"" + N(right + 44) + "\" y2=\"" + N(ly) +
         "\" stroke=\"" + c + "\" stroke-width=\"2\"/><text x=\"" + N(right + 50) + "\" y=\"" + N(ly + 4) + "\">" +
         XmlEscape(ls.name) + "</text>\n";
  }
  return s + "</svg>\n";
}

std::string BarChartSvg(const std::string& title, const std::string& y_label, const std::string& bar_label,
                        const std::vector<BarGroup>& groups) {
  size_t bars = 0;
  double ymax = 0;
  for (const BarGroup& g : groups) {
    bars = std::max(bars, g.values.size());
    for (double v : g.values) ymax = std::max(ymax, v);
  }
  const double left = 70, top_px = 40, bottom_px = 340;
  const double bar_w = std::max(3.0, std::min(14.0, 96.0 / std::max<size_t>(bars, 1)));
  const double group_w = bar_w * bars + 24;
  const int w = static_cast<int>(left + group_w * groups.size() + 30);
  const int h = 420;
  const double right = w - 20;
  double top = NiceCeil(ymax);
  auto Y = [&](double y) { return bottom_px - (bottom_px - top_px) * y / top; };
  std::string s = Header(w, h, title) + YAxis(left, right, top_px, bottom_px, top, y_label);
  for (size_t k = 0; k < groups.size(); ++k) {
    const BarGroup& g = groups[k];
    double gx = left + 12 + group_w * k;
    for (size_t i = 0; i < g.values.size(); ++i) {
      double x = gx + bar_w * i;
      s += "<rect class=\"bar\" data-group=\"" + XmlEscape(g.name) + "\" data-index=\"" + std::to_string(i) +
           "\" x=\"" + N(x) + "\" y=\"" + N(Y(g.values[i])) + "\" width=\"" + N(bar_w - 1) + "\" height=\"" +
           N(bottom_px - Y(g.values[i])) + "\" fill=\"" + kPalette[k % kPaletteSize] + "\"><title>" +
           XmlEscape(StrFormat("%s, %s %zu: %.4g", g.name.c_str(), bar_label.c_str(), i, g.values[i])) +
           "</title></rect>\n";
    }
    s += "<text x=\"" + N(gx + bar_w * g.values.size() / 2) + "\" y=\"" + N(bottom_px + 16) +
         "\" text-anchor=\"end\" transform=\"rotate(-30 " + N(gx + bar_w * g.values.size() / 2) + " " +
         N(bottom_px + 16) + ")\">" + XmlEscape(g.name) + "</text>\n";
  }
  s += "<line x1=\"" + N(left) + "\" y1=\"" + N(bottom_px) + "\" x2=\"" + N(right) + "\" y2=\"" + N(bottom_px) +
       "\" stroke=\"#000\"/>\n<text x=\"" + N(left) + "\" y=\"" + N(h - 8) + "\" fill=\"#555\">" +
       XmlEscape("one bar per " + bar_label + ", " + bar_label + " 0 first") + "</text>\n";
  return s + "</svg>\n";
}

}  // namespace pw::viz
