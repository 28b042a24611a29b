// PyTorch pipelining CSV interchange (docs/PLAN_FORMAT.md, "PyTorch CSV"):
// one row per rank, actions in execution order, no header; an empty cell is
// an idle slot. `compute_only` rows hold F/B/I/W (and OVERLAP_F_B pairs);
// `compute_comms` rows the full lowered stream. Files we write load in
// PyTorch's `_PipelineScheduleRuntime._load_csv` with the matching format
// (checked against torch 2.15 by tests/schedules/torch_csv_check.py).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "schedules/program.h"

namespace pw {

enum class CsvFormat { kComputeOnly, kComputeComms };

// "compute_only" / "compute_comms".
const char* CsvFormatName(CsvFormat f);

struct CsvReadOptions {
  // Data-parallel replicas the schedule runs with (a CSV does not say). With
  // 1, REDUCE_GRAD cells are dropped (with a note); with more they are kept
  // as the IR's REDUCE_GRAD and the program's dp_size is set to this.
  int dp_size = 1;
};

// Parses CSV text. Row r (0-based, blank trailing lines ignored) is rank r;
// cells are trimmed of spaces/tabs; empty cells are skipped. The stage ->
// rank placement is inferred from where each stage's actions appear, S = max
// stage + 1, m = max microbatch + 1. Besides our actions it reads PyTorch's
// runtime-only ones and drops them, one note each kind in `notes` (if not
// null): `<s>UNSHARD`, `<s>RESHARD` (FSDP parameter gathering),
// `<s>WAIT_SEND_F<mb>` / `<s>WAIT_SEND_B<mb>` (each must follow its send on
// the same row), `<s>WAIT_REDUCE_GRAD`, and REDUCE_GRAD when
// options.dp_size is 1. A compute-only stage whose forwards are numbered
// 1..n while its backwards are 0..n-1 is PyTorch's Schedule1F1B defect: it
// is renumbered (forward k -> k-1) with a "warning: ..." line in `notes`
// naming the row, stage and cell; in a file with SEND/RECV it is an error.
// Errors (InvalidArgument, 1-based positions): a bad token
// "<source>: row 2, column 7: bad action '2X0' ..."; a stage on two ranks
// ("stage 2 appears on rows 1 and 2"); a wait with no earlier send; a stage
// in [0, S) that appears nowhere; no rows. The result is not validated.
StatusOr<Program> ParseScheduleCsv(const std::string& text, const std::string& source = "csv",
                                   std::vector<std::string>* notes = nullptr, const CsvReadOptions& options = {});
// Reads a CSV file (NotFound if it cannot be opened) and parses it.
StatusOr<Program> ReadScheduleCsv(const std::string& path, std::vector<std::string>* notes = nullptr,
                                  const CsvReadOptions& options = {});
// CSV text of `program`. kComputeOnly keeps F/B/I/W/OVERLAP_F_B only (what
// torchtitan's pipeline_parallel_schedule_csv reads). kComputeComms writes
// every action and adds what PyTorch's compute_comms loader requires: one
// `WAIT_SEND_F`/`WAIT_SEND_B` per send on the sender's row (a forward send's
// wait right after the same stage's backward of that microbatch, which proves
// the peer received it; other waits at the end of the row, in send order, as
// PyTorch's own `_add_wait_send` places them), and a `WAIT_REDUCE_GRAD` right
// after each REDUCE_GRAD. Lines end in "\n".
std::string ScheduleToCsv(const Program& program, CsvFormat format);

}  // namespace pw
