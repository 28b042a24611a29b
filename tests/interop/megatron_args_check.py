"""Megatron-LM's own argument parser and checks read `launch-config --for megatron` output.

Usage: megatron_args_check.py PLAN.json ARGS. Needs a Megatron-LM source
checkout on PYTHONPATH (megatron/training is not in the megatron-core wheel)
and torch. With WORLD_SIZE = pp_size x dp_size, runs
megatron.training.arguments.parse_args (unknown flags refused), validate_args
and core_transformer_config_from_args (megatron-core's TransformerConfig,
which parses and validates a layout or the first/last-stage layers), then
compares the data-parallel size, virtual stages and batch sizes Megatron
derived with the plan. Prints "OK ARGS" or "FAIL ARGS: ..."; exits 1 on FAIL.
"""
import contextlib
import io
import json
import os
import sys
import typing

if not hasattr(typing, "override"):  # Megatron-LM imports typing.override (Python >= 3.12)
    typing.override = lambda f: f


def main():
    plan = json.load(open(sys.argv[1]))
    path = sys.argv[2]
    os.environ["WORLD_SIZE"] = str(plan["pp_size"] * plan["dp_size"] * plan.get("tp_size", 1))
    os.environ.setdefault("RANK", "0")
    sys.argv = ["pretrain_gpt.py"] + open(path).read().split()
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log):
            from megatron.training.arguments import core_transformer_config_from_args, parse_args, validate_args
            a = parse_args(ignore_unknown_args=False)
            validate_args(a)
            core_transformer_config_from_args(a)
    except (SystemExit, AssertionError, ValueError) as e:
        print(f"FAIL {path}: Megatron-LM refused it: {type(e).__name__}: {e}")
        sys.exit(1)
    except RuntimeError as e:
        # validate_args asks the GPU's architecture when tensor_model_parallel_size > 1.
        if "NVIDIA driver" not in str(e) and "CUDA" not in str(e):
            raise
        print(f"OK {path} (parse_args only: Megatron-LM's validate_args needs a GPU for tensor parallelism)")
        return
    v = plan["num_stages"] // plan["pp_size"]
    m = plan["num_microbatches"]
    want = {
        "data_parallel_size": (a.data_parallel_size, plan["dp_size"]),
        "tensor_model_parallel_size": (a.tensor_model_parallel_size, plan.get("tp_size", 1)),
        "sequence_parallel": (a.sequence_parallel, plan.get("sequence_parallel", False)),
        "virtual_pipeline_model_parallel_size": (a.virtual_pipeline_model_parallel_size, None if v == 1 else v),
        "microbatches": (a.global_batch_size // (a.micro_batch_size * a.data_parallel_size), m),
    }
    for name, (got, exp) in want.items():
        if got != exp:
            print(f"FAIL {path}: {name}: Megatron-LM derived {got}, the plan says {exp}")
            sys.exit(1)
    print(f"OK {path}")


if __name__ == "__main__":
    main()
