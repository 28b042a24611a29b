#!/usr/bin/env python3
"""Optional cross-check of the executor's Llama against transformers' Flax
Llama (an implementation written outside this project). Not run by ctest;
neither the project nor CI depends on it.

  python3 -m venv /tmp/hfvenv && . /tmp/hfvenv/bin/activate
  pip install --no-deps numpy jax==0.4.30 jaxlib==0.4.30 ml_dtypes opt_einsum scipy \
      flax==0.8.5 transformers==4.44.2 huggingface_hub==0.24.6 safetensors tokenizers==0.19.1 \
      regex pyyaml packaging tqdm filelock requests urllib3 idna certifi absl-py rich msgpack \
      typing_extensions fsspec
  PW_HF_XCHECK_DIR=/tmp/xcheck build/tests/executor_test --gtest_filter=HfCrossCheck.*
  python3 tests/executor/hf_crosscheck.py /tmp/xcheck/reference.json

Loads the reference's fp64 parameters into FlaxLlamaForCausalLM (float64,
jax x64) and compares the mean token cross-entropy and every gradient. Flax
Llama computes its RoPE table, the RMSNorm variance and the softmax in
float32, so agreement is to about 1e-6 relative, not fp64 round-off.
"""
import json
import sys

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from transformers import FlaxLlamaForCausalLM, LlamaConfig  # noqa: E402


def main(path):
    ref = json.load(open(path))
    c = ref["config"]
    cfg = LlamaConfig(**{k: v for k, v in c.items() if k != "model_type"})
    model = FlaxLlamaForCausalLM(cfg, dtype=jnp.float64, _do_init=True)
    t = {k: np.array(v["values"], dtype=np.float64).reshape(v["shape"]) for k, v in ref["params"].items()}
    g_ref = {k: np.array(v["values"], dtype=np.float64).reshape(v["shape"]) for k, v in ref["grads"].items()}

    # our name -> (flax path, transpose)
    mapping = {"embedding.embed_tokens": (("model", "embed_tokens", "embedding"), False),
               "head.norm.weight": (("model", "norm", "weight"), False),
               "head.lm_head.weight": (("lm_head", "kernel"), True)}
    for i in range(cfg.num_hidden_layers):
        base = ("model", "layers", str(i))
        for norm in ("input_layernorm", "post_attention_layernorm"):
            mapping[f"block.{i}.{norm}.weight"] = (base + (norm, "weight"), False)
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            mapping[f"block.{i}.{proj}.weight"] = (base + ("self_attn", proj, "kernel"), True)
            mapping[f"block.{i}.{proj}.bias"] = (base + ("self_attn", proj, "bias"), False)
        for proj in ("gate_proj", "up_proj", "down_proj"):
            mapping[f"block.{i}.{proj}.weight"] = (base + ("mlp", proj, "kernel"), True)
    assert set(mapping) == set(t), (sorted(set(t) - set(mapping)), sorted(set(mapping) - set(t)))

    params = jax.tree_util.tree_map(lambda x: x, model.params)
    for name, (fpath, transpose) in mapping.items():
        node = params
        for k in fpath[:-1]:
            node = node[k]
        value = t[name].T if transpose else t[name]
        assert node[fpath[-1]].shape == value.shape, (name, node[fpath[-1]].shape, value.shape)
        node[fpath[-1]] = jnp.asarray(value, dtype=jnp.float64)

    rows, seq = ref["rows"], ref["seq"]
    inputs = jnp.asarray(np.array(ref["inputs"]).reshape(rows, seq))
    targets = jnp.asarray(np.array(ref["targets"]).reshape(rows, seq))

    def loss_fn(p):
        logits = model(inputs, params=p).logits.astype(jnp.float64)  # (rows, seq, V)
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    loss, grads = jax.value_and_grad(loss_fn)(params)
    loss = float(loss)
    print(f"loss: ours {ref['loss']:.15f}  flax {loss:.15f}  rel diff {abs(loss - ref['loss']) / abs(loss):.3e}")
    worst = (0.0, "")
    for name, (fpath, transpose) in mapping.items():
        node = grads
        for k in fpath:
            node = node[k]
        g = np.asarray(node).T if transpose else np.asarray(node)
        rel = np.max(np.abs(g - g_ref[name])) / max(np.max(np.abs(g)), 1e-300)
        worst = max(worst, (rel, name))
    print(f"gradients: worst rel diff {worst[0]:.3e} ({worst[1]}) over {len(mapping)} tensors")
    ok = abs(loss - ref["loss"]) / abs(loss) < 1e-5 and worst[0] < 1e-4
    print("AGREE" if ok else "DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
