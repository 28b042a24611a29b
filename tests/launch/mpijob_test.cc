// `pipewright k8s` manifests (launch/mpijob.h), parsed back with yaml-cpp and
// checked field by field against the types of the Kubernetes objects they
// hold: the MPI Operator's MPIJob kubeflow.org/v2beta1
// (github.com/kubeflow/mpi-operator pkg/apis/kubeflow/v2beta1/types.go,
// common_types.go; the extra rules of pkg/apis/kubeflow/validation) and the
// core/v1 types it embeds (ObjectMeta, PodTemplateSpec, Container, Volume,
// Toleration, ResourceRequirements; ConfigMap), for plans of several
// pp_size x dp_size, then the layout (ranks, workers, gang size) and the
// refusals. Plans come from the real `pipewright plan`.
#include "launch/mpijob.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>

#include "base/file_io.h"
#include "plan/plan.h"
#include "schedules/validate.h"
#include "tests/launch/k8s_schema.h"

#ifndef PW_CLI_PATH
#error "PW_CLI_PATH (the pipewright binary) must be defined by the build"
#endif

namespace pw::k8s {
namespace {

// ---------------------------------------------------------------------------
// Plans from the real `pipewright plan`.
// ---------------------------------------------------------------------------

class MpiJobTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/pw_mpijob_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    std::ofstream(*dir_ + "/model.json")
        << R"({"n_layer": 4, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2",)"
        << R"( "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0})"
        << "\n";
  }
  static void TearDownTestSuite() {
    std::system(("rm -rf '" + *dir_ + "'").c_str());
    delete dir_;
  }
  static int Cli(const std::string& args) {
    const int rc = std::system((std::string(PW_CLI_PATH) + " " + args + " > /dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  // The text of a plan of pp x dp ranks: `pipewright plan --dp` where the
  // planner has it, else the pp plan edited to dp_size = dp. The edit follows
  // the data-parallel contract as far as this build's reader and validator
  // want it: with or without a "<stage>REDUCE_GRAD" after each stage's last
  // B/W (and the message right after), global batch the replica's or dp x it.
  static std::string PlanText(int pp, int dp) {
    const std::string path = *dir_ + "/plan_" + std::to_string(pp) + "x" + std::to_string(dp) + ".json";
    const std::string base =
        "plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp "
        "--schedule 1f1b --num-microbatches 4 --seq-length 16 --micro-batch-size 2 "
        "--model-config " +
        *dir_ + "/model.json --pp " + std::to_string(pp) + " -o " + path;
    if (dp == 1 || Cli(base + " --dp " + std::to_string(dp)) != 0) {
      EXPECT_EQ(Cli(base), 0) << "pipewright plan failed: " << base;
      if (dp != 1) {
        std::ifstream in(path, std::ios::binary);
        const nlohmann::json original = nlohmann::json::parse(in);
        std::string text, errors;
        for (int variant = 0; variant < 4 && text.empty(); ++variant) {
          nlohmann::json j = original;
          j["dp_size"] = dp;
          if (variant & 1) {
            int64_t sum = 0;
            for (const auto& b : j["training"]["microbatch_sizes"]) sum += b.get<int64_t>();
            j["training"]["global_batch_size"] = dp * sum;
          }
          if (variant & 2) AddReduceGrad(j);
          StatusOr<Plan> plan = ParsePlan(j.dump(2) + "\n", path);
          Status valid = plan.ok() ? ValidateProgram(PlanProgram(*plan), ValidateOptions{false}) : plan.status();
          if (valid.ok()) {
            text = PlanToJson(*plan);
          } else {
            errors += "\n  " + valid.ToString();
          }
        }
        EXPECT_FALSE(text.empty()) << "no edit of " << path << " gives a valid dp " << dp << " plan:" << errors;
        EXPECT_TRUE(WriteFileAtomic(path, text).ok());
      }
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Inserts "<s>REDUCE_GRAD" after stage s's last B or W on its rank, past
  // the SEND/RECV actions right after it.
  static void AddReduceGrad(nlohmann::json& plan) {
    static const std::regex bw("^([0-9]+)[BW][0-9]+$"), comm("^[0-9]+(SEND|RECV)_.*");
    for (auto& rank : plan["ranks"]) {
      std::vector<std::string> acts = rank["actions"].get<std::vector<std::string>>();
      std::map<int, size_t> last;  // stage -> index of its last B/W
      for (size_t i = 0; i < acts.size(); ++i) {
        std::smatch m;
        if (std::regex_match(acts[i], m, bw)) last[std::stoi(m[1])] = i;
      }
      // From the last position back, so earlier indices stay valid.
      std::vector<std::pair<size_t, int>> at;
      for (const auto& [stage, i] : last) {
        size_t k = i + 1;
        while (k < acts.size() && std::regex_match(acts[k], comm)) ++k;
        at.push_back({k, stage});
      }
      std::sort(at.rbegin(), at.rend());
      for (const auto& [k, stage] : at) acts.insert(acts.begin() + k, std::to_string(stage) + "REDUCE_GRAD");
      rank["actions"] = acts;
    }
  }
  static MpiJobOptions Options(int g) {
    MpiJobOptions o;
    o.image = "registry.example.com/pipewright:1.0";
    o.gpus_per_node = g;
    o.run_args = {"--data", "/data/corpus.txt", "--steps", "100", "--comm", "nccl"};
    return o;
  }
  static std::string* dir_;
};
std::string* MpiJobTest::dir_ = nullptr;

std::vector<std::string> StringList(const YAML::Node& n) {
  std::vector<std::string> v;
  for (const auto& e : n) v.push_back(e.as<std::string>());
  return v;
}

// ---------------------------------------------------------------------------

// The schema checker itself rejects what the API would: each mutation of a
// good manifest is caught, so a passing manifest is not a vacuous pass.
TEST_F(MpiJobTest, SchemaCheckerCatchesViolations) {
  StatusOr<std::string> yaml = MpiJobYaml(PlanText(2, 1), "plan.json", Options(1));
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  ASSERT_TRUE(SchemaErrors(*yaml).empty()) << Join(SchemaErrors(*yaml));
  // {from, to, the error that must name it}
  const std::vector<std::array<std::string, 3>> mutations = {
      {"slotsPerWorker: 1", "slotsPerWorker: \"1\"", "MPIJob.spec.slotsPerWorker: '1' is not an integer"},
      {"replicas: 1", "replicas: one", "Launcher.replicas: 'one' is not an integer"},
      {"restartPolicy: Never", "restartPolicy: Always", "restartPolicy: 'Always' is not an allowed value"},
      {"cleanPodPolicy: Running", "cleanPodPolicy: Sometimes", "cleanPodPolicy: 'Sometimes' is not an allowed"},
      {"kind: MPIJob", "kind: MpiJob", "MPIJob.kind: 'MpiJob' is not an allowed value"},
      {"mpiImplementation: OpenMPI", "mpiImpl: OpenMPI", "MPIJob.spec.mpiImpl: unknown field of MPIJobSpec"},
      {"mpiImplementation: OpenMPI", "mpiImpl: OpenMPI", "mpiImplementation: required field of MPIJobSpec missing"},
      {"Launcher:", "Driver:", "mpiReplicaSpecs.Driver: key not allowed"},
      {"effect: NoSchedule", "effect: NoScheduled", "tolerations[0].effect: 'NoScheduled' is not an allowed"},
      {"readOnly: true", "readOnly: \"true\"", "volumeMounts[0].readOnly: 'true' is not a boolean"},
      {"- \"-np\"\n                - \"2\"", "- \"-np\"\n                - 2",
       "containers[0].args[1]: '2' would be read as a non-string"},
      {"minAvailable: 3", "minAvailable: 0", "schedulingPolicy.minAvailable: 0 is below 1"},
      {"nvidia.com/gpu: 1", "nvidia.com/gpu: one", "limits.nvidia.com/gpu: 'one' is not a resource quantity"},
      {"medium: Memory", "medium: Disk", "emptyDir.medium: 'Disk' is not an allowed value"},
  };
  const size_t job_at = yaml->find("kind: MPIJob");
  ASSERT_NE(job_at, std::string::npos);
  for (const auto& [from, to, error] : mutations) {
    std::string bad = *yaml;
    const size_t at = bad.find(from, job_at);  // in the MPIJob, not the plan text
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    const std::string errors = Join(SchemaErrors(bad));
    EXPECT_NE(errors.find(error), std::string::npos) << from << " -> " << to << ": want '" << error << "' in:\n"
                                                     << errors;
  }
  // The ConfigMap too: data values are strings.
  std::string bad = *yaml;
  bad.replace(bad.find("kind: ConfigMap"), 15, "kind: ConfigMap\nimmutable: yes please");
  EXPECT_NE(Join(SchemaErrors(bad)).find("ConfigMap.immutable: 'yes please' is not a boolean"), std::string::npos)
      << Join(SchemaErrors(bad));
}

struct Case {
  int pp, dp, g;
  std::string scheduler, queue;
};

// Several grids: schema, then every number the contract fixes.
TEST_F(MpiJobTest, ManifestsMatchTheApiAndThePlan) {
  const std::vector<Case> cases = {
      {1, 1, 1, "default", ""},    {2, 1, 1, "default", ""}, {2, 1, 2, "volcano", ""}, {2, 2, 4, "volcano", "research"},
      {4, 2, 8, "volcano", "a.b"}, {4, 2, 2, "default", ""}, {3, 2, 3, "volcano", ""}, {2, 4, 4, "default", ""}};
  for (const Case& c : cases) {
    SCOPED_TRACE("pp " + std::to_string(c.pp) + " dp " + std::to_string(c.dp) + " G " + std::to_string(c.g) + " " +
                 c.scheduler);
    const std::string text = PlanText(c.pp, c.dp);
    StatusOr<Plan> plan = ParsePlan(text, "plan.json");
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->pp_size, c.pp);
    ASSERT_EQ(plan->dp_size, c.dp);
    MpiJobOptions o = Options(c.g);
    o.scheduler = c.scheduler;
    o.queue = c.queue;
    o.name_space = "ml-team";
    if (c.pp == 4) o.claims = {"corpus:/data", "ckpt-store:/ckpt"};
    StatusOr<std::string> yaml = MpiJobYaml(text, "plan.json", o);
    ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
    const std::vector<std::string> errors = SchemaErrors(*yaml);
    ASSERT_TRUE(errors.empty()) << Join(errors) << *yaml;
    // Deterministic.
    EXPECT_EQ(*MpiJobYaml(text, "plan.json", o), *yaml);

    const int ranks = c.pp * c.dp, workers = ranks / c.g;
    const std::vector<YAML::Node> docs = YAML::LoadAll(*yaml);
    const YAML::Node& cm = docs[0];
    const YAML::Node& job = docs[1];
    const std::string name = "pipewright-" + PlanHash(*plan).substr(0, 8);
    EXPECT_EQ(job["metadata"]["name"].as<std::string>(), name);
    EXPECT_EQ(job["metadata"]["namespace"].as<std::string>(), "ml-team");
    EXPECT_EQ(cm["metadata"]["namespace"].as<std::string>(), "ml-team");
    EXPECT_EQ(job["metadata"]["annotations"]["pipewright/plan-hash"].as<std::string>(), PlanHash(*plan));
    // The ConfigMap holds the plan file byte for byte.
    EXPECT_EQ(cm["metadata"]["name"].as<std::string>(), name + "-plan");
    EXPECT_EQ(cm["data"]["plan.json"].as<std::string>(), text);
    const YAML::Node spec = job["spec"];
    EXPECT_EQ(spec["slotsPerWorker"].as<int>(), c.g);
    EXPECT_EQ(spec["mpiReplicaSpecs"]["Launcher"]["replicas"].as<int>(), 1);
    EXPECT_EQ(spec["mpiReplicaSpecs"]["Worker"]["replicas"].as<int>(), workers);
    // Gang: every pod (workers + the launcher) or none.
    EXPECT_EQ(spec["runPolicy"]["schedulingPolicy"]["minAvailable"].as<int>(), workers + 1);
    if (c.queue.empty()) {
      EXPECT_FALSE(spec["runPolicy"]["schedulingPolicy"]["queue"]);
    } else {
      EXPECT_EQ(spec["runPolicy"]["schedulingPolicy"]["queue"].as<std::string>(), c.queue);
    }
    for (const char* type : {"Launcher", "Worker"}) {
      const YAML::Node pod = spec["mpiReplicaSpecs"][type]["template"]["spec"];
      if (c.scheduler == "volcano") {
        EXPECT_EQ(pod["schedulerName"].as<std::string>(), "volcano") << type;
      } else {
        EXPECT_FALSE(pod["schedulerName"]) << type;
      }
      // The plan volume is the ConfigMap, mounted at /etc/pipewright.
      ASSERT_EQ(pod["volumes"][0]["configMap"]["name"].as<std::string>(), name + "-plan");
      const YAML::Node mount = pod["containers"][0]["volumeMounts"][0];
      EXPECT_EQ(mount["name"].as<std::string>(), pod["volumes"][0]["name"].as<std::string>());
      EXPECT_EQ(mount["mountPath"].as<std::string>(), "/etc/pipewright");
      EXPECT_EQ(pod["containers"][0]["image"].as<std::string>(), o.image);
    }
    const YAML::Node worker = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"];
    for (const char* kind : {"limits", "requests"})
      EXPECT_EQ(worker["containers"][0]["resources"][kind]["nvidia.com/gpu"].as<int>(), c.g) << kind;
    // Claims: a volume and a mount each, after the plan and /dev/shm.
    ASSERT_EQ(worker["volumes"].size(), 2 + o.claims.size());
    ASSERT_EQ(worker["containers"][0]["volumeMounts"].size(), 2 + o.claims.size());
    for (size_t i = 0; i < o.claims.size(); ++i) {
      const YAML::Node v = worker["volumes"][2 + i], m = worker["containers"][0]["volumeMounts"][2 + i];
      EXPECT_EQ(v["name"].as<std::string>(), m["name"].as<std::string>());
      EXPECT_EQ(v["persistentVolumeClaim"]["claimName"].as<std::string>() + ":" + m["mountPath"].as<std::string>(),
                o.claims[i]);
    }
    EXPECT_EQ(worker["tolerations"][0]["key"].as<std::string>(), "nvidia.com/gpu");
    EXPECT_EQ(worker["tolerations"][0]["operator"].as<std::string>(), "Exists");
    EXPECT_EQ(worker["tolerations"][0]["effect"].as<std::string>(), "NoSchedule");
    const YAML::Node launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
    EXPECT_FALSE(launcher["resources"]["limits"]);  // the launcher holds no GPU
    EXPECT_EQ(StringList(launcher["command"]), std::vector<std::string>{"mpirun"});
    const std::vector<std::string> args = StringList(launcher["args"]);
    const std::vector<std::string> want = {"-np",        std::to_string(ranks),
                                           "--bind-to",  "none",
                                           "--map-by",   "slot",
                                           "-x",         "OMP_NUM_THREADS=1",
                                           "pipewright", "run",
                                           "--plan",     "/etc/pipewright/plan.json",
                                           "--device",   "cuda",
                                           "--data",     "/data/corpus.txt",
                                           "--steps",    "100",
                                           "--comm",     "nccl"};
    EXPECT_EQ(args, want);
  }
}

// The plan text survives YAML whatever its bytes: CRLF line ends and a
// leading blank line (which a literal block cannot hold) come back exact.
TEST_F(MpiJobTest, PlanTextIsKeptByteForByte) {
  std::string text = PlanText(2, 1);
  std::string crlf = "\n";
  for (char ch : text) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  for (const std::string& t : {text, crlf, "  " + text + "\n\n"}) {
    StatusOr<std::string> yaml = MpiJobYaml(t, "plan.json", Options(1));
    ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
    EXPECT_TRUE(SchemaErrors(*yaml).empty()) << Join(SchemaErrors(*yaml));
    EXPECT_EQ(YAML::LoadAll(*yaml)[0]["data"]["plan.json"].as<std::string>(), t);
  }
}

// Scalars that YAML reads as numbers or booleans stay strings in args/env.
TEST_F(MpiJobTest, NumericLookingStringsAreQuoted) {
  MpiJobOptions o = Options(2);
  o.run_args = {"--data", "/d/t.txt", "--steps", "1e3", "--lr", "0x10", "--prompt", "yes", "--sample", "on"};
  StatusOr<std::string> yaml = MpiJobYaml(PlanText(2, 1), "plan.json", o);
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  ASSERT_TRUE(SchemaErrors(*yaml).empty()) << Join(SchemaErrors(*yaml));
  const std::vector<std::string> args = StringList(
      YAML::LoadAll(*yaml)[1]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"]);
  EXPECT_EQ(std::vector<std::string>(args.end() - 10, args.end()), o.run_args);
}

// Refusals name the option and value, before any YAML.
TEST_F(MpiJobTest, BadRequestsAreRefused) {
  const std::string text = PlanText(2, 2);  // 4 ranks
  auto refused = [&](MpiJobOptions o, const std::vector<std::string>& needles, const std::string& plan_text = "") {
    StatusOr<std::string> yaml = MpiJobYaml(plan_text.empty() ? text : plan_text, "plan.json", o);
    ASSERT_FALSE(yaml.ok());
    EXPECT_EQ(yaml.status().code(), StatusCode::kInvalidArgument);
    for (const std::string& n : needles)
      EXPECT_NE(yaml.status().message().find(n), std::string::npos)
          << "'" << n << "' not in: " << yaml.status().message();
  };
  MpiJobOptions o = Options(3);
  refused(o, {"--gpus-per-node 3", "4 ranks", "pp_size 2 x dp_size 2"});
  o = Options(8);
  refused(o, {"--gpus-per-node 8", "4 ranks"});
  o = Options(0);
  refused(o, {"--gpus-per-node 0"});
  o = Options(1);
  o.image = "";
  refused(o, {"--image", "required"});
  o = Options(1);
  o.image = "bad image";
  refused(o, {"--image 'bad image'"});
  o = Options(1);
  o.scheduler = "kube-batch";
  refused(o, {"--scheduler 'kube-batch'", "volcano or default"});
  o = Options(1);
  o.queue = "q";
  refused(o, {"--queue q", "--scheduler volcano"});
  o = Options(1);
  o.scheduler = "volcano";
  o.queue = "Big_Queue";
  refused(o, {"--queue 'Big_Queue'"});
  o = Options(1);
  o.name_space = "ML";
  refused(o, {"--namespace 'ML'"});
  o = Options(1);
  o.job_name = std::string(56, 'a');  // "<name>-worker-3" is 65 characters
  refused(o, {"--name", "-worker-3", "DNS-1123"});
  o = Options(1);
  o.run_args = {"--data", "x", "--plan", "other.json"};
  refused(o, {"--plan is set by pipewright k8s"});
  o = Options(1);
  o.run_args = {"--steps", "3"};
  refused(o, {"--data FILE"});
  for (const std::string claim : {"nocolon", "Data:/data", "data:rel/path", "data:/", "data:/d/",
                                  "data:/etc/pipewright", "data:/dev/shm/x", "data:/etc"}) {
    o = Options(1);
    o.claims = {claim};
    refused(o, {"--pvc '" + claim + "'"});
  }
  o = Options(1);
  o.claims = {"a:/data", "b:/data/sub"};
  refused(o, {"--pvc 'b:/data/sub'", "overlaps the mount at /data"});
  refused(Options(1), {"plan.json"}, "{\"format\": \"pipewright-plan\"}");
  // A plan that does not validate: rank 0's first SEND dropped (its RECV is
  // left without a sender).
  {
    nlohmann::json j = nlohmann::json::parse(PlanText(2, 1));
    auto& acts = j["ranks"][0]["actions"];
    for (size_t i = 0; i < acts.size(); ++i)
      if (acts[i].get<std::string>().find("SEND") != std::string::npos) {
        acts.erase(acts.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    StatusOr<std::string> yaml = MpiJobYaml(j.dump(2), "broken.json", Options(1));
    ASSERT_FALSE(yaml.ok());
    EXPECT_NE(yaml.status().message().find("broken.json"), std::string::npos) << yaml.status().ToString();
  }
  // A schedule-only plan (no model, no training): nothing `pipewright run` can train.
  {
    const std::string sched = *dir_ + "/schedule_only.json";
    ASSERT_EQ(Cli("schedule --schedule 1f1b --pp 2 --num-microbatches 4 --format json -o " + sched), 0);
    std::ifstream in(sched);
    std::stringstream ss;
    ss << in.rdbuf();
    StatusOr<std::string> yaml = MpiJobYaml(ss.str(), "sched.json", Options(1));
    ASSERT_FALSE(yaml.ok());
    EXPECT_NE(yaml.status().message().find("schedule-only plan"), std::string::npos) << yaml.status().ToString();
  }
  refused(Options(1), {"plan.json", "1048577 bytes", "ConfigMap"}, std::string(kMaxConfigMapBytes + 1, ' '));
}

// Tensor parallelism: T x P x D ranks, and every TP group (T consecutive
// ranks) in one Worker pod.
// --elastic: the launcher runs `pipewright elastic` over the operator's
// hostfile with the plan flags and the run flags, restarts OnFailure up to
// --max-restarts, mounts the claims (checkpoints) like the workers, and the
// gang minimum is --min-np's workers + the launcher; the manifest still
// passes the v2beta1 schema. Then the elastic refusals, and the CLI splitting
// "plan flags -- run flags".
TEST_F(MpiJobTest, ElasticLauncherRunsPipewrightElastic) {
  const std::string text = PlanText(2, 2);  // 4 ranks
  MpiJobOptions o = Options(2);             // 2 workers of 2
  o.elastic = true;
  o.min_np = 1;
  o.max_restarts = 5;
  o.claims = {"ckpt:/ckpt"};
  o.plan_args = {"--model-config", "/ckpt/model.json", "--device", "H100-80GB", "--global-batch-size", "16"};
  o.run_args = {"--data",    "/ckpt/corpus.txt",   "--steps", "100",    "--checkpoint-dir",
                "/ckpt/run", "--checkpoint-every", "10",      "--comm", "nccl"};
  StatusOr<std::string> yaml = MpiJobYaml(text, "plan.json", o);
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  ASSERT_TRUE(SchemaErrors(*yaml).empty()) << Join(SchemaErrors(*yaml)) << *yaml;
  const YAML::Node job = YAML::LoadAll(*yaml)[1];
  const YAML::Node spec = job["spec"];
  EXPECT_EQ(spec["runPolicy"]["backoffLimit"].as<int>(), 5);
  EXPECT_EQ(spec["runPolicy"]["schedulingPolicy"]["minAvailable"].as<int>(), 2) << "1 worker + the launcher";
  EXPECT_EQ(job["metadata"]["annotations"]["pipewright/elastic"].as<std::string>(), "min-np=1 max-restarts=5");
  for (const char* type : {"Launcher", "Worker"})
    EXPECT_EQ(spec["mpiReplicaSpecs"][type]["restartPolicy"].as<std::string>(), "OnFailure") << type;
  const YAML::Node launcher_pod = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"];
  const YAML::Node launcher = launcher_pod["containers"][0];
  EXPECT_EQ(StringList(launcher["command"]), std::vector<std::string>{"pipewright"});
  const std::vector<std::string> want = {"elastic",
                                         "--np",
                                         "4",
                                         "--hostfile",
                                         "/etc/mpi/hostfile",
                                         "--min-np",
                                         "1",
                                         "--max-restarts",
                                         "5",
                                         "--mpirun-arg=--bind-to",
                                         "--mpirun-arg=none",
                                         "--mpirun-arg=--map-by",
                                         "--mpirun-arg=slot",
                                         "--mpirun-arg=-x",
                                         "--mpirun-arg=OMP_NUM_THREADS=1",
                                         "--model-config",
                                         "/ckpt/model.json",
                                         "--device",
                                         "H100-80GB",
                                         "--global-batch-size",
                                         "16",
                                         "--",
                                         "--device",
                                         "cuda",
                                         "--data",
                                         "/ckpt/corpus.txt",
                                         "--steps",
                                         "100",
                                         "--checkpoint-dir",
                                         "/ckpt/run",
                                         "--checkpoint-every",
                                         "10",
                                         "--comm",
                                         "nccl"};
  EXPECT_EQ(StringList(launcher["args"]), want);
  // The launcher mounts the checkpoint claim as the workers do.
  ASSERT_EQ(launcher_pod["volumes"].size(), 2u);
  EXPECT_EQ(launcher_pod["volumes"][1]["persistentVolumeClaim"]["claimName"].as<std::string>(), "ckpt");
  EXPECT_EQ(launcher["volumeMounts"][1]["mountPath"].as<std::string>(), "/ckpt");
  // --min-np 3 on 2-GPU workers: 2 workers at least.
  o.min_np = 3;
  yaml = MpiJobYaml(text, "plan.json", o);
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  EXPECT_EQ(YAML::LoadAll(*yaml)[1]["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"].as<int>(), 3);

  auto refused = [&](MpiJobOptions bad, const std::string& needle) {
    StatusOr<std::string> y = MpiJobYaml(text, "plan.json", bad);
    ASSERT_FALSE(y.ok()) << needle;
    EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(y.status().message().find(needle), std::string::npos) << y.status().message();
  };
  MpiJobOptions bad = o;
  bad.min_np = 5;
  refused(bad, "--min-np 5: must be in [1, 4]");
  bad = o;
  bad.max_restarts = -1;
  refused(bad, "--max-restarts -1");
  bad = o;
  bad.plan_args.clear();
  refused(bad, "the plan flags elastic plans with");
  bad = o;
  bad.plan_args.push_back("--num-devices");
  bad.plan_args.push_back("4");
  refused(bad, "plan flag --num-devices is set by pipewright elastic");
  bad = o;
  bad.run_args = {"--data", "/ckpt/corpus.txt", "--steps", "100", "--checkpoint-dir", "/ckpt/run"};
  refused(bad, "the run flags need --checkpoint-every");
  bad = o;
  bad.run_args.push_back("--resume");
  bad.run_args.push_back("/ckpt/run");
  refused(bad, "--resume is set by pipewright elastic");

  // Through the CLI: the first -- starts the plan flags, the second the run flags.
  const std::string plan_path = *dir_ + "/plan_2x2.json";
  const std::string out = *dir_ + "/elastic.yaml";
  ASSERT_EQ(Cli("k8s --plan " + plan_path + " --image img:1 --gpus-per-node 2 --elastic --min-np 2 -o " + out +
                " -- --model-config m.json --device H100-80GB -- --data /d --steps 10 --checkpoint-dir /c "
                "--checkpoint-every 2"),
            0);
  std::ifstream in(out);
  std::stringstream read;
  read << in.rdbuf();
  const YAML::Node cli_job = YAML::LoadAll(read.str())[1];
  const std::vector<std::string> args =
      StringList(cli_job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"]);
  const auto dash = std::find(args.begin(), args.end(), "--");
  ASSERT_NE(dash, args.end());
  EXPECT_EQ(std::vector<std::string>(dash - 4, dash),
            (std::vector<std::string>{"--model-config", "m.json", "--device", "H100-80GB"}));
  EXPECT_EQ(std::vector<std::string>(dash + 1, args.end()),
            (std::vector<std::string>{"--device", "cuda", "--data", "/d", "--steps", "10", "--checkpoint-dir", "/c",
                                      "--checkpoint-every", "2"}));
  // Without the second --, refused naming the form.
  EXPECT_EQ(Cli("k8s --plan " + plan_path + " --image img:1 --elastic -- --data /d --steps 10"), 2);
}

TEST_F(MpiJobTest, TensorParallelGroupsStayInOnePod) {
  const std::string path = *dir_ + "/plan_tp2.json";
  const std::string cmd =
      "plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp "
      "--schedule 1f1b --num-microbatches 4 --seq-length 16 --micro-batch-size 2 "
      "--model-config " +
      *dir_ + "/model.json --pp 2 --tp 2 -o " + path;
  ASSERT_EQ(Cli(cmd), 0) << cmd;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  StatusOr<std::string> yaml = MpiJobYaml(ss.str(), "plan.json", Options(2));
  ASSERT_TRUE(yaml.ok()) << yaml.status().ToString();
  EXPECT_NE(yaml->find("tp_size=2 pp_size=2 dp_size=1 ranks=4"), std::string::npos) << *yaml;
  StatusOr<std::string> split = MpiJobYaml(ss.str(), "plan.json", Options(1));
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("--gpus-per-node 1: the plan's tp_size is 2"), std::string::npos)
      << split.status().message();
}

TEST(Dns1123, Labels) {
  EXPECT_TRUE(IsDns1123Label("a"));
  EXPECT_TRUE(IsDns1123Label("pipewright-0a1b2c3d-worker-15"));
  EXPECT_TRUE(IsDns1123Label(std::string(63, 'x')));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'x')));
  EXPECT_FALSE(IsDns1123Label(""));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label("a-"));
  EXPECT_FALSE(IsDns1123Label("A"));
  EXPECT_FALSE(IsDns1123Label("a.b"));
}

}  // namespace
}  // namespace pw::k8s
