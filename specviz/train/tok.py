"""Stage `tokenizer`: a byte-level BPE (the `tokenizers` library) trained on the training split, saved so that
`transformers.AutoTokenizer.from_pretrained(dir)` loads it as a fast tokenizer; then every split is encoded into a
flat uint16 array (documents joined by `<|endoftext|>`) that the training loop reads through `np.memmap`.

Byte-level BPE with no normaliser is lossless: decode(encode(text)) == text, indentation and newlines included.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

EOS = "<|endoftext|>"  # end of document; also used as BOS (GPT-2 convention)
PAD = "<|pad|>"
SPECIALS = [EOS, PAD]

ROUND_TRIP_SAMPLES = [
    "def f(x):\n    if x:\n\treturn {'a': [1, 2]}  # tab\n\n\n    return None\n",
    'class A(object):\n    """Doc."""\n\n    def __init__(self, *args, **kw) -> None:\n        pass\n',
    "  leading spaces, trailing spaces   \nÜnïcödé “quotes” — and 景太郎\r\n",
]


def train_tokenizer(train_docs: list[dict], out_dir: Path, *, vocab_size: int, log) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((d["text"] for d in train_docs), trainer=trainer, length=len(train_docs))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS,
        bos_token=EOS,
        pad_token=PAD,
        unk_token=None,
        clean_up_tokenization_spaces=False,
        model_max_length=1 << 30,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out_dir)
    check_round_trip(out_dir, [d["text"] for d in train_docs[:20]], log)
    log(f"tokenizer: {len(fast)} tokens incl. {SPECIALS}, saved to {out_dir}")


def load_tokenizer(path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def check_round_trip(path: Path, texts: list[str], log) -> None:
    tok = load_tokenizer(path)
    assert tok.is_fast and tok.eos_token == EOS, (type(tok), tok.eos_token)
    for text in ROUND_TRIP_SAMPLES + texts:
        ids = tok.encode(text, add_special_tokens=False)
        back = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if back != text:
            raise AssertionError(f"tokenizer does not round-trip: {text[:80]!r} -> {back[:80]!r}")
    log(f"tokenizer round-trip ok on {len(ROUND_TRIP_SAMPLES) + len(texts)} texts")


def encode_split(tok_dir: Path, docs: list[dict], out_path: Path) -> dict:
    """Encode documents, each followed by EOS, into a flat uint16 file. Returns counts per kind."""
    tok = load_tokenizer(tok_dir)
    assert len(tok) < 65536
    eos = tok.convert_tokens_to_ids(EOS)
    enc = tok.backend_tokenizer.encode_batch([d["text"] for d in docs], add_special_tokens=False)
    counts = {"tokens": 0, "code_tokens": 0, "prose_tokens": 0, "bytes": 0}
    arrays = []
    for d, e in zip(docs, enc):
        arrays.append(np.asarray(e.ids + [eos], dtype=np.uint16))
        counts["tokens"] += len(e.ids) + 1
        counts[f"{d['kind']}_tokens"] += len(e.ids) + 1
        counts["bytes"] += len(d["text"].encode())
    flat = np.concatenate(arrays) if arrays else np.zeros(0, np.uint16)
    tmp = out_path.with_suffix(".tmp")
    flat.tofile(tmp)
    tmp.replace(out_path)
    counts["bytes_per_token"] = round(counts["bytes"] / max(1, counts["tokens"]), 3)
    return counts


def build_tokenizer_stage(corpus_dir: Path, work_dir: Path, *, vocab_size: int, log) -> dict:
    from .corpus import read_jsonl

    train = read_jsonl(corpus_dir / "train.jsonl")
    tok_dir = work_dir / "tokenizer"
    train_tokenizer(train, tok_dir, vocab_size=vocab_size, log=log)
    data_dir = work_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    info = {"vocab_size": vocab_size, "splits": {}}
    for name in ("train", "val_code", "val_prose"):
        docs = train if name == "train" else read_jsonl(corpus_dir / f"{name}.jsonl")
        info["splits"][name] = encode_split(tok_dir, docs, data_dir / f"{name}.bin")
        log(f"tokens {name}: {info['splits'][name]}")
    (data_dir / "info.json").write_text(json.dumps(info, indent=2))
    return info


def load_tokens(work_dir: Path, split: str) -> np.ndarray:
    return np.memmap(work_dir / "data" / f"{split}.bin", dtype=np.uint16, mode="r")
