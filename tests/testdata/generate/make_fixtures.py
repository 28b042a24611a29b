#!/usr/bin/env python3
"""OPTIONAL, not run by ctest or CI: writes the fixtures of
tests/executor/generate_cli_test.sh with Hugging Face transformers (an
implementation written outside this project). Neither the project nor CI
depends on Python, torch or transformers; the files it wrote are committed.

  python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers safetensors tokenizers
  /tmp/hfvenv/bin/python tests/testdata/generate/make_fixtures.py tests/testdata/generate

Writes three tiny random float32 models, each a save_pretrained directory
(config.json, generation_config.json, model.safetensors) with the
tokenizer.json of tests/testdata/tokenizers it uses copied beside them:
  llama/  LlamaForCausalLM: 2 layers, hidden 32, 4 heads, 2 key/value heads
          (GQA), SwiGLU 64, tied head, vocabulary 1001; llama3_bpe tokenizer
          (BOS template, <|end_of_text|> = 1 as eos_token_id)
  qwen3/  Qwen3ForCausalLM: the same sizes, head_dim 16 (!= 32 / 4), untied
          head, per-head q/k RMSNorm; llama3_bpe tokenizer
  gpt2/   GPT2LMHeadModel: 2 layers, n_embd 32, 4 heads, n_positions 256,
          activation_function "gelu" (exact erf GELU, as pipewright's GPT-2
          block), tied head, vocabulary 1000; gpt2_bpe tokenizer
          (<|endoftext|> = 0 as eos_token_id)
and expected.json: per model the prompt, its ids (tokenizers'
`Tokenizer.encode(prompt).ids`), and the new token ids of
`model.generate(input_ids, do_sample=False, max_new_tokens=N)` (greedy,
float32, KV cache); `stop_id` / `stop_ids`: a token id the greedy run emits
mid-way and the ids of the same greedy generation with that id as
eos_token_id (it stops after emitting it); `min_margin`: the smallest gap
between the largest and second-largest logit along the greedy path (far above
float32 rounding, so the ids cannot flip between implementations); `seed`:
the first torch seed from 100 whose greedy path has no eos_token_id and a
margin above 1e-3; and the
versions used. `warpers`: logits vectors (64 float32 values) and, for
several (temperature, top_k, top_p) each, the ids transformers' warpers keep
(TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper in the order
GenerationMixin applies them; tests/executor/logits_test.cc). Weights are drawn wider than HF's init (N(0, 0.2), norm
weights 1 + N(0, 0.2)) so that attention and the prompt matter.
"""
import json
import os
import shutil
import sys

import tokenizers
import torch
import transformers
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZERS = os.path.join(HERE, "..", "tokenizers")
PROMPT = ("The pipeline schedule keeps every stage busy: while one microbatch runs forward, "
          "another runs backward, and the bubble shrinks as the microbatches grow.")
NEW_TOKENS = 40


def build(kind, seed):
    torch.manual_seed(seed)
    if kind == "llama":
        cfg = LlamaConfig(vocab_size=1001, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                          rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=0, eos_token_id=1,
                          attention_bias=False, mlp_bias=False)
        model, tok = LlamaForCausalLM(cfg), "llama3_bpe"
    elif kind == "qwen3":
        cfg = Qwen3Config(vocab_size=1001, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                          rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=0, eos_token_id=1,
                          attention_bias=False, use_sliding_window=False, attention_dropout=0.0)
        model, tok = Qwen3ForCausalLM(cfg), "llama3_bpe"
    else:
        cfg = GPT2Config(vocab_size=1000, n_embd=32, n_layer=2, n_head=4, n_positions=256,
                         activation_function="gelu", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
        model, tok = GPT2LMHeadModel(cfg), "gpt2_bpe"
    model = model.to(torch.float32).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or ".ln_" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.normal_(0.0, 0.02)
            else:
                p.normal_(0.0, 0.2)
    return model, tok


def greedy(model, ids, eos):
    inp = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(inp, attention_mask=torch.ones_like(inp), do_sample=False, max_new_tokens=NEW_TOKENS,
                             eos_token_id=eos, pad_token_id=eos if eos is not None else 0,
                             output_scores=True, return_dict_in_generate=True)
    new = out.sequences[0, len(ids):].tolist()
    margins = []
    for s in out.scores:
        top = torch.topk(s[0].double(), 2).values
        margins.append(float(top[0] - top[1]))
    return new, min(margins)


def warpers():
    """Kept ids of transformers' warpers on random logits, in generate's order."""
    g = torch.Generator().manual_seed(7)
    vectors = []
    for i in range(4):
        logits = (torch.randn(64, generator=g) * (1.0 + i)).to(torch.float32)
        if i == 3:
            logits[5] = logits[9] = logits.max() + 0.5  # a tie at the top
        cases = []
        for temperature, top_k, top_p in ((1.0, 0, 0.9), (0.7, 5, 1.0), (1.5, 10, 0.5), (1.0, 0, 0.3), (0.5, 3, 0.95),
                                          (2.0, 64, 0.8), (1.0, 1, 1.0), (1.0, 0, 0.0)):
            scores = logits.clone()[None, :]
            procs = [TemperatureLogitsWarper(temperature)]
            if top_k:
                procs.append(TopKLogitsWarper(top_k=top_k))
            if top_p < 1.0:
                procs.append(TopPLogitsWarper(top_p=top_p))
            for proc in procs:
                scores = proc(None, scores)
            kept = [j for j in range(64) if scores[0, j] != -float("inf")]
            cases.append({"temperature": temperature, "top_k": top_k, "top_p": top_p, "kept": kept})
        vectors.append({"logits": [float(x) for x in logits], "cases": cases})
    return vectors


def main(root):
    expected = {"transformers": transformers.__version__, "torch": torch.__version__,
                "tokenizers": tokenizers.__version__, "max_new_tokens": NEW_TOKENS}
    for kind in ("llama", "qwen3", "gpt2"):
        # The first seed whose greedy path has no eos_token_id and a clear
        # margin (random tiny models do emit their eos id now and then).
        for seed in range(100, 200):
            model, tok_name = build(kind, seed)
            tok = tokenizers.Tokenizer.from_file(os.path.join(TOKENIZERS, tok_name, "tokenizer.json"))
            ids = tok.encode(PROMPT).ids
            new, margin = greedy(model, ids, None)
            if model.config.eos_token_id not in new and margin > 1e-3:
                break
        out_dir = os.path.join(root, kind)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        model.save_pretrained(out_dir, safe_serialization=True)
        shutil.copy(os.path.join(TOKENIZERS, tok_name, "tokenizer.json"), os.path.join(out_dir, "tokenizer.json"))
        stop_id = new[NEW_TOKENS // 2]
        stop_new, _ = greedy(model, ids, stop_id)
        assert stop_new[-1] == stop_id and len(stop_new) <= NEW_TOKENS // 2 + 1
        expected[kind] = {"tokenizer": tok_name, "prompt": PROMPT, "prompt_ids": ids, "new_ids": new,
                          "decoded": tok.decode(ids + new), "stop_id": stop_id, "stop_ids": stop_new,
                          "min_margin": margin, "seed": seed}
        print(f"{kind}: prompt {len(ids)} ids, new {new[:8]}..., stop at {stop_id} after {len(stop_new)}, "
              f"min margin {margin:.4f}")
    expected["warpers"] = warpers()
    with open(os.path.join(root, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)
