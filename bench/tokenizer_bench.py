#!/usr/bin/env python3
"""HF tokenizers' throughput on the same file as tokenizer_bench (optional:
needs `pip install tokenizers`). One thread (RAYON_NUM_THREADS=1, set here
before the import): `encode(text)` of the whole file, and `encode_batch` of
its lines (splitlines(True)); the best of REPEATS, MB/s of text bytes.
  tokenizer_bench.py TOKENIZER.json TEXT [REPEATS]"""
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
from tokenizers import Tokenizer  # noqa: E402

tok = Tokenizer.from_file(sys.argv[1])
text = open(sys.argv[2], encoding="utf-8").read()
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
mb = len(text.encode("utf-8")) / 1e6
lines = text.splitlines(True)
best_whole = best_batch = 1e30
for _ in range(repeats):
    t0 = time.perf_counter()
    whole = len(tok.encode(text).ids)
    best_whole = min(best_whole, time.perf_counter() - t0)
    t0 = time.perf_counter()
    batch = sum(len(e.ids) for e in tok.encode_batch(lines))
    best_batch = min(best_batch, time.perf_counter() - t0)
print("HF tokenizers: %.2f MB, encode %d tokens %.3f s %.2f MB/s; encode_batch(lines) %d tokens %.3f s %.2f MB/s"
      % (mb, whole, best_whole, mb / best_whole, batch, best_batch, mb / best_batch))
