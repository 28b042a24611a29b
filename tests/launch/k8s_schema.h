// The expected schema of `pipewright k8s` manifests, written down from the
// Kubernetes API's Go types (MPI Operator kubeflow.org/v2beta1 and the
// core/v1 types it embeds), and a checker that lists every violation with its
// path. Test-only: included by mpijob_test.cc alone.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <regex>
#include <string>
#include <vector>

namespace pw::k8s {
namespace {

// ---------------------------------------------------------------------------
// The expected schema, written down from the API's Go types.
// ---------------------------------------------------------------------------

// What a scalar resolves to when read (YAML 1.1 rules, which Kubernetes'
// go-yaml and PyYAML apply to plain scalars; a quoted scalar is a string).
enum class Scalar { kString, kInt, kFloat, kBool, kNull };

Scalar Resolve(const YAML::Node& n) {
  if (n.Tag() == "!") return Scalar::kString;  // quoted: non-specific "!" tag
  const std::string s = n.Scalar();
  static const std::regex null_re("^(~|null|Null|NULL|)$");
  static const std::regex bool_re(
      "^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$");
  static const std::regex int_re("^[-+]?(0|[1-9][0-9_]*|0[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+|0o[0-7]+)$");
  static const std::regex float_re(
      "^([-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
      "|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN))$");
  if (std::regex_match(s, null_re)) return Scalar::kNull;
  if (std::regex_match(s, bool_re)) return Scalar::kBool;
  if (std::regex_match(s, int_re)) return Scalar::kInt;
  if (std::regex_match(s, float_re)) return Scalar::kFloat;
  return Scalar::kString;
}

enum class Type {
  kString,    // Go string
  kInt,       // Go int32/int64
  kBool,      // Go bool
  kQuantity,  // resource.Quantity: an integer, or a string like "1Gi", "500m"
  kObject,    // a struct: `object` lists its fields
  kList,      // a slice: of `object` if set, else of `element` scalars
  kMap,       // map[K]V: keys in `allowed` if set, values `object` if set, else `element` scalars
};

struct Object;

struct Field {
  std::string key;
  Type type = Type::kString;
  bool required = false;
  const Object* object = nullptr;
  std::vector<std::string> allowed;                   // kString: allowed values; kMap: allowed keys (empty = any)
  Type element = Type::kString;                       // kList / kMap of scalars
  int64_t min = std::numeric_limits<int64_t>::min();  // kInt
};

struct Object {
  std::string name;
  std::vector<Field> fields;  // any other key is an error (strict decoding)
};

Field Str(std::string key, bool required = false, std::vector<std::string> allowed = {}) {
  Field f;
  f.key = std::move(key);
  f.required = required;
  f.allowed = std::move(allowed);
  return f;
}
Field Int(std::string key, bool required = false, int64_t min = std::numeric_limits<int64_t>::min()) {
  Field f;
  f.key = std::move(key);
  f.type = Type::kInt;
  f.required = required;
  f.min = min;
  return f;
}
Field Bool(std::string key) {
  Field f;
  f.key = std::move(key);
  f.type = Type::kBool;
  return f;
}
Field Obj(std::string key, const Object* o, bool required = false) {
  Field f;
  f.key = std::move(key);
  f.type = Type::kObject;
  f.object = o;
  f.required = required;
  return f;
}
Field List(std::string key, const Object* o, bool required = false) {
  Field f = Obj(std::move(key), o, required);
  f.type = Type::kList;
  return f;
}
Field ScalarList(std::string key, Type element) {
  Field f;
  f.key = std::move(key);
  f.type = Type::kList;
  f.element = element;
  return f;
}
Field Map(std::string key, Type element, const Object* o = nullptr, std::vector<std::string> keys = {},
          bool required = false) {
  Field f;
  f.key = std::move(key);
  f.type = Type::kMap;
  f.element = element;
  f.object = o;
  f.allowed = std::move(keys);
  f.required = required;
  return f;
}

// core/v1 (k8s.io/api/core/v1/types.go), the fields pipewright may write.
const Object kObjectMeta{
    "ObjectMeta", {Str("name"), Str("namespace"), Map("labels", Type::kString), Map("annotations", Type::kString)}};
const Object kEnvVar{"EnvVar", {Str("name", true), Str("value")}};
const Object kResources{"ResourceRequirements", {Map("limits", Type::kQuantity), Map("requests", Type::kQuantity)}};
const Object kVolumeMount{"VolumeMount", {Str("name", true), Str("mountPath", true), Bool("readOnly"), Str("subPath")}};
const Object kContainer{
    "Container",
    {Str("name", true), Str("image"), ScalarList("command", Type::kString), ScalarList("args", Type::kString),
     List("env", &kEnvVar), Obj("resources", &kResources), List("volumeMounts", &kVolumeMount), Str("workingDir")}};
const Object kConfigMapSource{"ConfigMapVolumeSource", {Str("name", true), Int("defaultMode", false, 0)}};
const Object kEmptyDir{"EmptyDirVolumeSource",
                       {Str("medium", false, {"", "Memory"}), Map("sizeLimit", Type::kQuantity)}};
const Object kClaimSource{"PersistentVolumeClaimVolumeSource", {Str("claimName", true), Bool("readOnly")}};
const Object kVolume{"Volume",
                     {Str("name", true), Obj("configMap", &kConfigMapSource), Obj("emptyDir", &kEmptyDir),
                      Obj("persistentVolumeClaim", &kClaimSource)}};
const Object kToleration{
    "Toleration",
    {Str("key"), Str("operator", false, {"Exists", "Equal"}), Str("value"),
     Str("effect", false, {"NoSchedule", "PreferNoSchedule", "NoExecute"}), Int("tolerationSeconds")}};
const Object kPodSpec{
    "PodSpec",
    {List("containers", &kContainer, true), List("volumes", &kVolume), List("tolerations", &kToleration),
     Str("schedulerName"), Map("nodeSelector", Type::kString), Str("priorityClassName")}};
const Object kPodTemplateSpec{"PodTemplateSpec", {Obj("metadata", &kObjectMeta), Obj("spec", &kPodSpec, true)}};
// kubeflow.org/v2beta1 (mpi-operator). ReplicaSpec.restartPolicy: the type
// allows Always, OnFailure, Never, ExitCode; validation accepts Never and
// OnFailure only; replicas is required after validation (Launcher: 1,
// Worker: >= 1).
const Object kReplicaSpec{"ReplicaSpec",
                          {Int("replicas", true, 1), Obj("template", &kPodTemplateSpec, true),
                           Str("restartPolicy", true, {"Never", "OnFailure"})}};
const Object kSchedulingPolicy{"SchedulingPolicy",
                               {Int("minAvailable", false, 1), Str("queue"), Map("minResources", Type::kQuantity),
                                Str("priorityClass"), Int("scheduleTimeoutSeconds", false, 0)}};
const Object kRunPolicy{
    "RunPolicy",
    {Str("cleanPodPolicy", true, {"None", "Running", "All"}), Int("ttlSecondsAfterFinished", false, 0),
     Int("activeDeadlineSeconds", false, 0), Int("backoffLimit", false, 0), Obj("schedulingPolicy", &kSchedulingPolicy),
     Bool("suspend"), Str("managedBy")}};
const Object kMpiJobSpec{
    "MPIJobSpec",
    {Int("slotsPerWorker", true, 1), Obj("runPolicy", &kRunPolicy, true),
     Map("mpiReplicaSpecs", Type::kObject, &kReplicaSpec, {"Launcher", "Worker"}, true), Str("sshAuthMountPath", true),
     Str("mpiImplementation", true, {"OpenMPI", "Intel", "MPICH"}), Bool("runLauncherAsWorker"),
     Str("launcherCreationPolicy", false, {"AtStartup", "WaitForWorkersReady"})}};
const Object kMpiJob{"MPIJob",
                     {Str("apiVersion", true, {"kubeflow.org/v2beta1"}), Str("kind", true, {"MPIJob"}),
                      Obj("metadata", &kObjectMeta, true), Obj("spec", &kMpiJobSpec, true)}};
const Object kConfigMap{"ConfigMap",
                        {Str("apiVersion", true, {"v1"}), Str("kind", true, {"ConfigMap"}),
                         Obj("metadata", &kObjectMeta, true), Map("data", Type::kString), Bool("immutable")}};

// resource.Quantity's string form (k8s.io/apimachinery/pkg/api/resource).
bool IsQuantity(const std::string& s) {
  static const std::regex re("^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$");
  return std::regex_match(s, re);
}

void CheckScalar(const YAML::Node& n, Type t, const std::string& path, std::vector<std::string>* errors) {
  if (!n.IsScalar()) {
    errors->push_back(path + ": expected a scalar");
    return;
  }
  const Scalar r = Resolve(n);
  switch (t) {
    case Type::kString:
      if (r != Scalar::kString) errors->push_back(path + ": '" + n.Scalar() + "' would be read as a non-string");
      break;
    case Type::kInt:
      if (r != Scalar::kInt) errors->push_back(path + ": '" + n.Scalar() + "' is not an integer");
      break;
    case Type::kBool:
      if (r != Scalar::kBool) errors->push_back(path + ": '" + n.Scalar() + "' is not a boolean");
      break;
    case Type::kQuantity:
      if (!((r == Scalar::kInt) || (r == Scalar::kString && IsQuantity(n.Scalar()))))
        errors->push_back(path + ": '" + n.Scalar() + "' is not a resource quantity");
      break;
    default:
      errors->push_back(path + ": schema error");
      break;
  }
}

void CheckObject(const YAML::Node& n, const Object& o, const std::string& path, std::vector<std::string>* errors);

void CheckField(const YAML::Node& v, const Field& f, const std::string& path, std::vector<std::string>* errors) {
  switch (f.type) {
    case Type::kString:
    case Type::kBool:
    case Type::kQuantity:
      CheckScalar(v, f.type, path, errors);
      if (f.type == Type::kString && !f.allowed.empty() && v.IsScalar() &&
          std::find(f.allowed.begin(), f.allowed.end(), v.Scalar()) == f.allowed.end())
        errors->push_back(path + ": '" + v.Scalar() + "' is not an allowed value");
      break;
    case Type::kInt:
      CheckScalar(v, f.type, path, errors);
      if (v.IsScalar() && Resolve(v) == Scalar::kInt && v.as<int64_t>() < f.min)
        errors->push_back(path + ": " + v.Scalar() + " is below " + std::to_string(f.min));
      break;
    case Type::kObject:
      CheckObject(v, *f.object, path, errors);
      break;
    case Type::kList:
      if (!v.IsSequence()) {
        errors->push_back(path + ": expected a list");
        break;
      }
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string p = path + "[" + std::to_string(i) + "]";
        if (f.object) {
          CheckObject(v[i], *f.object, p, errors);
        } else {
          CheckScalar(v[i], f.element, p, errors);
        }
      }
      break;
    case Type::kMap:
      if (!v.IsMap()) {
        errors->push_back(path + ": expected a map");
        break;
      }
      for (const auto& kv : v) {
        const std::string key = kv.first.Scalar();
        const std::string p = path + "." + key;
        if (!f.allowed.empty() && std::find(f.allowed.begin(), f.allowed.end(), key) == f.allowed.end())
          errors->push_back(p + ": key not allowed");
        if (f.object) {
          CheckObject(kv.second, *f.object, p, errors);
        } else {
          CheckScalar(kv.second, f.element, p, errors);
        }
      }
      break;
  }
}

void CheckObject(const YAML::Node& n, const Object& o, const std::string& path, std::vector<std::string>* errors) {
  if (!n.IsMap()) {
    errors->push_back(path + ": expected a " + o.name + " (a map)");
    return;
  }
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    auto it = std::find_if(o.fields.begin(), o.fields.end(), [&](const Field& f) { return f.key == key; });
    if (it == o.fields.end()) {
      errors->push_back(path + "." + key + ": unknown field of " + o.name);
      continue;
    }
    CheckField(kv.second, *it, path + "." + key, errors);
  }
  for (const Field& f : o.fields)
    if (f.required && !n[f.key]) errors->push_back(path + "." + f.key + ": required field of " + o.name + " missing");
}

// All schema errors of a manifest: exactly two documents, a ConfigMap and an MPIJob.
std::vector<std::string> SchemaErrors(const std::string& yaml) {
  std::vector<std::string> errors;
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    return {std::string("not YAML: ") + e.what()};
  }
  if (docs.size() != 2) return {"expected 2 documents, got " + std::to_string(docs.size())};
  CheckObject(docs[0], kConfigMap, "ConfigMap", &errors);
  CheckObject(docs[1], kMpiJob, "MPIJob", &errors);
  return errors;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& e : v) s += "  " + e + "\n";
  return s;
}

}  // namespace
}  // namespace pw::k8s
