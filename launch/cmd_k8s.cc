// `pipewright k8s --plan PLAN --image IMAGE [...] [-- RUN ARGS...] -o job.yaml`:
// write a Kubernetes MPI Operator MPIJob (kubeflow.org/v2beta1) and the
// ConfigMap holding the plan, for `kubectl apply -f job.yaml`
// (launch/mpijob.h, docs/LAUNCH.md).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/file_io.h"
#include "launch/commands.h"
#include "launch/mpijob.h"
#include "plan/plan.h"

namespace pw::cli {

namespace {

struct K8sOptions {
  std::string plan;
  std::string output;
  k8s::MpiJobOptions job;
};

Status Run(K8sOptions o) {
  if (o.job.elastic) {
    // --elastic: <plan flags> -- <run flags> after the first --.
    std::vector<std::string>& args = o.job.run_args;
    const auto dash = std::find(args.begin(), args.end(), "--");
    if (dash == args.end())
      return Status::InvalidArgument(
          "--elastic: after -- give the plan flags, a second --, then the run flags: `pipewright k8s --elastic ... "
          "-- --model-config M --device D --global-batch-size B --seq-length S -- --data F --steps N "
          "--checkpoint-dir DIR --checkpoint-every K`");
    o.job.plan_args.assign(args.begin(), dash);
    args.erase(args.begin(), dash + 1);
  }
  std::ifstream in(o.plan, std::ios::binary);
  if (!in) return Status::NotFound("--plan " + o.plan + ": cannot open the file");
  // Read at most one byte past the ConfigMap limit: a larger file is refused
  // without reading it all.
  std::string text(static_cast<size_t>(k8s::kMaxConfigMapBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return Status::Internal("--plan " + o.plan + ": read error");
  PW_ASSIGN_OR_RETURN(std::string yaml, k8s::MpiJobYaml(text, o.plan, o.job));
  if (o.output.empty() || o.output == "-") {
    std::fwrite(yaml.data(), 1, yaml.size(), stdout);
    return Status::Ok();
  }
  return WriteFileAtomic(o.output, yaml);
}

}  // namespace

void RegisterK8sCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<K8sOptions>();
  CLI::App* sub =
      app.add_subcommand("k8s",
                         "Write a Kubernetes MPI Operator MPIJob (kubeflow.org/v2beta1) + ConfigMap running a plan on "
                         "tp_size x pp_size x dp_size GPUs; arguments after -- are added to `pipewright run`");
  sub->add_option("--plan", opts->plan, "plan file (pipewright plan): mounted from a ConfigMap in every pod")
      ->required();
  sub->add_option("--image", opts->job.image, "container image holding pipewright, Open MPI and sshd")->required();
  sub->add_option("--gpus-per-node", opts->job.gpus_per_node,
                  "GPUs (= ranks, = MPI slots) per Worker pod; must divide tp_size x pp_size x dp_size and be a "
                  "multiple of tp_size")
      ->capture_default_str();
  sub->add_option("--scheduler", opts->job.scheduler,
                  "volcano (schedulerName: volcano, gang scheduling) or default (the cluster's kube-scheduler)")
      ->capture_default_str();
  sub->add_option("--queue", opts->job.queue, "Volcano queue (runPolicy.schedulingPolicy.queue)");
  sub->add_option("--namespace", opts->job.name_space, "metadata.namespace of both objects (default: none written)");
  sub->add_option("--name", opts->job.job_name,
                  "MPIJob name (default: pipewright-<first 8 hex digits of the plan hash>); "
                  "the ConfigMap is <name>-plan");
  sub->add_option("--pvc", opts->job.claims,
                  "CLAIM:/mount/path: a PersistentVolumeClaim mounted in every Worker pod (data, checkpoints); "
                  "repeatable")
      ->expected(1)
      ->allow_extra_args(false)  // one value per --pvc; a following -- still starts the run arguments
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--binary", opts->job.binary, "the pipewright executable inside the image")->capture_default_str();
  sub->add_option("-o,--output", opts->output, "write to FILE (atomically) instead of stdout");
  sub->add_flag("--elastic", opts->job.elastic,
                "the launcher runs `pipewright elastic` (re-plan and resume after a lost rank, docs/ELASTIC.md): "
                "after -- come the plan flags, a second --, then the run flags");
  sub->add_option("--min-np", opts->job.min_np,
                  "--elastic: the fewest ranks elastic goes on with (gang minimum: ceil(K / --gpus-per-node) "
                  "workers + the launcher)")
      ->capture_default_str();
  sub->add_option("--max-restarts", opts->job.max_restarts,
                  "--elastic: restarts of elastic (and runPolicy.backoffLimit of the launcher)")
      ->capture_default_str();
  sub->add_option("run_args", opts->job.run_args,
                  "after --: arguments of `pipewright run` (--data FILE required; --device cuda added unless given); "
                  "with --elastic: plan flags -- run flags");
  sub->callback([opts, &ctx]() {
    Status st = Run(*opts);
    if (!st.ok()) Fail(ctx, "k8s", st);
  });
}

}  // namespace pw::cli
