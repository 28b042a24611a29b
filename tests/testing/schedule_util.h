// Test helpers: the pipeline chain (schedules/pipeline.h) from a few arguments.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"
#include "schedules/validate.h"

namespace pw::testing {

#define PW_ASSERT_OK(expr)                         \
  do {                                             \
    ::pw::Status pw_st_ = (expr);                  \
    ASSERT_TRUE(pw_st_.ok()) << pw_st_.ToString(); \
  } while (0)

using Pipeline = PipelineResult;

// RunPipeline (schedules/pipeline.h) of a request built from the arguments:
// `schedule` on P ranks, m microbatches, v stages per rank (0 = default),
// `costs` (unit if empty), an optional activation memory limit.
inline StatusOr<Pipeline> RunPipeline(const std::string& schedule, int P, int m, int v = 0, StageCosts costs = {},
                                      std::optional<double> memory_limit = {}) {
  ScheduleRequest req;
  req.schedule = schedule;
  req.pp_size = P;
  req.num_microbatches = m;
  req.virtual_stages = v;
  req.costs = costs;
  req.memory_limit = memory_limit;
  return ::pw::RunPipeline(req);
}

// Unit costs for P*v stages where each stage costs 1/v (a rank holding the
// model in v stages does the same work as with one stage).
inline StageCosts CostsPerRankUnit(int num_stages, int v) {
  StageCost c;
  c.f = c.i = c.w = 1.0 / v;
  return UniformCosts(num_stages, c);
}

// Moves the first SEND_F of `list` that a SEND_B follows (before the next
// SEND_F) to right after that SEND_B: still valid with posted receives (each
// channel keeps its order), but the rank pair's single order changes, which a
// communicator with one FIFO per pair (NCCL) cannot deliver. False if the
// list has no such pair.
inline bool PostASendFAfterTheNextSendB(std::vector<Action>* list) {
  for (size_t i = 0; i < list->size(); ++i) {
    if ((*list)[i].type != ActionType::kSendF) continue;
    for (size_t j = i + 1; j < list->size(); ++j) {
      if ((*list)[j].type == ActionType::kSendB) {
        const Action send_f = (*list)[i];
        list->erase(list->begin() + static_cast<long>(i));
        list->insert(list->begin() + static_cast<long>(j), send_f);
        return true;
      }
      if ((*list)[j].type == ActionType::kSendF) break;  // keep the forwards' own order
    }
  }
  return false;
}

}  // namespace pw::testing
