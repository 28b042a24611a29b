#include "plan/replica_batch.h"

namespace pw {

StatusOr<ReplicaBatch> ReadReplicaBatch(const Plan& plan) {
  if (!plan.training)
    return Status::InvalidArgument(
        "plan section 'training' is missing: the executor needs seq_length and the "
        "microbatch sizes (write the plan with `pipewright plan`)");
  ReplicaBatch batch;
  batch.seq_length = static_cast<int>(plan.training->seq_length);
  for (int64_t rows : plan.training->microbatch_sizes) {
    batch.microbatch_sizes.push_back(static_cast<int>(rows));
    batch.row_offsets.push_back(batch.rows);
    batch.rows += static_cast<int>(rows);
  }
  return batch;
}

}  // namespace pw
