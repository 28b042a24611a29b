"""torchtitan's own code reads `pipewright launch-config --for torchtitan` output.

Usage: torchtitan_check.py PLAN.json ARGS [ARGS...]: for each arguments file
(read as `$(cat ARGS)` splits it), torchtitan 0.3's ConfigManager parses it
(with its tyro rules and Trainer.Config checks), and then:
  - the degrees, batch shape, schedule and activation checkpointing parsed
    agree with the plan;
  - the model the config names, built on the meta device, has every module
    of --parallelism.module_fqns_per_model_part, each exactly once, in order;
  - torchtitan's stage placement for the schedule name
    (_get_pp_rank_to_stage_indices_mapping) equals the plan's stage_to_rank;
  - a schedule CSV is read with PyTorch's _Action parser and passes its
    _validate_schedule, whose stage -> rank map equals the plan's.
Prints "OK <file>" or "FAIL <file>: <what differs>"; exits 1 on any FAIL.
"""
import contextlib
import csv
import io
import json
import sys


def check(plan, path):
    import torch
    from torch.distributed.pipelining.schedules import _Action, _validate_schedule
    from torchtitan.config import ConfigManager
    from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC
    from torchtitan.distributed.pipeline_parallel import _get_pp_rank_to_stage_indices_mapping

    args = open(path).read().split()
    # tyro prints why it refuses (a boxed message) and exits 2: keep the text.
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured), contextlib.redirect_stdout(captured):
            c = ConfigManager().parse_args(args)
    except SystemExit as e:
        text = " ".join(line.strip(" │╭╮╰╯─") for line in captured.getvalue().splitlines())
        return f"ConfigManager refused the file (exit {e.code}): {' '.join(text.split())}"
    p, t = c.parallelism, c.training
    tr = plan["training"]
    P, D, S, m = plan["pp_size"], plan["dp_size"], plan["num_stages"], plan["num_microbatches"]
    want = {
        "pipeline_parallel_degree": (p.pipeline_parallel_degree, P),
        "dp degree (replicate x shard)": (p.data_parallel_replicate_degree * p.data_parallel_shard_degree, D),
        "tensor_parallel_degree": (p.tensor_parallel_degree, plan.get("tp_size", 1)),
        "pipeline_parallel_microbatch_size": (p.pipeline_parallel_microbatch_size, tr["micro_batch_size"]),
        "microbatches (local_batch_size / microbatch size)":
            (t.local_batch_size // p.pipeline_parallel_microbatch_size, m),
        "global_batch_size": (t.global_batch_size, tr["global_batch_size"]),
        "seq_len": (t.seq_len, tr["seq_length"]),
        "stages (module_fqns_per_model_part)": (len(p.module_fqns_per_model_part), S),
    }
    if plan.get("tp_size", 1) > 1:
        want["enable_sequence_parallel"] = (p.enable_sequence_parallel, plan.get("sequence_parallel", False))
    for name, (got, exp) in want.items():
        if got != exp:
            return f"{name}: torchtitan parsed {got}, the plan says {exp}"
    ac = {"none": type(None), "selective": SelectiveAC.Config, "full": FullAC.Config}[tr["recompute"]]
    if type(c.activation_checkpoint) is not ac:
        return f"activation_checkpoint: parsed {type(c.activation_checkpoint).__name__}, plan recompute {tr['recompute']}"
    # Every module of the model in exactly one stage, in forward order.
    with torch.device("meta"):
        model = c.model_spec.model.build()
    names = [n for part in p.module_fqns_per_model_part for n in part]
    for n in names:
        try:
            model.get_submodule(n)
        except AttributeError:
            return f"module_fqns_per_model_part: the model has no module '{n}'"
    top = [n for n, _ in model.named_children() if n != "layers"]
    expected = ["tok_embeddings"] + [f"layers.{i}" for i in range(len(model.layers))] + ["norm", "lm_head"]
    if names != expected:
        return f"module_fqns_per_model_part: {names} is not the model's modules in order {expected} (children {top})"
    # Stage placement for the schedule name, as torchtitan computes it.
    placement = [None] * S
    for r in range(P):
        for s in _get_pp_rank_to_stage_indices_mapping(r, P, p.pipeline_parallel_schedule, S):
            placement[s] = r
    if placement != plan["stage_to_rank"]:
        return f"placement of {p.pipeline_parallel_schedule}: {placement}, the plan's stage_to_rank {plan['stage_to_rank']}"
    if p.pipeline_parallel_schedule_csv:
        with open(p.pipeline_parallel_schedule_csv) as f:
            rows = list(csv.reader(f))
        actions = {r: [_Action.from_str(x) for x in row] for r, row in enumerate(rows)}
        mapping = _validate_schedule(actions, P, S, m)
        got = [mapping[s] for s in range(S)]
        if got != plan["stage_to_rank"]:
            return f"CSV stage -> rank {got}, the plan's {plan['stage_to_rank']}"
    return None


def main():
    plan = json.load(open(sys.argv[1]))
    rc = 0
    for path in sys.argv[2:]:
        try:
            err = check(plan, path)
        except BaseException as e:  # ConfigManager reports through SystemExit (tyro) or ValueError
            err = f"{type(e).__name__}: {e}"
        print(f"OK {path}" if err is None else f"FAIL {path}: {err}", flush=True)
        rc |= err is not None
    sys.exit(rc)


if __name__ == "__main__":
    main()
