#!/usr/bin/env python3
"""PyTorch's side of the CSV exchange (docs/PLAN_FORMAT.md, "PyTorch CSV").

  torch_csv.py fixtures OUTDIR   write PyTorch's own schedules as CSV dumps
                                 (the fixtures in tests/testdata/torch/)
  torch_csv.py check FILE...     load each compute_comms FILE with PyTorch's
                                 _PipelineScheduleRuntime._load_csv(format=
                                 "compute_comms"), then dry-run it with
                                 PyTorch's _simulate_comms_compute

Exits 77 (ctest's "skipped") when torch cannot be imported: neither the
project nor its CI needs Python torch. Only the schedule IR is used; no
process group is created and no tensor is computed, so the pipeline stages
are stand-ins that carry the four numbers the schedule classes read (stage
index, number of stages, group size, group rank).
"""
import csv
import os
import sys

try:
    import torch
    import torch.distributed.pipelining.schedules as S
    from torch.distributed.pipelining.stage import _PipelineStageBase
except Exception as e:  # torch missing or broken
    print(f"SKIP: cannot import torch ({e.__class__.__name__}: {e})")
    sys.exit(77)


class IRStage(_PipelineStageBase):
    """A stage that carries only what schedule construction reads."""

    _create_grad_recv_info = _prepare_backward_infra = _prepare_forward_infra = lambda *a, **k: None

    def __init__(self, stage_index, num_stages, group_size, group_rank=0):
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.stage_index_to_group_rank = {}
        self.submod = torch.nn.Identity()

    @property
    def is_first(self):
        return self.stage_index == 0

    @property
    def is_last(self):
        return self.stage_index == self.num_stages - 1


def write_rows(path, order):
    """Writes order {rank: [action or None]} the way PyTorch's _dump_csv does."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        for rank in sorted(order):
            w.writerow(order[rank])


def fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    made = []
    P, m = 4, 8
    # Schedule1F1B is not a runtime schedule: its IR exists only as
    # _get_pipeline_order() (compute-only, None = idle cell).
    one = S.Schedule1F1B(IRStage(0, P, P), m)
    path = os.path.join(outdir, "torch_1f1b_p4_m8_compute_only.csv")
    write_rows(path, one._get_pipeline_order())
    made.append(path)
    loop = lambda v: [IRStage(s, P * v, P) for s in range(0, P * v, P)]  # rank 0's stages
    vee = [IRStage(0, 2 * P, P), IRStage(2 * P - 1, 2 * P, P)]
    runtime = [
        ("interleaved1f1b_p4_v2_m8", S.ScheduleInterleaved1F1B(loop(2), m)),
        ("interleavedzb_p4_v2_m8", S.ScheduleInterleavedZeroBubble(loop(2), m)),
        ("zbv_p4_m8", S.ScheduleZBVZeroBubble(vee, m)),
        ("dualpipev_p4_m8", S.ScheduleDualPipeV(vee, m)),
    ]
    for name, sched in runtime:
        for fmt in ("compute_only", "compute_comms"):
            path = os.path.join(outdir, f"torch_{name}_{fmt}.csv")
            sched._dump_csv(path, format=fmt)
            made.append(path)
    for p in made:
        print("wrote", p)
    return 0


def shape(path):
    """(ranks, stages, microbatches) of a CSV, read with PyTorch's parser."""
    rows = []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            rows.append([S._Action.from_str(c) for c in row])
    stages, mbs = set(), set()
    for row in rows:
        for a in row:
            for part in (a.sub_actions or (a,)) if a is not None else ():
                stages.add(part.stage_index)
                if part.microbatch_index is not None:
                    mbs.add(part.microbatch_index)
    return len(rows), max(stages) + 1, max(mbs) + 1


def check(paths):
    failed = 0
    for path in paths:
        name = os.path.basename(path)
        try:
            P, nstages, m = shape(path)
            sched = S._PipelineScheduleRuntime([IRStage(0, nstages, P)], m)
            sched._load_csv(path, format="compute_comms")
            order = sched.pipeline_order_with_comms
            # _simulate_comms_compute knows F/I/B/W and SEND/RECV/WAIT_SEND
            # only: a pair runs as its halves in order, and the runtime's
            # bookkeeping actions (no cross-rank dependency) are left out.
            skip = {S.REDUCE_GRAD, S.WAIT_REDUCE_GRAD, S.UNSHARD, S.RESHARD}
            flat = {}
            for rank, acts in order.items():
                flat[rank] = []
                for a in acts:
                    for part in a.sub_actions or (a,):
                        if part.computation_type not in skip:
                            flat[rank].append(part)
            sim = S._simulate_comms_compute(flat, lambda s: sched.stage_index_to_group_rank[s], nstages)
            steps = max(len(v) for v in sim.values())
            n_actions = sum(len(v) for v in order.values())
            print(f"OK   {name}: torch {torch.__version__} _load_csv(format=\"compute_comms\") accepted "
                  f"{P} ranks, {nstages} stages, {m} microbatches, {n_actions} actions; "
                  f"_simulate_comms_compute completes in {steps} steps")
        except Exception as e:
            failed += 1
            msg = str(e).strip().splitlines()
            print(f"FAIL {name}: {e.__class__.__name__}: {msg[0] if msg else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "fixtures":
        sys.exit(fixtures(sys.argv[2]))
    if len(sys.argv) >= 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2:]))
    print(__doc__)
    sys.exit(2)
