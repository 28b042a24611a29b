#!/usr/bin/env python3
"""First-step loss of `pipewright run --init-from` against Hugging Face
transformers (an implementation written outside this project). Optional: not
run by ctest or CI; nothing in the project depends on transformers.

  python3 -m venv /tmp/hfvenv && . /tmp/hfvenv/bin/activate
  pip install --no-deps numpy jax==0.4.30 jaxlib==0.4.30 ml_dtypes opt_einsum scipy \
      flax==0.8.5 transformers==4.44.2 huggingface_hub==0.24.6 safetensors tokenizers==0.19.1 \
      regex pyyaml packaging tqdm filelock requests urllib3 idna certifi absl-py rich msgpack \
      typing_extensions fsspec
  python3 bench/hf_loss_check.py build [workdir]

What it does (fp32 throughout):
 1. transformers builds a small LlamaForCausalLM (GQA: 4 heads, 2 kv heads;
    untied head) with its own random init (the Flax class: no PyTorch wheel
    needed) and the config is written by LlamaConfig.save_pretrained.
 2. The weights are written as model.safetensors in the PyTorch layout and
    names that LlamaForCausalLM.save_pretrained writes
    (model.layers.N.self_attn.q_proj.weight = the Flax kernel transposed, ...).
    transformers itself then loads that directory
    (FlaxLlamaForCausalLM.from_pretrained(dir, from_pt=True)) and the script
    asserts every parameter comes back bit-identical: the directory is one
    transformers reads as this model.
 3. Random token ids go to an llm.c token file (uint16, 256 x int32 header).
 4. `pipewright plan` (P=2, 1F1B, m=2 microbatches of 2 rows, T=16) and
    `mpirun -np 2 pipewright run --init-from DIR --data tokens.bin
    --data-order sequential --lr 0 --steps 1`.
 5. transformers' loss on the same rows (docs/DATA.md: sequential order, row
    r of step 0 = tokens [r*T, r*T+T), targets shifted by one): the mean token
    cross-entropy of the model loaded in step 2. Both are printed with the
    relative difference; the check passes at <= 1e-4.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from flax.traverse_util import flatten_dict, unflatten_dict
from safetensors.numpy import save_file
from transformers import FlaxLlamaForCausalLM, LlamaConfig

T, ROWS_PER_MB, M, P = 16, 2, 2, 2


def to_pt_state_dict(params, cfg):
    """Flax Llama params -> the PyTorch LlamaForCausalLM state dict (numpy)."""
    out = {}
    for path, value in flatten_dict(params).items():
        value = np.asarray(value, dtype=np.float32)
        *mods, leaf = path
        name = ".".join(mods)
        if leaf == "kernel":
            out[name + ".weight"] = np.ascontiguousarray(value.T)
        elif leaf == "embedding":
            out[name + ".weight"] = value
        else:  # RMSNorm "weight"
            out[name + "." + leaf] = value
    return out


def main(build, work):
    pw = os.path.join(build, "launch", "pipewright")
    cfg = LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      attention_bias=False, mlp_bias=False)
    model = FlaxLlamaForCausalLM(cfg, seed=1234, dtype=jnp.float32)
    # transformers initialises the RMSNorm weights to 1; perturb them so that
    # the check also covers the norms' weights and names.
    flat = flatten_dict(model.params)
    rng = np.random.default_rng(3)
    for k, v in flat.items():
        if k[-1] == "weight":
            flat[k] = jnp.asarray(1.0 + 0.1 * rng.standard_normal(v.shape), dtype=jnp.float32)
    model.params = unflatten_dict(flat)
    hf = os.path.join(work, "hf-llama")
    os.makedirs(hf, exist_ok=True)
    cfg.save_pretrained(hf)
    state = to_pt_state_dict(model.params, cfg)
    save_file(state, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {hf}: {len(state)} tensors, {sum(v.size for v in state.values())} parameters")

    # transformers reads the directory back: every parameter bit-identical.
    loaded = FlaxLlamaForCausalLM.from_pretrained(hf, from_pt=True, dtype=jnp.float32)
    a, b = flatten_dict(model.params), flatten_dict(loaded.params)
    assert set(a) == set(b), (set(a) ^ set(b))
    for k in a:
        assert np.array_equal(np.asarray(a[k]), np.asarray(b[k])), k
    print("transformers from_pretrained(from_pt=True) reads back every parameter bit-identical")

    rows = M * ROWS_PER_MB
    rng = np.random.default_rng(7)
    tokens = rng.integers(0, cfg.vocab_size, size=rows * T + 1 + 37).astype(np.uint16)
    header = np.zeros(256, dtype=np.int32)
    header[:3] = [20240520, 1, tokens.size]
    data = os.path.join(work, "tokens.bin")
    with open(data, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.tobytes())

    plan = os.path.join(work, "plan.json")
    subprocess.run([pw, "plan", "--model-config", os.path.join(hf, "config.json"), "--device", "cpu-core",
                    "--pp", str(P), "--num-microbatches", str(M), "--micro-batch-size", str(ROWS_PER_MB),
                    "--seq-length", str(T), "--dtype", "fp32", "--recompute-granularity", "none",
                    "--schedule", "1f1b", "--no-min-pp", "-o", plan], check=True, stdout=subprocess.DEVNULL)
    mpi = ["mpirun", "-np", str(P), "--oversubscribe", "-x", "OMP_NUM_THREADS=1"]
    if os.getuid() == 0:
        mpi.append("--allow-run-as-root")
    run = subprocess.run(mpi + [pw, "run", "--plan", plan, "--data", data, "--data-order", "sequential",
                                "--init-from", hf, "--lr", "0", "--steps", "1", "--warmup-steps", "0"],
                         check=True, capture_output=True, text=True)
    print(run.stdout.strip())
    ours = float(re.search(r"^step 1/1 \| loss ([0-9.]+)", run.stdout, re.M).group(1))

    inputs = np.stack([tokens[r * T:r * T + T] for r in range(rows)]).astype(np.int32)
    targets = np.stack([tokens[r * T + 1:r * T + T + 1] for r in range(rows)]).astype(np.int32)
    logits = loaded(jnp.asarray(inputs)).logits.astype(jnp.float32)  # (rows, T, V)
    logp = jax.nn.log_softmax(logits, axis=-1)
    theirs = float(-jnp.mean(jnp.take_along_axis(logp, jnp.asarray(targets)[..., None], axis=-1)))
    rel = abs(ours - theirs) / abs(theirs)
    print(f"first-step loss: pipewright {ours:.4f} (printed to 4 decimals)  transformers {theirs:.7f}  "
          f"rel diff {rel:.2e} (rounding of the printed value alone: <= {5e-5 / theirs:.1e})")
    ok = rel <= 1e-4
    print("PASS" if ok else "FAIL: rel diff > 1e-4")
    return 0 if ok else 1


if __name__ == "__main__":
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="pw-hf-loss-")
    rc = main(build, work)
    if len(sys.argv) <= 2:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(rc)
