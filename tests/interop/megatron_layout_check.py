"""megatron-core's own layout parser reads `pipewright launch-config --for megatron` output.

Usage: megatron_layout_check.py PLAN.json ARGS [ARGS...]. megatron-core's
megatron/core/transformer/pipeline_parallel_layer_layout.py (and enums.py) is
loaded from the installed package's files, without importing megatron.core
itself (which needs torch and a GPU stack): parallel_state is stubbed, as the
parser's from_str/validate path never calls it. For each arguments file, the
pipeline split it states (--pipeline-model-parallel-layout, or
--decoder-first/last-pipeline-num-layers, or an even split with
--num-layers-per-virtual-pipeline-stage) is turned into Megatron's per
(pp rank, virtual stage) decoder-layer counts (for a layout by
PipelineParallelLayerLayout itself, including validate_layer_layout) and
compared with the plan's stages (stage s on pp rank s % P, virtual stage s / P).
Prints "OK <file>" or "FAIL <file>: ..."; exits 1 on any FAIL.
"""
import importlib.util
import json
import os
import sys
import types


def load_layout_module():
    spec = importlib.util.find_spec("megatron")
    base = None
    for loc in spec.submodule_search_locations or []:
        if os.path.isfile(os.path.join(loc, "core", "transformer", "pipeline_parallel_layer_layout.py")):
            base = os.path.join(loc, "core")
    if base is None:
        raise ImportError("megatron-core's pipeline_parallel_layer_layout.py not found")
    for name in ("megatron", "megatron.core", "megatron.core.transformer"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["megatron.core.parallel_state"] = types.ModuleType("megatron.core.parallel_state")
    sys.modules["megatron.core"].parallel_state = sys.modules["megatron.core.parallel_state"]
    mods = {}
    for name, rel in (("megatron.core.transformer.enums", "transformer/enums.py"),
                      ("megatron.core.transformer.pipeline_parallel_layer_layout",
                       "transformer/pipeline_parallel_layer_layout.py")):
        s = importlib.util.spec_from_file_location(name, os.path.join(base, rel))
        m = importlib.util.module_from_spec(s)
        sys.modules[name] = m
        s.loader.exec_module(m)
        mods[name] = m
    return mods["megatron.core.transformer.pipeline_parallel_layer_layout"], mods["megatron.core.transformer.enums"]


def parse_args(path):
    """Megatron's flags as {flag: [values]} (the file as `$(cat FILE)` splits it)."""
    out, cur = {}, None
    for tok in open(path).read().split():
        if tok.startswith("--"):
            cur = tok
            out[cur] = []
        else:
            out[cur].append(tok)
    return out


def check(plan, path, layout_mod, enums):
    a = parse_args(path)
    P = int(a["--pipeline-model-parallel-size"][0])
    L = int(a["--num-layers"][0])
    if P != plan["pp_size"]:
        return f"--pipeline-model-parallel-size {P}, plan pp_size {plan['pp_size']}"
    S = plan["num_stages"]
    v = S // P
    kinds = [l["kind"] for l in plan["layers"]]
    want = [[0] * v for _ in range(P)]
    for st in plan["stages"]:
        b, e = st["layers"]
        want[st["index"] % P][st["index"] // P] = sum(1 for k in kinds[b:e] if k == "block")
    if "--pipeline-model-parallel-layout" in a:
        lay = layout_mod.PipelineParallelLayerLayout(a["--pipeline-model-parallel-layout"][0], P)
        lay.validate_layer_layout(num_layers=L, mtp_num_layers=None)
        got = [[lay.layout[r][c].count(enums.LayerType.decoder) for c in range(lay.virtual_pipeline_model_parallel_size)]
               for r in range(P)]
        if lay.layout[0][0][0] != enums.LayerType.embedding or lay.layout[(S - 1) % P][(S - 1) // P][-1] != enums.LayerType.loss:
            return "layout: embedding not first or loss not last"
    elif "--decoder-first-pipeline-num-layers" in a or "--decoder-last-pipeline-num-layers" in a:
        # megatron-core TransformerConfig: first/last given, the rest split evenly (v = 1 here).
        first = int(a.get("--decoder-first-pipeline-num-layers", [0])[0]) or None
        last = int(a.get("--decoder-last-pipeline-num-layers", [0])[0]) or None
        rest, mid = L - (first or 0) - (last or 0), P - (first is not None) - (last is not None)
        if mid and rest % mid:
            return f"middle layers {rest} not divisible by {mid} middle stages"
        got = [[rest // mid if mid else 0] for _ in range(P)]
        if first is not None:
            got[0] = [first]
        if last is not None:
            got[-1] = [last]
    else:
        per = int(a["--num-layers-per-virtual-pipeline-stage"][0]) if "--num-layers-per-virtual-pipeline-stage" in a else L // P
        if L % P or (L // P) % per:
            return f"{L} layers do not split evenly over {P} ranks in chunks of {per}"
        got = [[per] * ((L // P) // per) for _ in range(P)]
    if got != want:
        return f"decoder layers per (pp rank, virtual stage): Megatron {got}, plan {want}"
    return None


def main():
    layout_mod, enums = load_layout_module()
    plan = json.load(open(sys.argv[1]))
    rc = 0
    for path in sys.argv[2:]:
        try:
            err = check(plan, path, layout_mod, enums)
        except (AssertionError, ValueError, KeyError) as e:
            err = f"{type(e).__name__}: {e}"
        print(f"OK {path}" if err is None else f"FAIL {path}: {err}", flush=True)
        rc |= err is not None
    sys.exit(rc)


if __name__ == "__main__":
    main()
