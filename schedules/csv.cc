#include "schedules/csv.h"

#include "base/limits.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace pw {

const char* CsvFormatName(CsvFormat f) { return f == CsvFormat::kComputeOnly ? "compute_only" : "compute_comms"; }

StatusOr<Program> ParseScheduleCsv(const std::string& text, const std::string& source) {
  std::vector<std::string> lines;
  {
    std::string line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(line);
    }
    while (!lines.empty() && lines.back().find_first_not_of(" \t,") == std::string::npos) lines.pop_back();
  }
  if (lines.empty()) return Status::InvalidArgument(source + ": no rows (expected one row of actions per rank)");
  PW_RETURN_IF_ERROR(limits::CheckRange(source + ": rows (ranks)", static_cast<int64_t>(lines.size()),
                                        limits::kMaxRanks, "pipeline ranks"));
  Program p;
  p.pp_size = static_cast<int>(lines.size());
  p.ranks.resize(lines.size());
  std::map<int, int> stage_row;  // stage -> row where first seen
  int max_stage = -1, max_mb = -1;
  for (size_t row = 0; row < lines.size(); ++row) {
    size_t start = 0;
    int column = 1;
    while (true) {
      size_t comma = lines[row].find(',', start);
      std::string cell = lines[row].substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (cell.find_first_not_of(" \t") != std::string::npos) {
        auto a = ParseAction(cell);
        if (!a.ok())
          return Status::InvalidArgument(source + ": row " + std::to_string(row + 1) + ", column " +
                                         std::to_string(column) + ": " + a.status().message());
        // Indices bound the arrays every consumer allocates: refused before.
        if (a->stage >= limits::kMaxStages || a->microbatch >= limits::kMaxMicrobatches)
          return Status::InvalidArgument(source + ": row " + std::to_string(row + 1) + ", column " +
                                         std::to_string(column) + ": '" + a->ToString() + "': " +
                                         (a->stage >= limits::kMaxStages
                                              ? "stage " + std::to_string(a->stage) + " is above the limit of " +
                                                    std::to_string(limits::kMaxStages - 1) + " (global stages)"
                                              : "microbatch " + std::to_string(a->microbatch) +
                                                    " is above the limit of " +
                                                    std::to_string(limits::kMaxMicrobatches - 1) +
                                                    " (microbatches per step)"));
        auto [it, inserted] = stage_row.emplace(a->stage, static_cast<int>(row));
        if (!inserted && it->second != static_cast<int>(row))
          return Status::InvalidArgument(source + ": row " + std::to_string(row + 1) + ", column " +
                                         std::to_string(column) + ": stage " + std::to_string(a->stage) +
                                         " appears on rows " + std::to_string(it->second + 1) + " and " +
                                         std::to_string(row + 1) + " (a stage must live on one rank)");
        max_stage = std::max(max_stage, a->stage);
        max_mb = std::max(max_mb, a->microbatch);
        p.ranks[row].push_back(*a);
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
      ++column;
    }
  }
  if (max_stage < 0) return Status::InvalidArgument(source + ": no actions");
  p.num_stages = max_stage + 1;
  p.num_microbatches = max_mb + 1;
  PW_RETURN_IF_ERROR(limits::CheckRange(source + ": stages x microbatches", int64_t{p.num_stages} * p.num_microbatches,
                                        limits::kMaxStageMicrobatches, "stage-microbatch pairs"));
  p.stage_to_rank.assign(p.num_stages, -1);
  for (auto [stage, row] : stage_row) p.stage_to_rank[stage] = row;
  for (int s = 0; s < p.num_stages; ++s)
    if (p.stage_to_rank[s] < 0)
      return Status::InvalidArgument(source + ": stage " + std::to_string(s) + " appears in no row, but stage " +
                                     std::to_string(max_stage) + " does (stages must be numbered 0..S-1)");
  return p;
}

StatusOr<Program> ReadScheduleCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open CSV file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseScheduleCsv(ss.str(), path);
}

std::string ScheduleToCsv(const Program& program, CsvFormat format) {
  std::string out;
  for (const auto& list : program.ranks) {
    bool first = true;
    for (const Action& a : list) {
      if (format == CsvFormat::kComputeOnly && !IsCompute(a.type)) continue;
      if (!first) out += ',';
      out += a.ToString();
      first = false;
    }
    out += '\n';
  }
  return out;
}

}  // namespace pw
