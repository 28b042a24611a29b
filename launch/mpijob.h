// A Kubernetes MPI Operator job for a plan (`pipewright k8s`): an MPIJob
// (kubeflow.org/v2beta1) plus the ConfigMap holding the plan file, as one
// multi-document YAML text. Torch-free (yaml-cpp only); docs/LAUNCH.md.
//
// Layout (the plan's grid: world size = tp_size x pp_size x dp_size, global
// rank g = pp_rank * dp_size * tp_size + dp_rank * tp_size + tp_rank, TP
// innermost): the launcher pod runs
//   mpirun -np W --map-by slot ... pipewright run --plan /etc/pipewright/plan.json ...
// over W / G Worker pods of G slots (and G GPUs) each, so worker pod k holds
// the consecutive global ranks [k*G, (k+1)*G): with dp_size <= G and dp_size
// dividing G, each data-parallel group (ranks p*D .. p*D+D-1) is in one pod;
// with tp_size T > 1, G must be a multiple of T so that every tensor-parallel
// group (T consecutive ranks) is in one pod (one node's NVLink).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace pw::k8s {

// The plan is mounted read-only at kPlanMountDir/kPlanFileName in every pod.
inline constexpr char kPlanMountDir[] = "/etc/pipewright";
inline constexpr char kPlanFileName[] = "plan.json";
// Kubernetes stores a ConfigMap in etcd, whose objects are limited to 1 MiB
// (kubernetes.io/docs/concepts/configuration/configmap: "cannot exceed 1 MiB").
inline constexpr int64_t kMaxConfigMapBytes = int64_t{1} << 20;
// GPUs per node beyond this are certainly a typo (the largest nodes hold 8-16).
inline constexpr int kMaxGpusPerNode = 256;
// Ranks (pp_size x dp_size) in one job: far above any cluster's GPU count.
inline constexpr int64_t kMaxRanks = int64_t{1} << 20;

struct MpiJobOptions {
  std::string image;                  // container image with pipewright, Open MPI and sshd (required)
  int gpus_per_node = 1;              // G: slotsPerWorker and nvidia.com/gpu per Worker pod, >= 1
  std::string scheduler = "default";  // "volcano" (schedulerName: volcano) or "default" (kube-scheduler)
  std::string queue;                  // Volcano queue (schedulingPolicy.queue); only with scheduler volcano
  std::string name_space;             // metadata.namespace; empty: none written (kubectl's current namespace)
  std::string job_name;               // metadata.name; empty: "pipewright-" + the first 8 hex digits of the plan hash
  std::string binary = "pipewright";  // the pipewright executable in the image (a name on PATH or a path)
  std::vector<std::string> run_args;  // appended to `pipewright run --plan ...` (must include --data FILE)
  // PersistentVolumeClaims mounted read-write in every Worker pod (and,
  // with `elastic`, the Launcher pod), as "CLAIM:/mount/path" (data,
  // checkpoints); volumes "data-0", "data-1", ...
  std::vector<std::string> claims;
  // --elastic (docs/ELASTIC.md): the launcher runs
  //   pipewright elastic --np W --hostfile /etc/mpi/hostfile --min-np K
  //     --max-restarts R --mpirun-arg=... <plan_args> -- <run_args>
  // instead of mpirun, so a lost rank drops its Worker pod's host and the
  // run re-plans and resumes from the latest checkpoint; the gang minimum is
  // ceil(K / G) workers + the launcher, and both pods restart OnFailure (a
  // restarted launcher resumes from the latest complete checkpoint too;
  // runPolicy.backoffLimit = R).
  bool elastic = false;
  int min_np = 1;        // --min-np K, in [1, W]
  int max_restarts = 3;  // --max-restarts R, >= 0
  // The `pipewright plan` flags elastic plans with (model, device, batch,
  // ...; not --num-devices, --pp, --dp or -o: elastic sets them).
  std::vector<std::string> plan_args;
};

// Where the MPI Operator (v2beta1) mounts the hostfile it writes for the
// launcher: one "<worker pod>.<job>.<namespace>.svc slots=G" line per Worker.
inline constexpr char kOperatorHostfile[] = "/etc/mpi/hostfile";

// The numbers a plan and options give (computed before any YAML).
struct MpiJobLayout {
  int tp_size = 1;
  int pp_size = 0;
  int dp_size = 0;
  int ranks = 0;             // tp_size * pp_size * dp_size (mpirun -np)
  int slots_per_worker = 0;  // G
  int workers = 0;           // ranks / G
  int min_available = 0;     // workers + 1 launcher: every pod (gang); elastic: ceil(min_np / G) + 1
  std::string job_name;      // resolved (default from the plan hash)
  std::string plan_hash;     // PlanHash of the plan (16 hex digits)
};

// Checks `options` against the plan text and returns the layout. Errors
// (InvalidArgument) name the option and value: --image empty or with spaces;
// --gpus-per-node outside [1, kMaxGpusPerNode], not dividing
// tp_size x pp_size x dp_size (naming both numbers) or not a multiple of
// tp_size (a tensor-parallel group would straddle two pods); --scheduler not volcano|default;
// --queue without --scheduler volcano or not a DNS-1123 name; --namespace
// or --name not DNS-1123 labels (the last Worker pod name
// "<name>-worker-<n-1>" must fit 63 characters, as the MPI Operator checks);
// --pvc not CLAIM:/absolute/path with a DNS-1123 claim name, or a mount path
// used twice or on /etc/pipewright or /dev/shm;
// run arguments holding --plan (the mounted plan is used) or missing --data;
// with elastic: --min-np outside [1, W], --max-restarts < 0, no plan flags
// or plan flags elastic sets, run arguments without --steps,
// --checkpoint-dir or --checkpoint-every, or holding --resume;
// a plan that does not parse (the plan reader's error, naming `plan_source`),
// has no model or training section (schedule-only), fails the validator
// (schedules/validate.h, as `pipewright validate`), or is larger than a
// ConfigMap holds (kMaxConfigMapBytes).
StatusOr<MpiJobLayout> PlanMpiJob(const std::string& plan_text, const std::string& plan_source,
                                  const MpiJobOptions& options);

// The manifest: "---\n" + ConfigMap "<name>-plan" (data plan.json = the
// plan text byte for byte) + "---\n" + the MPIJob. Deterministic: the same
// inputs give the same bytes. String scalars that YAML would read as another
// type ("4", "true", "1e3") are quoted. Same errors as PlanMpiJob.
StatusOr<std::string> MpiJobYaml(const std::string& plan_text, const std::string& plan_source,
                                 const MpiJobOptions& options);

// True if `s` is a DNS-1123 label (RFC 1123: 1-63 characters of [a-z0-9-],
// starting and ending with an alphanumeric), the form Kubernetes requires of
// namespaces and pod host names.
bool IsDns1123Label(const std::string& s);

}  // namespace pw::k8s
