#include "schedules/csv.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "base/limits.h"
#include "base/printable.h"

namespace pw {

const char* CsvFormatName(CsvFormat f) { return f == CsvFormat::kComputeOnly ? "compute_only" : "compute_comms"; }

namespace {

// PyTorch runtime actions that our IR does not hold (read and dropped).
enum class RuntimeOnly { kUnshard, kReshard, kWaitSendF, kWaitSendB, kWaitReduceGrad };

struct RuntimeToken {
  RuntimeOnly kind;
  int stage = 0;
  int microbatch = -1;  // WAIT_SEND_* only
};

// Reads a run of digits at s[*pos] into *out; false if none or too large.
bool Digits(std::string_view s, size_t* pos, int* out) {
  const size_t start = *pos;
  int64_t v = 0;
  while (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos]))) {
    v = v * 10 + (s[*pos] - '0');
    if (v > 2000000000) return false;
    ++*pos;
  }
  *out = static_cast<int>(v);
  return *pos > start;
}

// Recognises `<s>UNSHARD`, `<s>RESHARD`, `<s>WAIT_REDUCE_GRAD`,
// `<s>WAIT_SEND_F<mb>`, `<s>WAIT_SEND_B<mb>`. nullopt: not one of these
// names (the cell is an IR action or garbage, for ParseAction to judge).
StatusOr<std::optional<RuntimeToken>> ParseRuntimeOnly(std::string_view cell) {
  while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
  while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t' || cell.back() == '\r')) cell.remove_suffix(1);
  size_t pos = 0;
  int stage = 0;
  if (!Digits(cell, &pos, &stage)) return std::optional<RuntimeToken>();
  static const std::pair<const char*, RuntimeOnly> kNames[] = {{"UNSHARD", RuntimeOnly::kUnshard},
                                                               {"RESHARD", RuntimeOnly::kReshard},
                                                               {"WAIT_REDUCE_GRAD", RuntimeOnly::kWaitReduceGrad},
                                                               {"WAIT_SEND_F", RuntimeOnly::kWaitSendF},
                                                               {"WAIT_SEND_B", RuntimeOnly::kWaitSendB}};
  for (const auto& [name, kind] : kNames) {
    const std::string_view n(name);
    if (cell.substr(pos, n.size()) != n) continue;
    RuntimeToken t{kind, stage, -1};
    size_t p = pos + n.size();
    const bool has_mb = kind == RuntimeOnly::kWaitSendF || kind == RuntimeOnly::kWaitSendB;
    const std::string shown = "'" + EscapeForTerminal(std::string(cell), 40) + "'";
    if (has_mb) {
      if (!Digits(cell, &p, &t.microbatch) || p != cell.size())
        return Status::InvalidArgument("bad action " + shown + ": " + name + " is written <stage>" + name +
                                       "<microbatch>, e.g. 0" + name + "3");
    } else if (p != cell.size()) {
      return Status::InvalidArgument("bad action " + shown + ": " + name + " takes no microbatch number (<stage>" +
                                     name + ", e.g. 1" + name + ")");
    }
    return std::optional<RuntimeToken>(t);
  }
  return std::optional<RuntimeToken>();
}

std::string Where(const std::string& source, size_t row, int column) {
  return source + ": row " + std::to_string(row + 1) + ", column " + std::to_string(column);
}

struct Cell {
  size_t row;
  int column;
};

// PyTorch's Schedule1F1B._get_pipeline_order numbers the last rank's
// forwards 1..m (its steady-state loop increments the index before its first
// forward) while the backwards are 0..m-1. Finds such stages in `p`: a stage
// whose forward microbatches are exactly {1..n} and backward ones {0..n-1}.
// Repairs them in a compute-only program; an error in a lowered one.
Status RepairOneBasedForwards(Program* p, const std::string& source,
                              const std::map<std::pair<int, int>, Cell>& first_cell, std::vector<std::string>* notes) {
  const int S = p->num_stages;
  std::vector<std::set<int>> fwd(S), bwd(S);
  for (const auto& list : p->ranks)
    for (const Action& a : list) {
      if (a.type == ActionType::kF || IsOverlap(a.type)) fwd[ForwardHalf(a).stage].insert(a.microbatch);
      if (IsInputBackward(a.type)) bwd[a.stage].insert(a.microbatch);
      if (IsOverlap(a.type)) bwd[a.b_stage].insert(a.b_microbatch);
    }
  for (int s = 0; s < S; ++s) {
    const int n = static_cast<int>(fwd[s].size());
    if (n == 0 || static_cast<int>(bwd[s].size()) != n) continue;
    if (*fwd[s].begin() != 1 || *fwd[s].rbegin() != n || *bwd[s].begin() != 0 || *bwd[s].rbegin() != n - 1) continue;
    const int rank = p->stage_to_rank[s];
    const Cell f1 = first_cell.at({s, static_cast<int>(ActionType::kF)});
    auto b0 = first_cell.find({s, static_cast<int>(ActionType::kB)});
    if (b0 == first_cell.end()) b0 = first_cell.find({s, static_cast<int>(ActionType::kI)});
    const std::string b0_text = b0 == first_cell.end()
                                    ? "its first backward"
                                    : "its first backward (column " + std::to_string(b0->second.column) + ")";
    const std::string what = Where(source, f1.row, f1.column) + ": stage " + std::to_string(s) + " (rank " +
                             std::to_string(rank) + ") numbers its forwards " + std::to_string(s) + "F1.." +
                             std::to_string(s) + "F" + std::to_string(n) + " but its backwards 0.." +
                             std::to_string(n - 1) + ": its first forward is '" + std::to_string(s) + "F1' where '" +
                             std::to_string(s) + "F0' is expected, and " + b0_text +
                             " is for microbatch 0, which it never runs forward. This is the off-by-one of PyTorch's "
                             "Schedule1F1B._get_pipeline_order, which numbers the last rank's forwards from 1";
    if (p->HasComms())
      return Status::InvalidArgument(what +
                                     " (not repaired in a file with SEND/RECV: its messages would need "
                                     "renumbering too; export the compute_only form instead)");
    for (auto& list : p->ranks)
      for (Action& a : list)
        if (a.type == ActionType::kF && a.stage == s) --a.microbatch;
    if (notes)
      notes->push_back("warning: " + what + "; read as " + std::to_string(s) + "F0.." + std::to_string(s) + "F" +
                       std::to_string(n - 1) + " (every forward of stage " + std::to_string(s) +
                       " renumbered k -> k-1)");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Program> ParseScheduleCsv(const std::string& text, const std::string& source, std::vector<std::string>* notes,
                                   const CsvReadOptions& options) {
  if (options.dp_size < 1)
    return Status::InvalidArgument(source + ": data-parallel size " + std::to_string(options.dp_size) +
                                   " (must be >= 1)");
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
  // (stage, type) -> first cell holding it (for messages).
  std::map<std::pair<int, int>, Cell> first_cell;
  int max_stage = -1;
  // Dropped runtime-only actions, by kind.
  std::map<std::string, int> dropped;
  std::set<int> dropped_reduce_stages;
  std::set<int> kept_stages;  // stages with an action the program keeps (not only dropped runtime actions)
  for (size_t row = 0; row < lines.size(); ++row) {
    // Sends of this row not yet waited for: (type, stage, mb).
    std::multiset<std::tuple<int, int, int>> pending_sends;
    size_t start = 0;
    int column = 1;
    while (true) {
      size_t comma = lines[row].find(',', start);
      std::string cell = lines[row].substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (cell.find_first_not_of(" \t") != std::string::npos) {
        const std::string at = Where(source, row, column);
        auto place = [&](int stage) -> Status {
          if (stage >= limits::kMaxStages)
            return Status::InvalidArgument(at + ": stage " + std::to_string(stage) + " is above the limit of " +
                                           std::to_string(limits::kMaxStages - 1) + " (global stages)");
          auto [it, inserted] = stage_row.emplace(stage, static_cast<int>(row));
          if (!inserted && it->second != static_cast<int>(row))
            return Status::InvalidArgument(at + ": stage " + std::to_string(stage) + " appears on rows " +
                                           std::to_string(it->second + 1) + " and " + std::to_string(row + 1) +
                                           " (a stage must live on one rank)");
          return Status::Ok();
        };
        StatusOr<std::optional<RuntimeToken>> rt = ParseRuntimeOnly(cell);
        if (!rt.ok()) return Status::InvalidArgument(at + ": " + rt.status().message());
        if (rt->has_value()) {
          const RuntimeToken t = **rt;
          PW_RETURN_IF_ERROR(place(t.stage));
          switch (t.kind) {
            case RuntimeOnly::kUnshard:
              ++dropped["UNSHARD"];
              break;
            case RuntimeOnly::kReshard:
              ++dropped["RESHARD"];
              break;
            case RuntimeOnly::kWaitReduceGrad:
              ++dropped["WAIT_REDUCE_GRAD"];
              break;
            case RuntimeOnly::kWaitSendF:
            case RuntimeOnly::kWaitSendB: {
              const bool fwd = t.kind == RuntimeOnly::kWaitSendF;
              const ActionType send = fwd ? ActionType::kSendF : ActionType::kSendB;
              const auto sent = pending_sends.find({static_cast<int>(send), t.stage, t.microbatch});
              if (sent == pending_sends.end())
                return Status::InvalidArgument(at + ": '" + std::to_string(t.stage) +
                                               (fwd ? "WAIT_SEND_F" : "WAIT_SEND_B") + std::to_string(t.microbatch) +
                                               "' waits for '" + MakeAction(t.stage, send, t.microbatch).ToString() +
                                               "', which is not an earlier, not yet waited-for send of this row");
              pending_sends.erase(sent);
              ++dropped[fwd ? "WAIT_SEND_F" : "WAIT_SEND_B"];
              break;
            }
          }
        } else {
          auto a = ParseAction(cell);
          if (!a.ok()) return Status::InvalidArgument(at + ": " + a.status().message());
          // Indices bound the arrays every consumer allocates: refused before.
          for (int idx : {a->stage, a->b_stage})
            if (idx >= 0) PW_RETURN_IF_ERROR(place(idx));
          for (int mb : {a->microbatch, a->b_microbatch})
            if (mb >= limits::kMaxMicrobatches)
              return Status::InvalidArgument(at + ": '" + a->ToString() + "': microbatch " + std::to_string(mb) +
                                             " is above the limit of " + std::to_string(limits::kMaxMicrobatches - 1) +
                                             " (microbatches per step)");
          if (IsSend(a->type)) pending_sends.insert({static_cast<int>(a->type), a->stage, a->microbatch});
          if (IsReduceGrad(a->type) && options.dp_size == 1) {
            ++dropped["REDUCE_GRAD"];
            dropped_reduce_stages.insert(a->stage);
          } else {
            first_cell.emplace(std::make_pair(a->stage, static_cast<int>(a->type)), Cell{row, column});
            if (IsOverlap(a->type)) {
              first_cell.emplace(std::make_pair(a->stage, static_cast<int>(ActionType::kF)), Cell{row, column});
              first_cell.emplace(std::make_pair(a->b_stage, static_cast<int>(ActionType::kB)), Cell{row, column});
            }
            max_stage = std::max({max_stage, a->stage, a->b_stage});
            for (int idx : {a->stage, a->b_stage})
              if (idx >= 0) kept_stages.insert(idx);
            p.ranks[row].push_back(*a);
          }
        }
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
      ++column;
    }
  }
  if (max_stage < 0) return Status::InvalidArgument(source + ": no actions");
  // A stage named only by runtime actions that are dropped (WAIT_*, UNSHARD,
  // ...) would vanish from the program and from what it writes, and its row
  // would come back as a rank with no actions, or not at all.
  for (auto [stage, row] : stage_row)
    if (!kept_stages.count(stage))
      return Status::InvalidArgument(source + ": stage " + std::to_string(stage) + " (row " + std::to_string(row + 1) +
                                     ") has only runtime actions that pipewright drops (WAIT_*, UNSHARD, RESHARD, "
                                     "REDUCE_GRAD without --dp-size); stages with compute: 0.." +
                                     std::to_string(max_stage));
  p.num_stages = max_stage + 1;
  p.dp_size = options.dp_size;
  p.stage_to_rank.assign(p.num_stages, -1);
  for (auto [stage, row] : stage_row)
    if (stage < p.num_stages) p.stage_to_rank[stage] = row;
  for (int s = 0; s < p.num_stages; ++s) {
    if (p.stage_to_rank[s] < 0)
      return Status::InvalidArgument(source + ": stage " + std::to_string(s) + " appears in no row, but stage " +
                                     std::to_string(max_stage) + " does (stages must be numbered 0..S-1)");
  }
  PW_RETURN_IF_ERROR(RepairOneBasedForwards(&p, source, first_cell, notes));
  int max_mb = -1;
  for (const auto& list : p.ranks)
    for (const Action& a : list) max_mb = std::max({max_mb, a.microbatch, a.b_microbatch});
  p.num_microbatches = max_mb + 1;
  PW_RETURN_IF_ERROR(limits::CheckRange(source + ": stages x microbatches", int64_t{p.num_stages} * p.num_microbatches,
                                        limits::kMaxStageMicrobatches, "stage-microbatch pairs"));
  if (notes) {
    auto count = [&](const char* k) {
      auto it = dropped.find(k);
      return it == dropped.end() ? 0 : it->second;
    };
    if (count("UNSHARD") + count("RESHARD") > 0)
      notes->push_back("note: " + source + ": dropped " + std::to_string(count("UNSHARD")) + " UNSHARD and " +
                       std::to_string(count("RESHARD")) +
                       " RESHARD (PyTorch's FSDP parameter all-gather and free; pipewright's plans keep each "
                       "stage's parameters resident)");
    if (count("WAIT_SEND_F") + count("WAIT_SEND_B") > 0)
      notes->push_back("note: " + source + ": dropped " + std::to_string(count("WAIT_SEND_F")) + " WAIT_SEND_F and " +
                       std::to_string(count("WAIT_SEND_B")) +
                       " WAIT_SEND_B (each matched an earlier send of its row; pipewright completes its sends "
                       "without a separate wait action)");
    if (count("REDUCE_GRAD") > 0) {
      std::string stages;
      for (int s : dropped_reduce_stages) stages += (stages.empty() ? "" : ",") + std::to_string(s);
      notes->push_back("note: " + source + ": dropped " + std::to_string(count("REDUCE_GRAD")) +
                       " REDUCE_GRAD (stages " + stages +
                       "): read with one data-parallel replica, where there is no gradient to reduce (with a "
                       "data-parallel size above 1 they are kept)");
    }
    if (count("WAIT_REDUCE_GRAD") > 0)
      notes->push_back("note: " + source + ": dropped " + std::to_string(count("WAIT_REDUCE_GRAD")) +
                       " WAIT_REDUCE_GRAD (pipewright waits for every REDUCE_GRAD before the optimizer step)");
  }
  return p;
}

StatusOr<Program> ReadScheduleCsv(const std::string& path, std::vector<std::string>* notes,
                                  const CsvReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open CSV file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseScheduleCsv(ss.str(), path, notes, options);
}

std::string ScheduleToCsv(const Program& program, CsvFormat format) {
  std::string out;
  for (const auto& list : program.ranks) {
    std::vector<std::string> cells;
    // Sends of this row not yet waited for, in send order.
    std::vector<Action> pending;
    auto wait_for = [&](ActionType send, int stage, int mb) {
      for (size_t k = 0; k < pending.size(); ++k)
        if (pending[k].type == send && pending[k].stage == stage && pending[k].microbatch == mb) {
          cells.push_back(std::to_string(stage) + (send == ActionType::kSendF ? "WAIT_SEND_F" : "WAIT_SEND_B") +
                          std::to_string(mb));
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
          return;
        }
    };
    for (const Action& a : list) {
      if (format == CsvFormat::kComputeOnly) {
        if (IsCompute(a.type)) cells.push_back(a.ToString());
        continue;
      }
      cells.push_back(a.ToString());
      if (IsSend(a.type)) pending.push_back(a);
      if (IsReduceGrad(a.type)) cells.push_back(std::to_string(a.stage) + "WAIT_REDUCE_GRAD");
      // A backward of (s, mb) proves stage s+1 received s's forward output of
      // mb: the forward send's wait cannot stall there.
      if (IsInputBackward(a.type)) wait_for(ActionType::kSendF, a.stage, a.microbatch);
      if (IsOverlap(a.type)) wait_for(ActionType::kSendF, a.b_stage, a.b_microbatch);
    }
    for (const Action& s : pending)
      cells.push_back(std::to_string(s.stage) + (s.type == ActionType::kSendF ? "WAIT_SEND_F" : "WAIT_SEND_B") +
                      std::to_string(s.microbatch));
    for (size_t k = 0; k < cells.size(); ++k) {
      if (k) out += ',';
      out += cells[k];
    }
    out += '\n';
  }
  return out;
}

}  // namespace pw
