// PyTorch pipelining CSV interchange (ECOSYSTEM.md §1.3): one row per rank,
// actions in execution order, no header; an empty cell is an idle slot.
// `compute_only` rows hold F/B/I/W; `compute_comms` rows the full lowered
// stream. Files we write load in PyTorch's `_PipelineScheduleRuntime._load_csv`
// with the matching format.
#pragma once

#include <string>

#include "schedules/program.h"
#include "base/status.h"

namespace pw {

enum class CsvFormat { kComputeOnly, kComputeComms };

// "compute_only" / "compute_comms".
const char* CsvFormatName(CsvFormat f);

// Parses CSV text. Row r (0-based, blank trailing lines ignored) is rank r;
// cells are trimmed of spaces/tabs; empty cells are skipped. The stage ->
// rank placement is inferred from where each stage's actions appear, S = max
// stage + 1, m = max microbatch + 1. Errors (InvalidArgument, 1-based
// positions): a bad token "<source>: row 2, column 7: bad action '2X0' ...";
// a stage on two ranks ("stage 2 appears on rows 1 and 2"); a stage in
// [0, S) that appears nowhere; no rows. The result is not validated.
StatusOr<Program> ParseScheduleCsv(const std::string& text, const std::string& source = "csv");
// Reads a CSV file (NotFound if it cannot be opened) and parses it.
StatusOr<Program> ReadScheduleCsv(const std::string& path);
// CSV text of `program`; kComputeOnly drops SEND/RECV. Lines end in "\n".
std::string ScheduleToCsv(const Program& program, CsvFormat format);

}  // namespace pw
