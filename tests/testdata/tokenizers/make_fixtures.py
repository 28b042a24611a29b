#!/usr/bin/env python3
"""Makes the tokenizer.json fixtures of tests/executor/tokenizer_json_test.cc.

Optional, never run by CI (the fixtures are committed): needs Hugging Face
`tokenizers` (pip install tokenizers; made with 0.23.3) and the Debian
`fortunes` text. For each fixture it writes NAME/tokenizer.json and
NAME.expected.json: {"texts": {name: text}, "ids": {name: [ids]},
"decoded": {name: text}} with the ids of HF's `Tokenizer.encode(text).ids`
(add_special_tokens=True) and HF's `decode(ids)`.

  /tmp/tokvenv/bin/python tests/testdata/tokenizers/make_fixtures.py
"""
import glob
import json
import os

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                  r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")


def corpus():
    files = sorted(f for f in glob.glob("/usr/share/games/fortunes/*")
                   if os.path.isfile(f) and not f.endswith((".dat", ".u8")))
    return [open(f, encoding="utf-8", errors="replace").read() for f in files]


STRESS = ("Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u2014 e\u0301 a\u0308 o\u0302\u0323 (combining) "
          "\u4e2d\u6587\u5b57\u7b26 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud55c\uad6d\uc5b4 "
          "\U0001F600\U0001F469\u200d\U0001F4BB\U0001F1EB\U0001F1F7 \u2764\ufe0f\n"
          "   three spaces,\t\ttabs,\n\n\nnewlines  \n \t \n"
          "digits 1234567890 3.14159 1,000,000 0x1F 12ab34\n"
          "contractions: I'm you're he's we've they'll I'd don't CAN'T It'S\n"
          "def f(x):\n    return {\"a\": [x ** 2, x // 3]}  # comment\n"
          "\tif (a != b && c <= d) { y += 1; }\r\n"
          "\u00a0nbsp \u3000ideographic-space \u2028line-sep end  ")


def real_text():
    return corpus()[3][:3000]


def save(name, tok, texts):
    os.makedirs(os.path.join(HERE, name), exist_ok=True)
    tok.save(os.path.join(HERE, name, "tokenizer.json"), pretty=False)
    ids = {k: tok.encode(v).ids for k, v in texts.items()}
    dec = {k: tok.decode(ids[k]) for k in texts}
    with open(os.path.join(HERE, name + ".expected.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "ids": ids, "decoded": dec}, f, ensure_ascii=False)
        f.write("\n")


def byte_level(pattern_kind):
    tok = Tokenizer(models.BPE(ignore_merges=(pattern_kind == "llama3")))
    if pattern_kind == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>"] if pattern_kind == "gpt2" else ["<|begin_of_text|>", "<|end_of_text|>"]
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    if pattern_kind == "gpt2":
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B:1",
                                          special_tokens=[("<|begin_of_text|>", bos)])])
        # A normal (not special) added token, matched before pre-tokenization.
        tok.add_tokens(["pipewright"])
    return tok


def metaspace(kind):
    """BPE with byte fallback, SentencePiece style: Metaspace pre-tokenizer
    ("metaspace"; "first": prepend_scheme first and the Metaspace decoder), or Llama 2's normalizer Prepend + Replace and no
    pre-tokenizer ("llama2")."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False,
                                  limit_alphabet=120)
    tok.train_from_iterator(corpus(), trainer)
    # The 256 byte tokens <0x00>..<0xFF> in the model's vocabulary after the
    # specials (as Llama 2's), the learnt tokens after them.
    d = json.loads(tok.to_str())
    old = d["model"]["vocab"]
    new = {}
    for t in ["<unk>", "<s>", "</s>"]:
        new[t] = len(new)
    for b in range(256):
        new["<0x%02X>" % b] = len(new)
    for t, _ in sorted(old.items(), key=lambda kv: kv[1]):
        if t not in new:
            new[t] = len(new)
    d["model"]["vocab"] = new
    for a in d["added_tokens"]:
        a["id"] = new[a["content"]]
    if kind == "llama2":
        d["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
        d["pre_tokenizer"] = None
    if kind == "first":
        d["pre_tokenizer"]["prepend_scheme"] = "first"
    tok = Tokenizer.from_str(json.dumps(d))
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    if kind == "first":
        tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def main():
    texts = {"real": real_text(), "stress": STRESS, "empty": "", "special": "<|endoftext|>Hello<|end_of_text|> x"
             " pipewright<s>y</s>"}
    save("gpt2_bpe", byte_level("gpt2"), texts)
    save("llama3_bpe", byte_level("llama3"), texts)
    save("metaspace_bpe", metaspace("metaspace"), texts)
    save("llama2_bpe", metaspace("llama2"), texts)
    save("metaspace_first_bpe", metaspace("first"), texts)


if __name__ == "__main__":
    main()
