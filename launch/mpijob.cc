// The MPIJob manifest (launch/mpijob.h). Field names and rules from the MPI
// Operator's v2beta1 API (github.com/kubeflow/mpi-operator,
// pkg/apis/kubeflow/v2beta1/types.go and validation/validation.go): Launcher
// replicas must be 1, Worker replicas >= 1, restartPolicy Never or OnFailure,
// slotsPerWorker, sshAuthMountPath, mpiImplementation and
// runPolicy.cleanPodPolicy are required after defaulting (written here
// explicitly), and the PodGroup's minMember is schedulingPolicy.minAvailable
// (default workers + 1).
#include "launch/mpijob.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "plan/plan.h"
#include "schedules/validate.h"

namespace pw::k8s {

namespace {

// True if a plain (unquoted) YAML scalar `s` reads back as the same string
// under YAML 1.1 and 1.2 (what yaml-cpp, PyYAML and Kubernetes' go-yaml
// read): letters, digits and _./- only, not starting with a digit, '.' or
// '-' (numbers, .inf, "-np"), and not a boolean or null word.
bool IsSafePlain(const std::string& s) {
  if (s.empty()) return false;
  const unsigned char first = static_cast<unsigned char>(s[0]);
  if (!(std::isalpha(first) || first == '_' || first == '/')) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-')) return false;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
    if (lower == word) return false;
  return true;
}

// Emits a string scalar, double-quoted unless it is safe plain (IsSafePlain).
void Str(YAML::Emitter& e, const std::string& s) {
  if (IsSafePlain(s)) {
    e << s;
  } else {
    e << YAML::DoubleQuoted << s;
  }
}

void KeyStr(YAML::Emitter& e, const char* key, const std::string& value) {
  e << YAML::Key << key << YAML::Value;
  Str(e, value);
}

void KeyInt(YAML::Emitter& e, const char* key, int64_t value) { e << YAML::Key << key << YAML::Value << value; }

void StrSeq(YAML::Emitter& e, const char* key, const std::vector<std::string>& values) {
  e << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const std::string& v : values) Str(e, v);
  e << YAML::EndSeq;
}

bool HasFlag(const std::vector<std::string>& args, const std::string& flag) {
  for (const std::string& a : args)
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  return false;
}

// True if `s` is a DNS-1123 subdomain (dot-separated labels, at most 253
// characters): the name rule of most Kubernetes objects, Volcano queues too.
bool IsDns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t dot = s.find('.', start);
    const std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!IsDns1123Label(part)) return false;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return true;
}

void Labels(YAML::Emitter& e, const std::string& job) {
  e << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  KeyStr(e, "app.kubernetes.io/name", "pipewright");
  KeyStr(e, "app.kubernetes.io/instance", job);
  e << YAML::EndMap;
}

void Metadata(YAML::Emitter& e, const std::string& name, const MpiJobOptions& o, const std::string& job) {
  KeyStr(e, "name", name);
  if (!o.name_space.empty()) KeyStr(e, "namespace", o.name_space);
  Labels(e, job);
}

// The plan volume (ConfigMap) mount, shared by launcher and workers.
void PlanMount(YAML::Emitter& e) {
  e << YAML::BeginMap;
  KeyStr(e, "name", "plan");
  KeyStr(e, "mountPath", kPlanMountDir);
  e << YAML::Key << "readOnly" << YAML::Value << true;
  e << YAML::EndMap;
}

void PlanVolume(YAML::Emitter& e, const std::string& job) {
  e << YAML::BeginMap;
  KeyStr(e, "name", "plan");
  e << YAML::Key << "configMap" << YAML::Value << YAML::BeginMap;
  KeyStr(e, "name", job + "-plan");
  e << YAML::EndMap << YAML::EndMap;
}

// One replica spec (Launcher or Worker): replicas, restartPolicy, and a pod
// template whose single container `container` fills.
void ReplicaSpec(YAML::Emitter& e, const char* type, int replicas, const MpiJobOptions& o, const std::string& job,
                 bool gpus, const std::function<void()>& container) {
  e << YAML::Key << type << YAML::Value << YAML::BeginMap;
  KeyInt(e, "replicas", replicas);
  // Never: a failed rank ends the job (restart it with `pipewright run
  // --resume`). Elastic: OnFailure, a failed launcher restarts and resumes
  // from the latest complete checkpoint; a worker's sshd comes back for it.
  KeyStr(e, "restartPolicy", o.elastic ? "OnFailure" : "Never");
  e << YAML::Key << "template" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  Labels(e, job);
  e << YAML::EndMap;
  e << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  if (o.scheduler == "volcano") KeyStr(e, "schedulerName", "volcano");
  if (gpus) {
    // GPU nodes are commonly tainted nvidia.com/gpu:NoSchedule so that only
    // pods asking for GPUs land there.
    e << YAML::Key << "tolerations" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    KeyStr(e, "key", "nvidia.com/gpu");
    KeyStr(e, "operator", "Exists");
    KeyStr(e, "effect", "NoSchedule");
    e << YAML::EndMap << YAML::EndSeq;
  }
  e << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  container();
  e << YAML::EndMap << YAML::EndSeq;
  e << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq;
  PlanVolume(e, job);
  if (gpus) {
    // NCCL's shared-memory transport needs more than the 64 MiB /dev/shm a
    // container gets by default.
    e << YAML::BeginMap;
    KeyStr(e, "name", "dshm");
    e << YAML::Key << "emptyDir" << YAML::Value << YAML::BeginMap;
    KeyStr(e, "medium", "Memory");
    e << YAML::EndMap << YAML::EndMap;
  }
  // --pvc claims (launch/mpijob.h), mounted in the same order: in the
  // workers, and with --elastic in the launcher too (elastic reads the
  // checkpoint directory and writes each launch's plan there).
  if (gpus || o.elastic) {
    for (size_t i = 0; i < o.claims.size(); ++i) {
      e << YAML::BeginMap;
      KeyStr(e, "name", "data-" + std::to_string(i));
      e << YAML::Key << "persistentVolumeClaim" << YAML::Value << YAML::BeginMap;
      KeyStr(e, "claimName", o.claims[i].substr(0, o.claims[i].find(':')));
      e << YAML::EndMap << YAML::EndMap;
    }
  }
  e << YAML::EndSeq;
  e << YAML::EndMap;  // spec
  e << YAML::EndMap;  // template
  e << YAML::EndMap;  // replica spec
}

// The mounts of the --pvc claims, volumes "data-<i>".
void ClaimMounts(YAML::Emitter& e, const MpiJobOptions& o) {
  for (size_t i = 0; i < o.claims.size(); ++i) {
    e << YAML::BeginMap;
    KeyStr(e, "name", "data-" + std::to_string(i));
    KeyStr(e, "mountPath", o.claims[i].substr(o.claims[i].find(':') + 1));
    e << YAML::EndMap;
  }
}

// The elastic launcher's arguments: pipewright elastic over the operator's
// hostfile, mpirun's placement flags passed through --mpirun-arg=, the plan
// flags, then -- and the run flags (--device cuda unless given).
std::vector<std::string> ElasticArgs(const MpiJobLayout& l, const MpiJobOptions& o) {
  std::vector<std::string> args = {"elastic",
                                   "--np",
                                   std::to_string(l.ranks),
                                   "--hostfile",
                                   kOperatorHostfile,
                                   "--min-np",
                                   std::to_string(o.min_np),
                                   "--max-restarts",
                                   std::to_string(o.max_restarts)};
  for (const char* a : {"--bind-to", "none", "--map-by", "slot", "-x", "OMP_NUM_THREADS=1"})
    args.push_back(std::string("--mpirun-arg=") + a);
  args.insert(args.end(), o.plan_args.begin(), o.plan_args.end());
  args.push_back("--");
  if (!HasFlag(o.run_args, "--device")) {
    args.push_back("--device");
    args.push_back("cuda");
  }
  args.insert(args.end(), o.run_args.begin(), o.run_args.end());
  return args;
}

std::string ConfigMapDoc(const std::string& plan_text, const MpiJobOptions& o, const std::string& job, bool quoted) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  KeyStr(e, "apiVersion", "v1");
  KeyStr(e, "kind", "ConfigMap");
  e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  Metadata(e, job + "-plan", o, job);
  e << YAML::EndMap;
  e << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << kPlanFileName << YAML::Value;
  if (quoted) {
    e << YAML::DoubleQuoted << plan_text;
  } else {
    e << YAML::Literal << plan_text;
  }
  e << YAML::EndMap;
  e << YAML::EndMap;
  return e.c_str();
}

std::string MpiJobDoc(const MpiJobLayout& l, const MpiJobOptions& o) {
  const std::string& job = l.job_name;
  YAML::Emitter e;
  e << YAML::BeginMap;
  KeyStr(e, "apiVersion", "kubeflow.org/v2beta1");
  KeyStr(e, "kind", "MPIJob");
  e << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  Metadata(e, job, o, job);
  e << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
  KeyStr(e, "pipewright/plan-hash", l.plan_hash);
  KeyStr(e, "pipewright/grid",
         (l.tp_size > 1 ? "tp_size=" + std::to_string(l.tp_size) + " " : std::string()) + "pp_size=" +
             std::to_string(l.pp_size) + " dp_size=" + std::to_string(l.dp_size) + " ranks=" + std::to_string(l.ranks));
  if (o.elastic)
    KeyStr(e, "pipewright/elastic",
           "min-np=" + std::to_string(o.min_np) + " max-restarts=" + std::to_string(o.max_restarts));
  e << YAML::EndMap;
  e << YAML::EndMap;  // metadata

  e << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  KeyInt(e, "slotsPerWorker", l.slots_per_worker);
  e << YAML::Key << "runPolicy" << YAML::Value << YAML::BeginMap;
  KeyStr(e, "cleanPodPolicy", "Running");
  KeyInt(e, "backoffLimit", o.elastic ? o.max_restarts : 0);
  e << YAML::Key << "schedulingPolicy" << YAML::Value << YAML::BeginMap;
  KeyInt(e, "minAvailable", l.min_available);
  if (!o.queue.empty()) KeyStr(e, "queue", o.queue);
  e << YAML::EndMap << YAML::EndMap;  // schedulingPolicy, runPolicy
  KeyStr(e, "sshAuthMountPath", "/root/.ssh");
  KeyStr(e, "mpiImplementation", "OpenMPI");
  e << YAML::Key << "mpiReplicaSpecs" << YAML::Value << YAML::BeginMap;

  // The launcher: mpirun over the operator's hostfile (it sets
  // OMPI_MCA_orte_default_hostfile), ranks by slot: worker k runs the
  // consecutive global ranks [k*G, (k+1)*G).
  std::vector<std::string> args = {"-np",       std::to_string(l.ranks),
                                   "--bind-to", "none",
                                   "--map-by",  "slot",
                                   "-x",        "OMP_NUM_THREADS=1",
                                   o.binary,    "run",
                                   "--plan",    std::string(kPlanMountDir) + "/" + kPlanFileName};
  if (!HasFlag(o.run_args, "--device")) {
    args.push_back("--device");
    args.push_back("cuda");
  }
  args.insert(args.end(), o.run_args.begin(), o.run_args.end());
  if (o.elastic) args = ElasticArgs(l, o);
  ReplicaSpec(e, "Launcher", 1, o, job, /*gpus=*/false, [&] {
    KeyStr(e, "name", "launcher");
    KeyStr(e, "image", o.image);
    StrSeq(e, "command", {o.elastic ? o.binary : std::string("mpirun")});
    StrSeq(e, "args", args);
    e << YAML::Key << "env" << YAML::Value << YAML::BeginSeq;
    for (const char* var : {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"}) {
      e << YAML::BeginMap;
      KeyStr(e, "name", var);
      KeyStr(e, "value", "1");
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
    e << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "requests" << YAML::Value << YAML::BeginMap;
    KeyStr(e, "cpu", "1");
    KeyStr(e, "memory", "1Gi");
    e << YAML::EndMap << YAML::EndMap;
    e << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq;
    PlanMount(e);
    if (o.elastic) ClaimMounts(e, o);
    e << YAML::EndSeq;
  });
  // The workers: sshd in the foreground; mpirun starts the ranks through it.
  ReplicaSpec(e, "Worker", l.workers, o, job, /*gpus=*/true, [&] {
    KeyStr(e, "name", "worker");
    KeyStr(e, "image", o.image);
    StrSeq(e, "command", {"/usr/sbin/sshd"});
    StrSeq(e, "args", {"-De"});
    e << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
    for (const char* kind : {"limits", "requests"}) {
      e << YAML::Key << kind << YAML::Value << YAML::BeginMap;
      KeyInt(e, "nvidia.com/gpu", l.slots_per_worker);
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
    e << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq;
    PlanMount(e);
    e << YAML::BeginMap;
    KeyStr(e, "name", "dshm");
    KeyStr(e, "mountPath", "/dev/shm");
    e << YAML::EndMap;
    ClaimMounts(e, o);
    e << YAML::EndSeq;
  });
  e << YAML::EndMap;  // mpiReplicaSpecs
  e << YAML::EndMap;  // spec
  e << YAML::EndMap;
  return e.c_str();
}

}  // namespace

bool IsDns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return s.front() != '-' && s.back() != '-';
}

StatusOr<MpiJobLayout> PlanMpiJob(const std::string& plan_text, const std::string& plan_source,
                                  const MpiJobOptions& o) {
  // Options first (cheap), then the plan.
  if (o.image.empty()) return Status::InvalidArgument("--image: required (the container image to run)");
  for (char c : o.image)
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return Status::InvalidArgument("--image '" + o.image + "': an image reference has no spaces");
  if (o.gpus_per_node < 1 || o.gpus_per_node > kMaxGpusPerNode)
    return Status::InvalidArgument("--gpus-per-node " + std::to_string(o.gpus_per_node) + ": must be in [1, " +
                                   std::to_string(kMaxGpusPerNode) + "]");
  if (o.scheduler != "volcano" && o.scheduler != "default")
    return Status::InvalidArgument("--scheduler '" + o.scheduler + "': must be volcano or default");
  if (!o.queue.empty() && o.scheduler != "volcano")
    return Status::InvalidArgument("--queue " + o.queue + ": a Volcano queue, used with --scheduler volcano only");
  if (!o.queue.empty() && !IsDns1123Subdomain(o.queue))
    return Status::InvalidArgument("--queue '" + o.queue +
                                   "': not a Kubernetes object name (lowercase letters, digits, '-', '.')");
  if (!o.name_space.empty() && !IsDns1123Label(o.name_space))
    return Status::InvalidArgument("--namespace '" + o.name_space +
                                   "': not a DNS-1123 label (1-63 of a-z, 0-9, '-', alphanumeric at both ends)");
  if (o.binary.empty()) return Status::InvalidArgument("--binary: must name the pipewright executable");
  std::vector<std::string> mounts = {kPlanMountDir, "/dev/shm"};
  for (const std::string& c : o.claims) {
    const size_t colon = c.find(':');
    const std::string claim = c.substr(0, colon);
    const std::string path = colon == std::string::npos ? "" : c.substr(colon + 1);
    if (colon == std::string::npos || !IsDns1123Subdomain(claim) || path.size() < 2 || path[0] != '/' ||
        path.back() == '/' || path.find(':') != std::string::npos)
      return Status::InvalidArgument("--pvc '" + c +
                                     "': expected CLAIM:/mount/path (a PersistentVolumeClaim name, an absolute path)");
    for (const std::string& m : mounts)
      if (path == m || path.rfind(m + "/", 0) == 0 || m.rfind(path + "/", 0) == 0)
        return Status::InvalidArgument("--pvc '" + c + "': " + path + " overlaps the mount at " + m);
    mounts.push_back(path);
  }
  if (HasFlag(o.run_args, "--plan"))
    return Status::InvalidArgument(std::string("run arguments: --plan is set by pipewright k8s (the plan is mounted "
                                               "at ") +
                                   kPlanMountDir + "/" + kPlanFileName + " from a ConfigMap)");
  if (!HasFlag(o.run_args, "--data"))
    return Status::InvalidArgument(
        "run arguments: `pipewright run` needs --data FILE (a path inside the image or a mounted volume): "
        "pass it after --, e.g. `pipewright k8s ... -- --data /data/corpus.txt --steps 1000`");
  if (o.elastic) {
    if (o.max_restarts < 0)
      return Status::InvalidArgument("--max-restarts " + std::to_string(o.max_restarts) + ": must be >= 0");
    if (o.plan_args.empty())
      return Status::InvalidArgument(
          "--elastic: the plan flags elastic plans with go between the two --: `pipewright k8s --elastic ... -- "
          "--model-config M --device D --global-batch-size B --seq-length S -- --data F --steps N "
          "--checkpoint-dir DIR --checkpoint-every K`");
    for (const char* f :
         {"--num-devices", "--pp", "--pipeline-model-parallel-size", "--dp", "--data-parallel-size", "-o", "--output"})
      if (HasFlag(o.plan_args, f))
        return Status::InvalidArgument(std::string("--elastic: plan flag ") + f +
                                       " is set by pipewright elastic (it plans for the devices it has)");
    if (HasFlag(o.run_args, "--resume"))
      return Status::InvalidArgument(
          "--elastic: run flag --resume is set by pipewright elastic (the latest checkpoint)");
    for (const char* f : {"--steps", "--checkpoint-dir", "--checkpoint-every"})
      if (!HasFlag(o.run_args, f))
        return Status::InvalidArgument(std::string("--elastic: the run flags need ") + f +
                                       " (elastic resumes from the checkpoints; put --checkpoint-dir on a --pvc "
                                       "claim every pod mounts)");
  }
  if (static_cast<int64_t>(plan_text.size()) > kMaxConfigMapBytes)
    return Status::InvalidArgument(plan_source + ": " + std::to_string(plan_text.size()) +
                                   " bytes, more than a ConfigMap holds (" + std::to_string(kMaxConfigMapBytes) +
                                   " bytes, etcd's object limit)");
  PW_ASSIGN_OR_RETURN(Plan plan, ParsePlan(plan_text, plan_source));
  // What `pipewright run` would refuse on every rank, refused here before a
  // cluster allocates GPUs for it: a schedule-only plan, or one that does not
  // validate (the checks of `pipewright validate`; rendezvous is not required).
  if (!plan.model || !plan.training)
    return Status::InvalidArgument(plan_source +
                                   ": a schedule-only plan (no model or training section): "
                                   "`pipewright run` needs a plan from `pipewright plan`");
  ValidateOptions validate;
  validate.rendezvous = false;
  PW_RETURN_IF_ERROR(ValidateProgram(PlanProgram(plan), validate).WithContext(plan_source));

  MpiJobLayout l;
  l.tp_size = plan.tp_size;
  l.pp_size = plan.pp_size;
  l.dp_size = plan.dp_size;
  const int64_t ranks = int64_t{plan.pp_size} * plan.dp_size * plan.tp_size;
  if (ranks > kMaxRanks)
    return Status::InvalidArgument(plan_source + ": tp_size x pp_size x dp_size = " + std::to_string(ranks) +
                                   " ranks, above the limit of " + std::to_string(kMaxRanks));
  l.ranks = static_cast<int>(ranks);
  l.slots_per_worker = o.gpus_per_node;
  if (l.ranks % o.gpus_per_node != 0)
    return Status::InvalidArgument(
        "--gpus-per-node " + std::to_string(o.gpus_per_node) + ": the plan has " + std::to_string(l.ranks) +
        " ranks (pp_size " + std::to_string(l.pp_size) + " x dp_size " + std::to_string(l.dp_size) +
        "), not a multiple of " + std::to_string(o.gpus_per_node) +
        ": every Worker pod runs --gpus-per-node ranks; use a divisor of " + std::to_string(l.ranks));
  if (l.tp_size > 1 && o.gpus_per_node % l.tp_size != 0)
    return Status::InvalidArgument("--gpus-per-node " + std::to_string(o.gpus_per_node) + ": the plan's tp_size is " +
                                   std::to_string(l.tp_size) + "; each tensor-parallel group (" +
                                   std::to_string(l.tp_size) +
                                   " consecutive ranks) must be in one Worker pod, so --gpus-per-node must be a "
                                   "multiple of it");
  l.workers = l.ranks / o.gpus_per_node;
  l.min_available = l.workers + 1;
  if (o.elastic) {
    if (o.min_np < 1 || o.min_np > l.ranks)
      return Status::InvalidArgument("--min-np " + std::to_string(o.min_np) + ": must be in [1, " +
                                     std::to_string(l.ranks) + "] (the plan's ranks)");
    // The gang may start with the fewest workers elastic can run on.
    l.min_available = (o.min_np + o.gpus_per_node - 1) / o.gpus_per_node + 1;
  }
  l.plan_hash = PlanHash(plan);
  l.job_name = o.job_name.empty() ? "pipewright-" + l.plan_hash.substr(0, 8) : o.job_name;
  const std::string last_pod = l.job_name + "-worker-" + std::to_string(l.workers - 1);
  if (!IsDns1123Label(l.job_name) || !IsDns1123Label(last_pod))
    return Status::InvalidArgument("--name '" + l.job_name + "': the Worker pods are named " + l.job_name +
                                   "-worker-<k>, and '" + last_pod +
                                   "' is not a DNS-1123 label (1-63 of a-z, 0-9, '-', alphanumeric at both ends)");
  return l;
}

StatusOr<std::string> MpiJobYaml(const std::string& plan_text, const std::string& plan_source,
                                 const MpiJobOptions& options) {
  PW_ASSIGN_OR_RETURN(MpiJobLayout layout, PlanMpiJob(plan_text, plan_source, options));
  // A literal block (|) keeps the plan readable; it cannot carry every text
  // (e.g. carriage returns, leading blank lines), so the block is read back
  // and, if it differs by a byte, written double-quoted (escaped) instead.
  std::string config_map = ConfigMapDoc(plan_text, options, layout.job_name, /*quoted=*/false);
  bool exact = false;
  try {
    exact = YAML::Load(config_map)["data"][kPlanFileName].as<std::string>() == plan_text;
  } catch (const YAML::Exception&) {
    exact = false;
  }
  if (!exact) config_map = ConfigMapDoc(plan_text, options, layout.job_name, /*quoted=*/true);
  return "---\n" + config_map + "\n---\n" + MpiJobDoc(layout, options) + "\n";
}

}  // namespace pw::k8s
