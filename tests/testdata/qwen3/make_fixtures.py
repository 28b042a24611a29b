#!/usr/bin/env python3
"""OPTIONAL, not run by ctest or CI: writes the Qwen3 fixtures of
tests/executor/qwen3_cli_test.sh with Hugging Face transformers (an
implementation written outside this project). Neither the project nor CI
depends on Python, torch or transformers; the files it wrote are committed.

  python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers safetensors
  /tmp/hfvenv/bin/python tests/testdata/qwen3/make_fixtures.py tests/testdata/qwen3

Writes, for a tiny random Qwen3 (2 layers, hidden 64, 4 heads, 2 key/value
heads, head_dim 32 != 64 / 4, SwiGLU 96, vocabulary 300, float32):
  tied/, untied/      save_pretrained directories (config.json, model.safetensors);
                      tie_word_embeddings true / false
  tokens.u16          the 65 token ids of one global batch (4 rows of 16 tokens
                      + the last target), little-endian uint16 (--token-dtype uint16)
  expected.json       transformers' mean token cross-entropy of those rows for
                      each directory (float32 forward, the loss accumulated in
                      float64), and the versions used
The weights are drawn wider than HF's init (N(0, 0.1), norm weights
1 + N(0, 0.2)) so that the loss is far from ln(300) and a missing or swapped
q/k norm changes it.
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import Qwen3Config, Qwen3ForCausalLM

ROWS, SEQ = 4, 16


def make(out_dir, tied, tokens):
    torch.manual_seed(1234)
    cfg = Qwen3Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=64,
                      rms_norm_eps=1e-6, tie_word_embeddings=tied, attention_bias=False,
                      use_sliding_window=False, attention_dropout=0.0)
    model = Qwen3ForCausalLM(cfg).to(torch.float32).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.1)
    model.save_pretrained(out_dir, safe_serialization=True)
    # Row r: tokens [r*SEQ, r*SEQ + SEQ] (docs/DATA.md windows, sequential order).
    inputs = torch.stack([torch.tensor(tokens[r * SEQ:r * SEQ + SEQ]) for r in range(ROWS)])
    targets = torch.stack([torch.tensor(tokens[r * SEQ + 1:r * SEQ + SEQ + 1]) for r in range(ROWS)])
    with torch.no_grad():
        logits = model(input_ids=inputs).logits.to(torch.float64)  # (ROWS, SEQ, V)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return float(loss)


def main(root):
    rng = np.random.default_rng(42)
    tokens = rng.integers(0, 300, size=ROWS * SEQ + 1).astype("<u2")
    os.makedirs(root, exist_ok=True)
    tokens.tofile(os.path.join(root, "tokens.u16"))
    expected = {"rows": ROWS, "seq": SEQ, "transformers": transformers.__version__, "torch": torch.__version__}
    for variant, tied in (("tied", True), ("untied", False)):
        expected[variant] = make(os.path.join(root, variant), tied, [int(t) for t in tokens])
        print(f"{variant}: transformers loss {expected[variant]:.9f}")
    with open(os.path.join(root, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
