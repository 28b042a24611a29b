#!/usr/bin/env python3
"""Tensor parallelism targets (#23): the plan `pipewright plan --num-devices N`
chooses for three published training setups, its predicted step against the
ideal step, and the CPU time of the search, for one or two pipewright
binaries side by side (a build before tensor parallelism, and this one).

  ideal step = GBS x s x (6 N + 12 L h s) / (devices x peak x efficiency)
  (model FLOPs per token 6N + 12Lhs: Narayanan et al. 2021 §5.1 without the
  vocabulary term, as the issue states it; peak and efficiency from the
  device file: H100-80GB 989 TFLOP/s dense BF16, 0.4)
  MFU = model FLOPs / (step x devices x peak) = efficiency x ideal / step

CPU seconds: user + system time of the `pipewright plan` process
(resource.getrusage of the child). Each binary is run once per case; the
plan is written to a temporary directory. Prints a Markdown table and checks
its own output: `wrong` counts cases whose chosen plan is missing from the
JSON or whose step is not finite (must be 0).

Usage: bench/tp_targets.py AFTER_PIPEWRIGHT [BEFORE_PIPEWRIGHT] > bench/results/tensor_parallel.md
"""
import json
import math
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")

CASES = [
    # name, config, devices, gbs, seq, extra flags, Megatron's published layout
    ("Llama-3-70B, 64 x H100, GBS 128 x 8192", "llama-3-70b", 64, 128, 8192, [],
     "TP4 x PP4 x CP2 x DP2 (Megatron-Core / NeMo Llama-3-70B recipe on 64 H100)"),
    ("GPT-3 175B, 128 x H100, GBS 1536 x 2048", "gpt3-175b", 128, 1536, 2048, [],
     "TP4 x PP8 x DP4, distributed optimizer (Megatron-LM GPT-3 175B on 128 H100)"),
    ("GPT-3 175B, 128 x H100, GBS 1536 x 2048, --use-distributed-optimizer", "gpt3-175b", 128, 1536, 2048,
     ["--use-distributed-optimizer"], "TP4 x PP8 x DP4, distributed optimizer"),
    ("Llama-2-7B, 8 x H100, GBS 64 x 4096", "llama-2-7b", 8, 64, 4096, [], "TP1 x PP1 x DP8 or TP2 x DP4 (fits one node)"),
]


def parameters(cfg):
    """TotalParameters of models/spec/footprint.h for the shipped configs."""
    if cfg.get("model_type") == "gpt2":
        h, L, V, pos = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_positions"]
        f = cfg.get("n_inner") or 4 * h
        block = h * 3 * h + 3 * h + h * h + h + h * f + f + f * h + h + 4 * h
        return V * h + pos * h + L * block + 2 * h, L, h
    h, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    a, k, f = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"]), cfg["intermediate_size"]
    d = h // a
    block = h * (a * d + 2 * k * d) + a * d * h + 3 * h * f + 2 * h
    tied = cfg.get("tie_word_embeddings", False)
    return V * h + L * block + h + (0 if tied else V * h), L, h


def run(pw, config, devices, gbs, seq, extra):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [pw, "plan", "--model-config", config, "--device", "H100-80GB", "--num-devices", str(devices),
               "--global-batch-size", str(gbs), "--seq-length", str(seq), "--format", "json",
               "-o", os.path.join(tmp, "plan.json")] + extra
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if out.returncode != 0:
            return None, cpu, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "exit %d" % out.returncode
        doc = json.loads(out.stdout)
        return doc, cpu, ""


def describe(doc):
    sp = doc["splits"][doc["chosen"]]
    layout = "TP%d x PP%d x DP%d" % (sp.get("tp_size", 1), sp["pp_size"], sp["dp_size"])
    if sp.get("distributed_optimizer"):
        layout += " ZeRO-1"
    what = "%s v=%d m=%d b=%d %s" % (sp["schedule"], sp["v"], sp["m"], sp["micro_batch_size"], sp["recompute"])
    return sp, layout, what


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    binaries = [("after", sys.argv[1])]
    if len(sys.argv) > 2:
        binaries.insert(0, ("before", sys.argv[2]))
    device = json.load(open(os.path.join(MODELS, "devices", "h100-80gb.json")))
    peak, eff = device["peak_flops"], device["efficiency"]
    print("| case | build | layout | candidate | step s | x ideal | MFU | bubble | search CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    wrong = 0
    for name, config, devices, gbs, seq, extra, megatron in CASES:
        cfg = json.load(open(os.path.join(MODELS, "configs", config + ".json")))
        n, L, h = parameters(cfg)
        flops = gbs * seq * (6.0 * n + 12.0 * L * h * seq)
        ideal = flops / (devices * peak * eff)
        for label, pw in binaries:
            doc, cpu, err = run(pw, config, devices, gbs, seq, extra)
            if doc is None:
                print("| %s | %s | none | %s | | | | | %.1f |" % (name, label, err.replace("|", "/"), cpu))
                continue
            sp, layout, what = describe(doc)
            step = sp["step_s"]
            if not math.isfinite(step) or step <= 0:
                wrong += 1
            print("| %s | %s | %s | %s | %.2f | %.2fx | %.1f %% | %.3f | %.1f |" %
                  (name, label, layout, what, step, step / ideal, 100.0 * eff * ideal / step, sp["bubble_ratio"], cpu))
        print("| | Megatron | %s | | | | | | |" % megatron)
    print("\nideal steps: model FLOPs / (devices x %.3g FLOP/s x %.2f); wrong %d" % (peak, eff, wrong))
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
