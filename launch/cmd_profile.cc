// `pipewright profile`: measure a GPT's layer kinds (embedding, block,
// head+loss) through F / I / W / B with LibTorch on this machine, and the
// point-to-point link between two ranks when launched under mpirun; fit
// linear cost models (planner/profile_fit.h) and write a profile file that
// `pipewright plan --profile FILE` uses instead of the analytic model.
//   pipewright profile --model-config cfg.json -o profile.json
//   mpirun -np 2 pipewright profile --model-config cfg.json -o profile.json
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "base/file_io.h"
#include "executor/comm/agree.h"
#include "executor/comm/communicator_factory.h"
#include "executor/comm/launch_env.h"
#include "executor/comm/mpi_communicator.h"
#include "executor/profiling/profile.h"
#include "launch/commands.h"
#include "launch/flags.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/profile_fit.h"

namespace pw::cli {

namespace {

struct ProfileCommandOptions {
  std::string model_config;
  std::string output = "profile.json";
  std::vector<int> micro_batch_sizes{1, 2, 4};
  std::vector<int> seq_lengths{32, 64};
  int warmup = 2;
  int repetitions = 7;
  int in_flight = 4;
  int threads = 1;
  std::string dtype = "fp32";  // --dtype: fp32 | fp64 (launch/flags.h)
  uint64_t seed = 1234;
  bool solo = false;  // under mpirun: rank 0 measures the layers alone
  int ref_micro_batch_size = 0;
  int ref_seq_length = 0;
  std::vector<int64_t> p2p_bytes{4096, 65536, 262144, 1048576, 4194304};
  int p2p_warmup = 5;
  int p2p_repetitions = 30;
  // Tensor-parallel collectives over all the ranks (whole-tensor bytes).
  std::vector<int64_t> collective_bytes{16384, 65536, 262144, 1048576};
  int tp = 1;                         // --tp: the ranks are one TP group, layers measured as TP shards
  bool no_sequence_parallel = false;  // --no-sequence-parallel (with --tp > 1)
};

// What can be known wrong before measuring anything (the same on every
// rank): fits need two shapes with different token counts and two message
// sizes; the output file's directory must exist.
Status CheckProfileRequest(const ProfileCommandOptions& c, bool measures_p2p) {
  std::set<int64_t> tokens;
  for (int b : c.micro_batch_sizes)
    for (int s : c.seq_lengths) tokens.insert(static_cast<int64_t>(b) * s);
  if (tokens.size() < 2)
    return Status::InvalidArgument("--micro-batch-sizes and --seq-lengths give " + std::to_string(tokens.size()) +
                                   " distinct token count(s) (micro-batch size x sequence length); fitting time = "
                                   "a*tokens + b needs at least 2 (e.g. --micro-batch-sizes 1,2)");
  if (measures_p2p) {
    std::set<int64_t> sizes(c.p2p_bytes.begin(), c.p2p_bytes.end());
    if (sizes.size() < 2 || *sizes.begin() < 1)
      return Status::InvalidArgument(
          "--p2p-bytes needs at least 2 distinct sizes, each >= 1 byte (fitting latency "
          "+ bytes / bandwidth)");
  }
  const std::filesystem::path parent = std::filesystem::path(c.output).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    return Status::InvalidArgument("-o/--output " + c.output + ": its directory '" + parent.string() +
                                   "' does not exist");
  return Status::Ok();
}

Status RunProfile(const ProfileCommandOptions& c) {
  if (c.dtype == "bf16")
    return Status::InvalidArgument(
        "--dtype bf16: profile measures the executor's layers, which compute in fp32 or "
        "fp64 (LibTorch's float32, float64)");
  PW_ASSIGN_OR_RETURN(exec::LaunchEnv env, exec::ReadLaunchEnv());
  PW_RETURN_IF_ERROR(CheckProfileRequest(c, env.world_size > 1));
  if (c.tp < 1 || (c.tp > 1 && (env.world_size != c.tp || c.solo)))
    return Status::InvalidArgument("--tp " + std::to_string(c.tp) + ": the ranks are one tensor-parallel group; run " +
                                   (c.tp < 1 ? std::string("with --tp >= 1")
                                             : "under mpirun -np " + std::to_string(c.tp) + " without --solo (" +
                                                   std::to_string(env.world_size) + " rank(s) now)"));
  // Every rank reads the model first, so a bad --model-config stops all of
  // them here instead of leaving ranks > 0 waiting for rank 0.
  PW_ASSIGN_OR_RETURN(std::string path, ResolveShippedFile(c.model_config, "configs", "--model-config"));
  PW_ASSIGN_OR_RETURN(nlohmann::json model, ReadJsonFile(path));
  std::unique_ptr<exec::MpiEnvironment> mpi;
  std::unique_ptr<exec::CommunicatorHandle> handle;  // destroyed before `mpi`
  exec::Communicator* comm = nullptr;
  if (env.world_size > 1) {
    PW_ASSIGN_OR_RETURN(mpi, exec::MpiEnvironment::Init(nullptr, nullptr));
    exec::CommunicatorSpec spec;
    spec.kind = "mpi";
    PW_ASSIGN_OR_RETURN(handle, exec::MakeCommunicator(spec));
    comm = &handle->comm();
  }
  const bool printer = !comm || comm->rank() == 0;
  Profile profile;
  if (comm) {
    PW_ASSIGN_OR_RETURN(profile.comm_samples, exec::MeasureP2P(*comm, c.p2p_bytes, c.p2p_warmup, c.p2p_repetitions));
    if (printer)
      for (const CommSample& s : profile.comm_samples)
        std::printf("p2p       %9lld B  one-way %9.3f us  (%.3f GB/s)\n", static_cast<long long>(s.bytes),
                    1e6 * s.seconds, s.bytes / s.seconds / 1e9);
    // The collectives a tensor-parallel group of all these ranks runs
    // (plan --tp <ranks> --profile costs its TP collectives with them).
    // Waited on as the engine waits on its TP group's (engine.cc
    // kTensorParallelSpinWaitS: polling without sleeping first).
    comm->SetSpinWait(0.005);
    PW_ASSIGN_OR_RETURN(profile.collective_samples,
                        exec::MeasureCollectives(*comm, c.collective_bytes, c.p2p_warmup, c.p2p_repetitions));
    comm->SetSpinWait(0);
    if (printer)
      for (const CollectiveSample& s : profile.collective_samples)
        std::printf("%-14s %d ranks %9lld B  %9.3f us\n", s.kind.c_str(), s.ranks, static_cast<long long>(s.bytes),
                    1e6 * s.seconds);
  } else {
    std::printf(
        "p2p and collectives: not measured (a single process; launch with mpirun -np 2 to measure the link and "
        "the tensor-parallel collectives of 2 ranks)\n");
  }
  // The layers: every rank measures at once (as in a run), or rank 0 alone
  // with --solo while the others wait.
  const bool together = comm && !c.solo;
  bool failed_on_every_rank = false;  // a measuring failure of `together` reaches every rank
  Status result;
  if (printer || together) {
    exec::LayerProfileOptions lo;
    lo.model = model;
    lo.micro_batch_sizes = c.micro_batch_sizes;
    lo.seq_lengths = c.seq_lengths;
    lo.warmup = c.warmup;
    lo.repetitions = c.repetitions;
    lo.in_flight = c.in_flight;
    lo.threads = c.threads;
    lo.double_precision = c.dtype == "fp64";
    lo.seed = c.seed;
    lo.tp_size = c.tp;
    lo.sequence_parallel = c.tp > 1 && !c.no_sequence_parallel;
    if (together) lo.comm = comm;
    result = [&]() -> Status {
      StatusOr<exec::LayerMeasurements> measured = exec::MeasureLayers(lo, printer ? stdout : nullptr);
      if (!measured.ok()) {
        failed_on_every_rank = together;
        return measured.status();
      }
      if (!printer) return Status::Ok();
      exec::LayerMeasurements& m = *measured;
      profile.model = model;
      profile.samples = m.samples;
      profile.element_bytes = m.element_bytes;
      profile.micro_batch_size = c.ref_micro_batch_size > 0 ? c.ref_micro_batch_size : c.micro_batch_sizes.back();
      profile.seq_length = c.ref_seq_length > 0 ? c.ref_seq_length : c.seq_lengths.back();
      char host[256] = "";
      gethostname(host, sizeof host - 1);
      const char* blas = std::getenv("OPENBLAS_NUM_THREADS");
      profile.setup = {{"device", "cpu"},
                       {"host", host},
                       {"threads", c.threads},
                       {"openblas_num_threads", blas ? blas : "unset"},
                       {"dtype", c.dtype},
                       {"warmup", c.warmup},
                       {"repetitions", c.repetitions},
                       {"in_flight", c.in_flight},
                       {"ranks", env.world_size},
                       {"ranks_measuring_layers", together ? env.world_size : 1},
                       {"tp_size", c.tp},
                       {"sequence_parallel", lo.sequence_parallel},
                       {"statistic", "median"}};
      PW_RETURN_IF_ERROR(FitProfile(profile, m.static_bytes, m.optimizer_s));
      std::printf("\nfits (least squares on relative residuals, Eigen):\n%s", FormatProfileFits(profile).c_str());
      std::printf("optimizer step per layer (zero grads%s + AdamW, median):", c.tp > 1 ? ", TP partial sums" : "");
      for (const auto& [kind, sec] : m.optimizer_s) std::printf(" %s %.3f ms", kind.c_str(), 1e3 * sec);
      std::printf("\n");
      if (profile.comm)
        std::printf("comm model: latency %.3f us, bandwidth %.3f GB/s\n", 1e6 * profile.comm->latency_s,
                    profile.comm->bandwidth_bytes_per_s / 1e9);
      for (const CollectiveFit& f : profile.collective_fits)
        std::printf("%s over %d ranks: latency %.3f us, bandwidth %.3f GB/s (whole tensor)\n", f.kind.c_str(), f.ranks,
                    1e6 * f.model.latency_s, f.model.bandwidth_bytes_per_s / 1e9);
      PW_ASSIGN_OR_RETURN(nlohmann::json doc, ProfileToJson(profile));
      PW_RETURN_IF_ERROR(WriteFileAtomic(c.output, doc.dump(1) + "\n"));
      std::printf("wrote %s (reference shape b=%lld s=%lld)\n", c.output.c_str(),
                  static_cast<long long>(profile.micro_batch_size), static_cast<long long>(profile.seq_length));
      return Status::Ok();
    }();
  }
  // The other ranks wait for rank 0's fit and write (and learn whether it
  // succeeded), unless a failure while measuring together already stopped
  // every rank with the same error.
  if (comm && !failed_on_every_rank) return exec::AgreeOnStatus(result, *comm);
  return result;
}

}  // namespace

void RegisterProfileCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<ProfileCommandOptions>();
  CLI::App* cmd = app.add_subcommand("profile", kProfileDescription);
  cmd->add_option("--model-config", o->model_config, "GPT config.json (n_layer, n_embd, n_head, n_positions, ...)")
      ->required();
  cmd->add_option("--micro-batch-sizes", o->micro_batch_sizes, "micro-batch sizes to measure")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--seq-lengths", o->seq_lengths, "sequence lengths to measure")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "untimed rounds per shape")->capture_default_str();
  cmd->add_option("--repetitions", o->repetitions, "timed rounds per shape (median over their microbatches kept)")
      ->capture_default_str();
  cmd->add_option("--in-flight", o->in_flight,
                  "microbatches per round, alive at once as in a pipeline step (F x k, I x k, W x k, F x k, B x k)")
      ->capture_default_str();
  cmd->add_flag("--solo", o->solo,
                "under mpirun, rank 0 measures the layers alone while the others wait (default: every rank measures "
                "at once, as they compute in a run, and the samples are pooled)");
  cmd->add_option("--threads", o->threads, "LibTorch intra-op threads (the executor uses 1)")->capture_default_str();
  AddDtypeFlag(cmd, &o->dtype,
               "fp32 (LibTorch's float32) or fp64: the element type measured; plan --profile "
               "then plans that dtype")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of weights and inputs")->capture_default_str();
  cmd->add_option("--ref-micro-batch-size", o->ref_micro_batch_size,
                  "shape of the file's per-layer list (default: the last --micro-batch-sizes)");
  cmd->add_option("--ref-seq-length", o->ref_seq_length, "default: the last --seq-lengths");
  cmd->add_option("--p2p-bytes", o->p2p_bytes, "P2P message sizes (under mpirun)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--p2p-repetitions", o->p2p_repetitions, "timed P2P round trips per size")->capture_default_str();
  cmd->add_option("--tp,--tensor-model-parallel-size", o->tp,
                  "under mpirun -np T: the T ranks are one tensor-parallel group and every layer is measured as a TP "
                  "rank's shard, its collectives included (plan --tp T --profile then takes the costs as they are)")
      ->capture_default_str();
  cmd->add_flag("--no-sequence-parallel", o->no_sequence_parallel,
                "with --tp > 1: measure without sequence parallelism");
  cmd->add_option("--collective-bytes", o->collective_bytes,
                  "whole-tensor sizes of the tensor-parallel collectives measured over all the ranks (under mpirun: "
                  "all-reduce, reduce-scatter, all-gather; multiples of 4 x ranks)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "profile file to write")->capture_default_str();
  cmd->callback([o, &ctx] {
    Status st = RunProfile(*o);
    if (!st.ok()) Fail(ctx, "profile", st);
  });
}

}  // namespace pw::cli
