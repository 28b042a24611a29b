#!/usr/bin/env bash
# `pipewright k8s` as a user runs it: the manifest read by a second YAML
# implementation (PyYAML) agrees with the plan (ConfigMap text byte for byte,
# integer counts, string arguments); same inputs give the same bytes; stdout
# and -o agree; refusals exit 2 naming the option and leave no file (and an
# existing one untouched).
# Usage: k8s_cli_test.sh PATH/TO/pipewright
set -u
PW="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf '{"n_layer": 4, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$T/model.json"
"$PW" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 4 \
  --num-microbatches 4 --model-config "$T/model.json" --seq-length 16 --micro-batch-size 2 -o "$T/plan.json" \
  > /dev/null || fail "pipewright plan failed"
"$PW" --help | grep -q ' k8s ' || fail "k8s not listed in pipewright --help"

k8s=("$PW" k8s --plan "$T/plan.json" --image ghcr.io/example/pipewright:2 --gpus-per-node 2 --scheduler volcano
     --queue research --namespace ml --pvc corpus:/data --pvc ckpt:/ckpt)
"${k8s[@]}" -o "$T/job.yaml" -- --data /data/c.txt --steps 10 --lr 3e-4 > "$T/out.txt" 2>&1 \
  || fail "k8s failed: $(cat "$T/out.txt")"
"${k8s[@]}" -o "$T/job2.yaml" -- --data /data/c.txt --steps 10 --lr 3e-4 || fail "second run failed"
cmp -s "$T/job.yaml" "$T/job2.yaml" || fail "same inputs gave different manifests"
"${k8s[@]}" -- --data /data/c.txt --steps 10 --lr 3e-4 > "$T/stdout.yaml" || fail "stdout run failed"
cmp -s "$T/job.yaml" "$T/stdout.yaml" || fail "stdout differs from -o"

python3 - "$T/job.yaml" "$T/plan.json" <<'PY' || fail "PyYAML check failed"
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
plan_text = open(sys.argv[2]).read()
assert len(docs) == 2, len(docs)
cm, job = docs
assert cm["kind"] == "ConfigMap" and cm["apiVersion"] == "v1"
assert cm["data"]["plan.json"] == plan_text, "ConfigMap plan text differs from the file"
assert job["apiVersion"] == "kubeflow.org/v2beta1" and job["kind"] == "MPIJob"
assert job["metadata"]["namespace"] == "ml" and cm["metadata"]["namespace"] == "ml"
spec = job["spec"]
# pp 4 x dp 1 = 4 ranks, 2 per worker: 2 workers, gang of 3 pods.
assert spec["slotsPerWorker"] == 2 and type(spec["slotsPerWorker"]) is int
launcher, worker = spec["mpiReplicaSpecs"]["Launcher"], spec["mpiReplicaSpecs"]["Worker"]
assert launcher["replicas"] == 1 and worker["replicas"] == 2, (launcher["replicas"], worker["replicas"])
assert spec["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3, "queue": "research"}
for r in (launcher, worker):
    assert r["template"]["spec"]["schedulerName"] == "volcano"
    assert r["template"]["spec"]["volumes"][0]["configMap"]["name"] == cm["metadata"]["name"]
c = worker["template"]["spec"]["containers"][0]
assert c["resources"] == {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 2}}, c["resources"]
assert worker["template"]["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
# Each --pvc: a claim volume and its mount in the worker, in order.
vols = {v["name"]: v for v in worker["template"]["spec"]["volumes"]}
mounts = [(m["name"], m["mountPath"]) for m in c["volumeMounts"]][2:]
assert [(vols[n]["persistentVolumeClaim"]["claimName"], p) for n, p in mounts] == [("corpus", "/data"), ("ckpt", "/ckpt")], mounts
args = launcher["template"]["spec"]["containers"][0]["args"]
assert all(type(a) is str for a in args), [a for a in args if type(a) is not str]
assert args[:2] == ["-np", "4"], args
i = args.index("run")
assert args[i:] == ["run", "--plan", "/etc/pipewright/plan.json", "--device", "cuda", "--data", "/data/c.txt",
                    "--steps", "10", "--lr", "3e-4"], args[i:]
print("PyYAML: 2 documents, ConfigMap = plan file (%d bytes), 2 workers x 2 GPUs, gang 3" % len(plan_text))
PY

# Refusals: exit 2, the option named, no file written, an existing file untouched.
refuse() {  # refuse PATTERN ARGS...
  local pattern=$1 rc=0
  shift
  rm -f "$T/bad.yaml"
  "$PW" k8s "$@" -o "$T/bad.yaml" > "$T/r.txt" 2>&1 || rc=$?
  [ $rc -eq 2 ] || fail "exit $rc, want 2: k8s $* ($(cat "$T/r.txt"))"
  grep -qF -- "$pattern" "$T/r.txt" || fail "no '$pattern' in: $(cat "$T/r.txt")"
  [ ! -e "$T/bad.yaml" ] || fail "a manifest was written for a refused request: k8s $*"
}
refuse "--gpus-per-node 3: the plan has 4 ranks" --plan "$T/plan.json" --image i --gpus-per-node 3 -- --data d
refuse "--image is required" --plan "$T/plan.json" -- --data d
refuse "--scheduler 'kube'" --plan "$T/plan.json" --image i --scheduler kube -- --data d
refuse "--plan $T/none.json: cannot open" --plan "$T/none.json" --image i -- --data d
refuse "needs --data FILE" --plan "$T/plan.json" --image i -- --steps 3
refuse "--queue q" --plan "$T/plan.json" --image i --queue q -- --data d
refuse "--pvc 'data'" --plan "$T/plan.json" --image i --pvc data -- --data d
echo keep > "$T/keep.yaml"
"$PW" k8s --plan "$T/plan.json" --image i --gpus-per-node 3 -o "$T/keep.yaml" -- --data d 2> /dev/null
[ "$(cat "$T/keep.yaml")" = keep ] || fail "a refused request changed an existing output file"
echo PASS
