#include "schedules/action.h"

#include <array>
#include <cctype>
#include <limits>

#include "base/printable.h"

namespace pw {

namespace {
constexpr std::array<const char*, kNumActionTypes> kNames = {
    "F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "REDUCE_GRAD", "OVERLAP_F_B"};

// Reads a run of decimal digits at text[*pos]; false if none or overflow.
bool ReadNumber(std::string_view text, size_t* pos, int32_t* out) {
  size_t start = *pos;
  int64_t value = 0;
  while (*pos < text.size() && std::isdigit(static_cast<unsigned char>(text[*pos]))) {
    value = value * 10 + (text[*pos] - '0');
    if (value > std::numeric_limits<int32_t>::max()) return false;
    ++*pos;
  }
  if (*pos == start) return false;
  *out = static_cast<int32_t>(value);
  return true;
}
}  // namespace

const char* ActionTypeName(ActionType type) { return kNames[static_cast<size_t>(type)]; }

std::string Action::ToString() const {
  if (type == ActionType::kOverlapFB)
    return "(" + ForwardHalf(*this).ToString() + ";" + BackwardHalf(*this).ToString() + ")" + ActionTypeName(type);
  if (type == ActionType::kReduceGrad) return std::to_string(stage) + ActionTypeName(type);
  return std::to_string(stage) + ActionTypeName(type) + std::to_string(microbatch);
}

StatusOr<Action> ParseAction(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  auto bad = [&](const char* why) {
    // The token is quoted escaped and cut: it may be a binary file's bytes.
    return Status::InvalidArgument("bad action '" + EscapeForTerminal(std::string(text), 40) + "': " + why +
                                   " (expected <stage><F|B|I|W|SEND_F|RECV_F|SEND_B|RECV_B><microbatch>, e.g. 2I0, "
                                   "<stage>REDUCE_GRAD, or (<stage>F<mb>;<stage>B<mb>)OVERLAP_F_B)");
  };
  if (text.empty()) return bad("empty");
  if (text.front() == '(') {  // (<F half>;<B half>)OVERLAP_F_B, PyTorch's sub_actions form
    const std::string_view suffix = ")OVERLAP_F_B";
    const size_t semi = text.find(';');
    if (text.size() <= suffix.size() || text.substr(text.size() - suffix.size()) != suffix ||
        semi == std::string_view::npos || semi > text.size() - suffix.size())
      return bad("a pair is written (<stage>F<microbatch>;<stage>B<microbatch>)OVERLAP_F_B");
    StatusOr<Action> f = ParseAction(text.substr(1, semi - 1));
    if (!f.ok()) return bad(("its F half: " + f.status().message()).c_str());
    StatusOr<Action> b = ParseAction(text.substr(semi + 1, text.size() - suffix.size() - semi - 1));
    if (!b.ok()) return bad(("its B half: " + b.status().message()).c_str());
    if (f->type != ActionType::kF || b->type != ActionType::kB)
      return bad("an OVERLAP_F_B pairs one forward (F) and then one full backward (B)");
    return MakeOverlap(f->stage, f->microbatch, b->stage, b->microbatch);
  }
  Action action;
  size_t pos = 0;
  if (!ReadNumber(text, &pos, &action.stage)) return bad("no stage number");
  // Longest type name that matches at pos, then the rest must be digits only.
  int best = -1;
  size_t best_len = 0;
  for (int t = 0; t < kNumActionTypes; ++t) {
    std::string_view name(kNames[t]);
    if (text.substr(pos, name.size()) == name && name.size() > best_len) {
      best = t;
      best_len = name.size();
    }
  }
  if (best < 0) return bad("unknown action type");
  action.type = static_cast<ActionType>(best);
  if (action.type == ActionType::kOverlapFB)
    return bad("OVERLAP_F_B is written (<stage>F<mb>;<stage>B<mb>)OVERLAP_F_B");
  pos += best_len;
  if (action.type == ActionType::kReduceGrad) {
    action.microbatch = -1;
    if (pos != text.size()) return bad("REDUCE_GRAD takes no microbatch number");
    return action;
  }
  if (!ReadNumber(text, &pos, &action.microbatch)) return bad("no microbatch number");
  if (pos != text.size()) return bad("trailing characters");
  return action;
}

}  // namespace pw
