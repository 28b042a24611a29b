// `pipewright elastic --np N [--hostfile F] [--min-np K] [--max-restarts R]
//  <plan flags> -- <run flags>`: plans for N devices, runs the plan under
// mpirun, and when a rank is lost (killed, crashed, or stopped by the
// watchdog) re-plans for the devices left (T x P x D, or P x D on a multiple
// of T devices when the plan flags fix --tp T) and resumes from the latest
// complete checkpoint, until --steps are done (docs/ELASTIC.md).
//
// Torch-free: it starts `pipewright plan` and `mpirun ... pipewright run` as
// child processes of this binary and reads what they print; the checkpoints
// themselves (keyed by layer, resumable under any plan: executor/checkpoint/
// checkpoint.h) and the data position they hold make the resume exact.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/printable.h"
#include "launch/commands.h"
#include "plan/plan.h"

namespace pw::cli {

namespace {

namespace fs = std::filesystem;

struct Host {
  std::string name;
  int slots = 1;
};

struct ElasticOptions {
  int np = 0;
  std::string hostfile;
  int min_np = 1;
  int max_restarts = 3;
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirun_args;  // --mpirun-arg, repeatable (e.g. --oversubscribe)
  std::string work_dir;                  // default: <checkpoint dir>/elastic
  std::vector<std::string> plan_args;    // everything else before --
  // --tp / --tensor-model-parallel-size T among the plan flags: every launch
  // plans T (and runs on a multiple of T ranks); 0 when not given, and then
  // each launch's `plan --num-devices` searches T as well as P and D.
  int tp = 0;
  std::vector<std::string> run_args;     // everything after --
  // Test drills (hidden --fault-drill LAUNCH:RANK:STEP:KIND, repeatable):
  // launch number LAUNCH (0 = the first) runs with run's --fault-rank RANK
  // --fault-step STEP --fault-kind KIND, so a test can lose a rank in a
  // restarted launch too.
  std::vector<std::string> drills;
  // --replan-stragglers: runs get --stop-on-straggler, and a rank they
  // report as a straggler is dropped like a lost one.
  bool replan_stragglers = false;
  // Test drill (hidden --slow-drill LAUNCH:RANK:MS, repeatable): launch
  // LAUNCH runs with run's --slow-rank RANK --slow-ms MS.
  std::vector<std::string> slow_drills;
};

// The flags elastic sets itself, refused in the pass-through lists.
const char* const kPlanFlagsElasticSets[] = {
    "--num-devices", "--pp", "--pipeline-model-parallel-size", "--dp", "--data-parallel-size", "-o", "--output"};
const char* const kRunFlagsElasticSets[] = {"--plan", "--resume"};
// The plan flags that fix T (the same option of `pipewright plan`).
const char* const kTensorParallelFlags[] = {"--tp", "--tensor-model-parallel-size"};
// Fault drills (run's test-only --fault-* flags) apply to the first launch
// only: a drill repeated after every restart would never finish.
const char* const kFaultFlags[] = {"--fault-rank", "--fault-step", "--fault-kind", "--slow-rank", "--slow-ms"};

// The value of `flag` in `args` ("--flag V" or "--flag=V"), or nullopt.
std::optional<std::string> FlagValue(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(flag + "=", 0) == 0) return args[i].substr(flag.size() + 1);
  }
  return std::nullopt;
}

bool HasFlag(const std::vector<std::string>& args, const std::string& flag) {
  for (const std::string& a : args)
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  return false;
}

// `args` without `flags` and their values.
std::vector<std::string> Without(const std::vector<std::string>& args, const char* const* begin,
                                 const char* const* end) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    bool drop = false;
    for (const char* const* f = begin; f != end; ++f) {
      if (args[i] == *f) {
        drop = true;
        ++i;  // its value
        break;
      }
      if (args[i].rfind(std::string(*f) + "=", 0) == 0) {
        drop = true;
        break;
      }
    }
    if (!drop) out.push_back(args[i]);
  }
  return out;
}

// Reads an Open MPI hostfile: "host [slots=N]" per line, '#' comments.
StatusOr<std::vector<Host>> ReadHostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("--hostfile " + path + ": cannot open the file");
  std::vector<Host> hosts;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    Host h;
    if (!(words >> h.name)) continue;
    std::string word;
    while (words >> word) {
      if (word.rfind("slots=", 0) == 0) {
        try {
          h.slots = std::stoi(word.substr(6));
        } catch (...) {
          h.slots = 0;
        }
        if (h.slots < 1)
          return Status::InvalidArgument("--hostfile " + path + " line " + std::to_string(number) + ": '" +
                                         EscapeForTerminal(word, 64) + "' must be slots=<positive integer>");
      }
    }
    hosts.push_back(h);
  }
  if (hosts.empty()) return Status::InvalidArgument("--hostfile " + path + ": no hosts");
  return hosts;
}

// Parses elastic's own flags out of `before` (the arguments before --); the
// rest are plan flags. Errors name the flag.
StatusOr<ElasticOptions> ParseElastic(const std::vector<std::string>& before, const std::vector<std::string>& after) {
  ElasticOptions o;
  CLI::App app{"pipewright elastic"};
  app.allow_extras();
  app.set_help_flag();
  app.add_option("--np", o.np)->required();
  app.add_option("--hostfile", o.hostfile);
  app.add_option("--min-np", o.min_np);
  app.add_option("--max-restarts", o.max_restarts);
  app.add_option("--mpirun", o.mpirun);
  app.add_option("--mpirun-arg", o.mpirun_args)->allow_extra_args(false);
  app.add_option("--work-dir", o.work_dir);
  app.add_option("--fault-drill", o.drills)->allow_extra_args(false);
  app.add_option("--slow-drill", o.slow_drills)->allow_extra_args(false);
  app.add_flag("--replan-stragglers", o.replan_stragglers);
  std::vector<std::string> reversed(before.rbegin(), before.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return Status::InvalidArgument(std::string("elastic: ") + e.what());
  }
  o.plan_args = app.remaining();
  // T is re-planned like P and D: without --tp each launch's `plan
  // --num-devices` searches it (T <= the device's gpus_per_node, dividing the
  // devices and the heads), and with --tp it stays fixed, every launch on a
  // multiple of T ranks. Either way a restart resumes under the new layout:
  // checkpoints hold full tensors, whatever T wrote them (docs/ELASTIC.md).
  o.run_args = after;
  auto bad = [](const std::string& what) { return Status::InvalidArgument("elastic: " + what); };
  if (o.np < 1) return bad("--np " + std::to_string(o.np) + " must be >= 1");
  if (o.min_np < 1 || o.min_np > o.np)
    return bad("--min-np " + std::to_string(o.min_np) + " must be in [1, --np " + std::to_string(o.np) + "]");
  for (const char* f : kTensorParallelFlags) {
    const std::optional<std::string> t = FlagValue(o.plan_args, f);
    if (!t) continue;
    if (t->empty() || t->size() > 6 || t->find_first_not_of("0123456789") != std::string::npos || std::stoi(*t) < 1)
      return bad(std::string(f) + " " + EscapeForTerminal(*t, 64) + " must be an integer >= 1");
    if (o.tp > 0 && o.tp != std::stoi(*t))
      return bad("--tp " + std::to_string(o.tp) + " and " + f + " " + *t + " disagree: give T once");
    o.tp = std::stoi(*t);
  }
  if (o.tp > 1 && o.np % o.tp != 0)
    return bad("--np " + std::to_string(o.np) + " is not a multiple of --tp " + std::to_string(o.tp) +
               ": every launch runs whole tensor-parallel groups (give --np a multiple of T, or omit --tp and "
               "let each launch's plan choose T)");
  if (o.max_restarts < 0) return bad("--max-restarts " + std::to_string(o.max_restarts) + " must be >= 0");
  for (const char* f : kPlanFlagsElasticSets)
    if (HasFlag(o.plan_args, f))
      return bad(std::string(f) + " is set by elastic (it plans for the devices it has: --num-devices)");
  for (const char* f : kRunFlagsElasticSets)
    if (HasFlag(o.run_args, f))
      return bad(std::string("run flag ") + f + " is set by elastic (the plan of each launch, the latest checkpoint)");
  const std::optional<std::string> dir = FlagValue(o.run_args, "--checkpoint-dir");
  const std::optional<std::string> every = FlagValue(o.run_args, "--checkpoint-every");
  if (!dir) return bad("the run flags (after --) need --checkpoint-dir DIR: a restart resumes from its checkpoints");
  if (!every || every->empty() || every->find_first_not_of("0123456789") != std::string::npos || std::stoll(*every) < 1)
    return bad("the run flags (after --) need --checkpoint-every N >= 1: without a cadence a restart would start over");
  if (!FlagValue(o.run_args, "--steps")) return bad("the run flags (after --) need --steps");
  if (o.work_dir.empty()) o.work_dir = (fs::path(*dir) / "elastic").string();
  static const std::regex kDrill(R"(\d+:\d+:\d+:(kill|hang|checkpoint))");
  for (const std::string& d : o.drills)
    if (!std::regex_match(d, kDrill))
      return bad("--fault-drill " + EscapeForTerminal(d, 64) + ": expected LAUNCH:RANK:STEP:kill|hang|checkpoint");
  static const std::regex kSlow(R"(\d+:\d+:\d+(\.\d+)?)");
  for (const std::string& d : o.slow_drills)
    if (!std::regex_match(d, kSlow))
      return bad("--slow-drill " + EscapeForTerminal(d, 64) + ": expected LAUNCH:RANK:MS");
  if (o.replan_stragglers && HasFlag(o.run_args, "--straggler-threshold") &&
      FlagValue(o.run_args, "--straggler-threshold") == std::optional<std::string>("0"))
    return bad("--replan-stragglers needs the straggler check: the run flags set --straggler-threshold 0");
  return o;
}

// The latest complete checkpoint under `root`: the step_<n> directory with
// the highest n that holds manifest.json (written last: a directory without
// it is an interrupted write, never read). nullopt when there is none.
std::optional<std::pair<int, std::string>> LatestCheckpoint(const std::string& root) {
  std::optional<std::pair<int, std::string>> best;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return best;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || name.size() <= 5) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    if (!fs::exists(entry.path() / "manifest.json", ec)) continue;
    const int step = std::stoi(name.substr(5));
    if (!best || step > best->first) best = {step, entry.path().string()};
  }
  return best;
}

struct ChildResult {
  int exit_code = 0;             // the child's exit status, 128 + signal if killed
  std::deque<std::string> tail;  // its last lines (stdout and stderr together)
};

// Runs `argv` with stdout and stderr piped to us; each line is echoed to our
// stdout (when `echo`) and the last 400 kept. Errors: Internal when the child
// cannot be started.
StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, bool echo) {
  int fds[2];
  if (::pipe(fds) != 0) return Status::Internal(std::string("elastic: pipe: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Internal(std::string("elastic: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "elastic: cannot start %s: %s\n", argv[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  ChildResult r;
  std::string pending;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (echo) std::printf("%s\n", line.c_str());
      r.tail.push_back(std::move(line));
      if (r.tail.size() > 400) r.tail.pop_front();
    }
    if (echo) std::fflush(stdout);
  }
  if (!pending.empty()) {
    if (echo) std::printf("%s\n", pending.c_str());
    r.tail.push_back(pending);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// What a failed launch says about the rank it lost: Open MPI's report
// ("process rank R with PID P on node H exited on signal S"), else the
// watchdog's or a rank's own error naming a rank, else nothing known.
struct Loss {
  int rank = -1;
  std::string host;
  std::string reason;  // "signal 9 (Killed)", "watchdog: ...", "straggler: ...", ...
  int step = -1;       // the last step any line names (0-based), -1 unknown
  // A straggler stop (run --stop-on-straggler): the steps done, all
  // checkpointed (nothing to recompute); -1 otherwise.
  int stopped_after = -1;
};

Loss FindLoss(const std::deque<std::string>& lines) {
  Loss loss;
  // run --stop-on-straggler: "straggler: rank 2 on vm: compute ... x1.87
  // its peers' ... 41 % of the step ..." then "straggler: stopping after
  // step 6 (checkpoint ...)".
  static const std::regex kStraggler(
      R"(^straggler: rank (\d+)(?: on (\S+))?: .*(x[0-9.]+ its peers').*, ([0-9]+ % of the step))");
  static const std::regex kStopped(R"(^straggler: stopping after step (\d+))");
  std::smatch sm;
  Loss straggler;
  for (const std::string& line : lines) {
    if (std::regex_search(line, sm, kStraggler)) {
      straggler.rank = std::stoi(sm[1]);
      straggler.host = sm[2].matched ? std::string(sm[2]) : "";
      straggler.reason = "straggler: " + std::string(sm[3]) + ", " + std::string(sm[4]);
    } else if (straggler.rank >= 0 && std::regex_search(line, sm, kStopped)) {
      straggler.stopped_after = std::stoi(sm[1]);
      straggler.step = straggler.stopped_after - 1;
    }
  }
  if (straggler.stopped_after >= 0) return straggler;
  static const std::regex kOmpi(
      R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?)");
  static const std::regex kStep(R"((?:^|[^a-z])step (\d+)(?:/\d+)?)");
  static const std::regex kWaited(R"(rank (\d+).*(?:watchdog|lost|died|no message))");
  for (const std::string& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, kOmpi)) {
      loss.rank = std::stoi(m[1]);
      loss.host = m[2];
      loss.reason = "signal " + std::string(m[3]) + (m[4].matched ? " (" + std::string(m[4]) + ")" : "");
    } else if (loss.rank < 0 && std::regex_search(line, m, kWaited)) {
      loss.reason = "watchdog: " + line.substr(0, 160);
    }
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kStep); it != std::sregex_iterator(); ++it)
      loss.step = std::max(loss.step, std::stoi((*it)[1]));
  }
  return loss;
}

std::string SelfPath() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "pipewright";
  self[n] = '\0';
  return self;
}

// "TP2 x PP4 x DP2" (TP only when tp_size > 1, DP only when dp_size > 1),
// the schedule and m.
std::string Layout(const Plan& plan) {
  std::string s = plan.tp_size > 1 ? "TP" + std::to_string(plan.tp_size) + " x " : "";
  s += "PP" + std::to_string(plan.pp_size);
  if (plan.dp_size > 1) s += " x DP" + std::to_string(plan.dp_size);
  s += " " + plan.schedule + " m=" + std::to_string(plan.num_microbatches);
  return s;
}

Status RunElastic(const ElasticOptions& o) {
  std::vector<Host> hosts;
  if (!o.hostfile.empty()) {
    PW_ASSIGN_OR_RETURN(hosts, ReadHostfile(o.hostfile));
    int slots = 0;
    for (const Host& h : hosts) slots += h.slots;
    if (slots < o.np)
      return Status::InvalidArgument("elastic: --hostfile " + o.hostfile + " has " + std::to_string(slots) +
                                     " slots, fewer than --np " + std::to_string(o.np));
  }
  std::error_code ec;
  fs::create_directories(o.work_dir, ec);
  if (ec) return Status::InvalidArgument("elastic: --work-dir " + o.work_dir + ": " + ec.message());
  const std::string self = SelfPath();
  const std::string ckpt_dir = *FlagValue(o.run_args, "--checkpoint-dir");
  const int steps = std::stoi(*FlagValue(o.run_args, "--steps"));
  int np = o.np;
  int restarts = 0;
  int recomputed = 0;
  for (;;) {
    // 1. Plan for the devices there are.
    const std::string plan_path =
        (fs::path(o.work_dir) / ("plan-np" + std::to_string(np) + "-launch" + std::to_string(restarts) + ".json"))
            .string();
    std::vector<std::string> plan_cmd = {self, "plan"};
    plan_cmd.insert(plan_cmd.end(), o.plan_args.begin(), o.plan_args.end());
    plan_cmd.insert(plan_cmd.end(), {"--num-devices", std::to_string(np), "-o", plan_path});
    PW_ASSIGN_OR_RETURN(ChildResult planned, RunChild(plan_cmd, /*echo=*/false));
    if (planned.exit_code != 0) {
      std::string why;
      for (const std::string& l : planned.tail) why += "\n  " + l;
      return Status::Infeasible("elastic: planning for " + std::to_string(np) + " devices failed (exit " +
                                std::to_string(planned.exit_code) + "):" + why);
    }
    PW_ASSIGN_OR_RETURN(Plan plan, ReadPlanFile(plan_path));
    const double predicted = plan.predicted.makespan_s;
    // 2. Resume from the latest complete checkpoint, if any.
    const std::optional<std::pair<int, std::string>> latest = LatestCheckpoint(ckpt_dir);
    if (restarts == 0) {
      std::printf("elastic: %d devices: %s, predicted step %.4g s%s\n", np, Layout(plan).c_str(), predicted,
                  latest ? (", resuming from step " + std::to_string(latest->first)).c_str() : "");
    }
    std::fflush(stdout);
    // 3. Launch.
    std::vector<std::string> cmd = {o.mpirun, "-np", std::to_string(np)};
    if (::geteuid() == 0) cmd.push_back("--allow-run-as-root");
    if (!hosts.empty()) {
      const std::string hf = (fs::path(o.work_dir) / ("hostfile-launch" + std::to_string(restarts))).string();
      std::ofstream out(hf);
      for (const Host& h : hosts) out << h.name << " slots=" << h.slots << "\n";
      if (!out) return Status::Internal("elastic: cannot write " + hf);
      cmd.insert(cmd.end(), {"--hostfile", hf});
    }
    cmd.insert(cmd.end(), o.mpirun_args.begin(), o.mpirun_args.end());
    cmd.insert(cmd.end(), {self, "run", "--plan", plan_path});
    const std::vector<std::string> run_args =
        restarts == 0 ? o.run_args : Without(o.run_args, std::begin(kFaultFlags), std::end(kFaultFlags));
    cmd.insert(cmd.end(), run_args.begin(), run_args.end());
    if (o.replan_stragglers && !HasFlag(run_args, "--stop-on-straggler")) cmd.push_back("--stop-on-straggler");
    for (const std::string& d : o.slow_drills) {
      const size_t a = d.find(':'), b = d.find(':', a + 1);
      if (std::stoi(d.substr(0, a)) == restarts)
        cmd.insert(cmd.end(), {"--slow-rank", d.substr(a + 1, b - a - 1), "--slow-ms", d.substr(b + 1)});
    }
    for (const std::string& d : o.drills) {
      std::vector<std::string> f;
      std::stringstream parts(d);
      for (std::string part; std::getline(parts, part, ':');) f.push_back(part);
      if (std::stoi(f[0]) == restarts)
        cmd.insert(cmd.end(), {"--fault-rank", f[1], "--fault-step", f[2], "--fault-kind", f[3]});
    }
    if (latest) cmd.insert(cmd.end(), {"--resume", ckpt_dir});
    PW_ASSIGN_OR_RETURN(ChildResult ran, RunChild(cmd, /*echo=*/true));
    if (ran.exit_code == 0) {
      std::printf("elastic: done: %d steps on %d devices at the end, %d restart%s, %d step%s recomputed\n", steps, np,
                  restarts, restarts == 1 ? "" : "s", recomputed, recomputed == 1 ? "" : "s");
      return Status::Ok();
    }
    // 4. A rank was lost: drop its slot (its host's, with a hostfile). A run
    // that failed without losing one (bad input, a diverged loss) is not
    // restarted: it would fail the same way.
    const Loss loss = FindLoss(ran.tail);
    if (loss.rank < 0 && loss.reason.empty()) {
      std::string why;
      for (size_t i = ran.tail.size() > 8 ? ran.tail.size() - 8 : 0; i < ran.tail.size(); ++i)
        if (ran.tail[i].rfind("pipewright", 0) == 0) why += "\n  " + ran.tail[i];
      return Status::InvalidArgument("elastic: the run failed (mpirun exit " + std::to_string(ran.exit_code) +
                                     ") without losing a rank; not restarting:" + why);
    }
    const std::optional<std::pair<int, std::string>> resume = LatestCheckpoint(ckpt_dir);
    const int resume_step = resume ? resume->first : 0;
    if (loss.stopped_after >= 0)
      recomputed += std::max(0, loss.stopped_after - resume_step);
    else if (loss.step >= 0)
      recomputed += std::max(0, loss.step + 1 - resume_step);
    int lost_slots = 1;
    if (!hosts.empty() && !loss.host.empty()) {
      // Open MPI names the node by its host name, a hostfile may give the
      // full DNS name (the MPI Operator's "<pod>.<job>.<namespace>.svc").
      // (Addresses such as 127.0.0.2 are compared whole.)
      auto first_label = [](const std::string& n) {
        return !n.empty() && std::isalpha(static_cast<unsigned char>(n[0])) ? n.substr(0, n.find('.')) : n;
      };
      auto it = std::find_if(hosts.begin(), hosts.end(), [&](const Host& h) {
        return h.name == loss.host || first_label(h.name) == first_label(loss.host);
      });
      if (it != hosts.end()) {
        lost_slots = it->slots;
        hosts.erase(it);
      }
    }
    ++restarts;
    // With --tp T a launch runs whole tensor-parallel groups: the devices
    // left, rounded down to a multiple of T (the rest stay idle). Without
    // it, each launch's plan chooses a T that divides the devices left.
    const int left = np - lost_slots;
    const int next = o.tp > 1 ? left / o.tp * o.tp : left;
    const std::string rounded =
        next == left ? std::string()
                     : " (" + std::to_string(left) + " left, rounded down to a multiple of --tp " +
                           std::to_string(o.tp) + ")";
    std::printf("elastic: lost rank %s%s (%s) at step %s; ", loss.rank >= 0 ? std::to_string(loss.rank).c_str() : "?",
                loss.host.empty() ? "" : (" on " + loss.host).c_str(),
                loss.reason.empty() ? ("run exit " + std::to_string(ran.exit_code)).c_str() : loss.reason.c_str(),
                loss.step >= 0 ? std::to_string(loss.step + 1).c_str() : "?");
    if (next < o.min_np) {
      const std::string what = std::to_string(left) + " devices left" +
                               (next == left ? std::string()
                                             : ", " + std::to_string(next) +
                                                   " of them in whole tensor-parallel groups of --tp " +
                                                   std::to_string(o.tp));
      std::printf("%s\n", what.c_str());
      return Status::Infeasible("elastic: " + what + ", below --min-np " + std::to_string(o.min_np) + " (" +
                                std::to_string(restarts) + " restarts)");
    }
    if (restarts > o.max_restarts) {
      std::printf("no restarts left\n");
      return Status::Infeasible("elastic: the run failed again after --max-restarts " + std::to_string(o.max_restarts) +
                                " restarts");
    }
    np = next;
    // The new layout is printed once planned (next loop), on the same line.
    std::vector<std::string> replan = {self, "plan"};
    replan.insert(replan.end(), o.plan_args.begin(), o.plan_args.end());
    const std::string peek =
        (fs::path(o.work_dir) / ("plan-np" + std::to_string(np) + "-launch" + std::to_string(restarts) + ".json"))
            .string();
    replan.insert(replan.end(), {"--num-devices", std::to_string(np), "-o", peek});
    PW_ASSIGN_OR_RETURN(ChildResult again, RunChild(replan, /*echo=*/false));
    if (again.exit_code != 0) {
      std::printf("no plan for %d devices\n", np);
      std::string why;
      for (const std::string& l : again.tail) why += "\n  " + l;
      return Status::Infeasible("elastic: planning for " + std::to_string(np) + " devices failed:" + why);
    }
    PW_ASSIGN_OR_RETURN(Plan next_plan, ReadPlanFile(peek));
    std::printf("re-planned for %d devices%s: %s, predicted step %.4g s; resuming from step %d%s\n", np,
                rounded.c_str(), Layout(next_plan).c_str(), next_plan.predicted.makespan_s, resume_step,
                resume ? (" (" + resume->second + ")").c_str() : " (no checkpoint yet: from the start)");
    std::fflush(stdout);
  }
}

constexpr char kElasticHelp[] =
    R"(Plan for --np devices, train under mpirun, and when a rank is lost re-plan for the devices left and resume
from the latest complete checkpoint, until --steps are done (docs/ELASTIC.md).
Usage: pipewright elastic --np N [OPTIONS] <plan flags> -- <run flags>

Options:
  --np INT REQUIRED           devices (ranks) to start with; each launch plans with --num-devices
  --hostfile TEXT             Open MPI hostfile ("host slots=N" lines): a lost rank drops its whole host
  --min-np INT=1              stop, with the reason, when fewer devices than this are left
  --max-restarts INT=3        stop after this many restarts
  --mpirun TEXT=mpirun        the mpirun to launch with
  --mpirun-arg TEXT ...       an argument added to every mpirun command line (repeatable), e.g. --oversubscribe
  --work-dir TEXT             where each launch's plan is written (default: <--checkpoint-dir>/elastic)
  --replan-stragglers         a rank the run reports as a straggler (run --straggler-threshold) is dropped like a
                              lost one: the run checkpoints that step and stops, elastic re-plans and resumes

Every other flag before -- goes to `pipewright plan` (not --num-devices, --pp, --dp or -o: elastic sets them);
without --tp each launch's plan chooses T x P x D for the devices it has, with --tp T every launch keeps T and
runs on a multiple of T devices (after a loss: the devices left, rounded down). The flags after -- go to
`pipewright run` and must include --steps, --checkpoint-dir and --checkpoint-every (not --plan or --resume:
elastic sets them).
)";

}  // namespace

void RegisterElasticCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* sub = app.add_subcommand(
      "elastic",
      "plan for --np devices, train under mpirun, and on a lost rank re-plan for the devices left and resume from "
      "the latest checkpoint: elastic --np N [--hostfile F] [--min-np K] [--max-restarts R] [--mpirun PATH] "
      "[--mpirun-arg A]... [--work-dir D] [--replan-stragglers] <plan flags> -- <run flags> (docs/ELASTIC.md)");
  sub->prefix_command();  // every argument after the name is ours to split at --
  sub->set_help_flag();
  sub->callback([sub, &ctx] {
    std::vector<std::string> args = sub->remaining();
    const auto dash = std::find(args.begin(), args.end(), "--");
    if (std::find(args.begin(), dash, "--help") != dash || std::find(args.begin(), dash, "-h") != dash) {
      std::fputs(kElasticHelp, stdout);
      return;
    }
    if (dash == args.end()) {
      Fail(ctx, "elastic",
           Status::InvalidArgument("elastic: the run flags go after -- (pipewright elastic --np N <plan flags> -- "
                                   "--data FILE --steps S --checkpoint-dir DIR --checkpoint-every K)"));
      return;
    }
    const std::vector<std::string> before(args.begin(), dash), after(dash + 1, args.end());
    StatusOr<ElasticOptions> o = ParseElastic(before, after);
    Status st = o.ok() ? RunElastic(*o) : o.status();
    if (!st.ok()) Fail(ctx, "elastic", st);
  });
}

}  // namespace pw::cli
