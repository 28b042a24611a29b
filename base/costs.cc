#include "base/costs.h"

namespace pw {

StageCosts UniformCosts(int num_stages, StageCost cost, StageMemory memory, CommModel comm) {
  StageCosts c;
  c.stages.assign(num_stages, cost);
  c.memory.assign(num_stages, memory);
  c.comm = comm;
  return c;
}

}  // namespace pw
