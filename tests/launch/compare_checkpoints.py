#!/usr/bin/env python3
"""Compares two pipewright checkpoint step directories tensor by tensor.

  compare_checkpoints.py DIR_A DIR_B TOLERANCE

Reads every <layer>.safetensors of DIR_A and the same file of DIR_B (the
safetensors layout: an 8-byte little-endian header length, a JSON header,
then the raw tensors) with the standard library only, and prints the worst
relative difference max|a - b| / max|a| over every parameter and every AdamW
state tensor that both layer files hold (F64 or F32). A run with ZeRO-1 keeps
its AdamW state in shard files (<layer>.adamw_shard_<r>_of_<n>.safetensors),
sliced by its own data-parallel size; those are not compared, so two runs of
other layouts compare on their parameters. Exits 1 if a layer file or a
parameter is missing on one side, a shape differs, or the worst difference
exceeds TOLERANCE.
"""
import json
import os
import struct
import sys

FORMATS = {"F64": ("d", 8), "F32": ("f", 4)}


def read(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        code, size = FORMATS[info["dtype"]]
        begin, end = info["data_offsets"]
        count = (end - begin) // size
        out[name] = (info["shape"], struct.unpack("<%d%s" % (count, code), data[begin:end]))
    return out


def main(a_dir, b_dir, tolerance):
    files = sorted(f for f in os.listdir(a_dir) if f.endswith(".safetensors") and ".adamw_shard_" not in f)
    if not files:
        print("no layer files in", a_dir)
        return 1
    worst, where, tensors = 0.0, "", 0
    for f in files:
        b_path = os.path.join(b_dir, f)
        if not os.path.exists(b_path):
            print("missing in", b_dir, ":", f)
            return 1
        a, b = read(os.path.join(a_dir, f)), read(b_path)
        params_a = {n for n in a if ":" not in n}
        params_b = {n for n in b if ":" not in n}
        if params_a != params_b:
            print(f, ": parameters differ:", sorted(params_a ^ params_b))
            return 1
        for name, (shape, values) in a.items():
            if name not in b:
                continue  # AdamW state one run keeps in ZeRO-1 shards
            if shape != b[name][0]:
                print(f, name, ": shape", shape, "vs", b[name][0])
                return 1
            scale = max(max(abs(v) for v in values), 1e-300)
            diff = max(abs(x - y) for x, y in zip(values, b[name][1])) / scale
            tensors += 1
            if diff > worst:
                worst, where = diff, name
    print("worst relative difference %.3e (%s) over %d tensors in %d layer files" % (worst, where, tensors, len(files)))
    return 0 if worst <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
