// Test helpers: generate -> lower -> validate -> simulate in one call.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "schedules/lower.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace pw::testing {

#define PW_ASSERT_OK(expr)                              \
  do {                                                  \
    ::pw::Status pw_st_ = (expr);                       \
    ASSERT_TRUE(pw_st_.ok()) << pw_st_.ToString();      \
  } while (0)

struct Pipeline {
  Program compute;  // generator output
  Program lowered;  // with SEND/RECV
  SimResult sim;    // simulation of `lowered`
};

// Generates `schedule`, lowers with `costs` (unit if empty), validates both
// forms (eager and rendezvous), simulates the lowered program.
inline StatusOr<Pipeline> RunPipeline(const std::string& schedule, int P, int m, int v = 0,
                                      StageCosts costs = {}, std::optional<double> memory_limit = {}) {
  ScheduleRequest req;
  req.schedule = schedule;
  req.pp_size = P;
  req.num_microbatches = m;
  req.virtual_stages = v;
  req.costs = costs;
  req.memory_limit = memory_limit;
  Pipeline out;
  PW_ASSIGN_OR_RETURN(out.compute, GenerateSchedule(req));
  if (costs.stages.empty()) costs = UniformCosts(out.compute.num_stages);
  PW_RETURN_IF_ERROR(ValidateProgram(out.compute));
  PW_ASSIGN_OR_RETURN(out.lowered, AddSendRecv(out.compute, costs));
  PW_RETURN_IF_ERROR(ValidateProgram(out.lowered));
  PW_ASSIGN_OR_RETURN(out.sim, Simulate(out.lowered, costs));
  return out;
}

// Unit costs for P*v stages where each stage costs 1/v (a rank holding the
// model in v stages does the same work as with one stage).
inline StageCosts CostsPerRankUnit(int num_stages, int v) {
  StageCost c;
  c.f = c.i = c.w = 1.0 / v;
  return UniformCosts(num_stages, c);
}

}  // namespace pw::testing
