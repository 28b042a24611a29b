// Helpers for the view tests: build a simulated timeline for a registered
// schedule, and read back what an SVG draws (its elements and attributes).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "tests/testing/schedule_util.h"
#include "viz/timeline.h"

namespace pw::viz::testing {

// Attributes of one SVG element, e.g. {"class": "blk F", "x": "80", ...}.
using Element = std::map<std::string, std::string>;

// Every <tag ...> element in `svg` whose class attribute starts with `cls`.
inline std::vector<Element> FindElements(const std::string& svg, const std::string& tag, const std::string& cls) {
  std::vector<Element> out;
  std::regex elem("<" + tag + "\\s([^>]*)>");
  std::regex attr("([a-z-]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), elem); it != std::sregex_iterator(); ++it) {
    std::string body = (*it)[1];
    Element e;
    for (auto a = std::sregex_iterator(body.begin(), body.end(), attr); a != std::sregex_iterator(); ++a)
      e[(*a)[1]] = (*a)[2];
    if (e["class"].rfind(cls, 0) == 0) out.push_back(e);
  }
  return out;
}

inline double Num(const Element& e, const std::string& key) { return std::stod(e.at(key)); }

// Generate -> lower -> validate -> simulate `schedule` with unit costs (F = I
// = W = 1 s per stage, activation = wstash = 1 byte) and wrap it as a plan
// and a timeline.
struct Simulated {
  Plan plan;
  Timeline timeline;
  ::pw::testing::Pipeline pipeline;
};

inline StatusOr<Simulated> SimulateSchedule(const std::string& schedule, int P, int m, int v = 0) {
  Simulated s;
  PW_ASSIGN_OR_RETURN(s.pipeline, ::pw::testing::RunPipeline(schedule, P, m, v));
  StageCosts costs = UniformCosts(s.pipeline.lowered.num_stages);
  s.plan = MakePlan(schedule, s.pipeline.lowered, costs, s.pipeline.sim, std::nullopt);
  s.timeline = TimelineFromSimulation(s.pipeline.lowered, costs, s.pipeline.sim, schedule, schedule, std::nullopt);
  return s;
}

}  // namespace pw::viz::testing
