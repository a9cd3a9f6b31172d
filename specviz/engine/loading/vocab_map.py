"""The map between a target's tokenizer and a draft's that differs: the tokens both spell the same, and the checks
that make drafting across them worth trying (core/crossvocab.py has the maths).

Refused up front: an intersection under MIN_SHARE of the target's vocabulary (a TLI draft could propose almost
nothing), and a tokenizer that does not give back the text it read (SLEM and the draft's realignment move text
between the two, so a normaliser that lowercases or a decoder that drops spaces would change what the draft reads).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from specviz.core.crossvocab import Intersection, intersect
from specviz.errors import IncompatiblePairError

MIN_SHARE = 0.05  # the smallest |I| / |V_t| drafted across
PROBE = "def f(x):\n    return  x + 1  # Größe, naïve café\n\tTabs and   spaces. ÉTÉ 東京 (ok)\n"  # a round trip
SPACE_MARKS = ("\u2581",)  # SentencePiece's space marker: a token spelled ▁the is " the"
DECODE = {"skip_special_tokens": False, "clean_up_tokenization_spaces": False}


@dataclass(frozen=True, eq=False)
class VocabMap:
    """Two tokenizers side by side: the intersection, its index tensors, and the text ↔ ids moves between them."""

    target_tokenizer: PreTrainedTokenizerBase
    draft_tokenizer: PreTrainedTokenizerBase
    intersection: Intersection
    draft_index: torch.Tensor  # (n,) long, on the models' device: I's draft ids
    target_index: torch.Tensor  # (n,) long, on the models' device: I's target ids, same order
    to_draft: torch.Tensor  # (V_t,) long on the device: a target id's draft id, -1 outside I
    draft_texts: tuple[str, ...]  # every draft id's decoded text, for the trace
    notes: tuple[str, ...] = ()  # what was noticed about the tokenizers (byte fallback, a normaliser) that still
    #                              round-trip text

    def target_text(self, ids) -> str:
        """Target ids -> their text, special tokens and spaces as they are."""
        return self.target_tokenizer.decode(list(ids), **DECODE)

    def draft_text(self, ids) -> str:
        """Draft ids -> their text."""
        return self.draft_tokenizer.decode(list(ids), **DECODE)

    def draft_ids(self, text: str) -> list[int]:
        """Text -> the draft's tokens for it (no special tokens added)."""
        return self.draft_tokenizer.encode(text, add_special_tokens=False)

    def target_ids(self, text: str) -> list[int]:
        """Text -> the target's tokens for it (no special tokens added)."""
        return self.target_tokenizer.encode(text, add_special_tokens=False)

    def describe(self) -> dict:
        """What a trace's meta records of the crossing."""
        i = self.intersection
        return {"intersection": i.size, "target_vocab": i.target_vocab, "draft_vocab": i.draft_vocab}


def token_strings(tokenizer: PreTrainedTokenizerBase, n: int) -> list[str]:
    """Each id's text alone; a SentencePiece piece (▁the) spelled with its space, which decoding one id drops."""
    raw = tokenizer.convert_ids_to_tokens(list(range(n)))
    decoded = tokenizer.batch_decode([[i] for i in range(n)], **DECODE)
    return [
        piece.replace(SPACE_MARKS[0], " ") if isinstance(piece, str) and piece.startswith(SPACE_MARKS) else text
        for piece, text in zip(raw, decoded)
    ]


def round_trip_problem(tokenizer: PreTrainedTokenizerBase) -> str | None:
    """Why this tokenizer does not give back the probe text it read (None: it does), naming the cause where it can:
    a normaliser, byte fallback with an unknown token, or a decoder that changes spaces."""
    back = tokenizer.decode(tokenizer.encode(PROBE, add_special_tokens=False), **DECODE)
    if back == PROBE:
        return None
    causes = [f"its normaliser ({name})" for name in normalisers(tokenizer)]
    if byte_fallback(tokenizer):
        causes.append("byte fallback")
    if getattr(tokenizer, "unk_token", None) and tokenizer.unk_token in back:
        causes.append(f"characters it has no token for become {tokenizer.unk_token}")
    where = next((i for i, (a, b) in enumerate(zip(PROBE, back)) if a != b), min(len(PROBE), len(back)))
    seen = f"{PROBE[max(where - 8, 0) : where + 8]!r} came back as {back[max(where - 8, 0) : where + 8]!r}"
    return f"{seen}" + (f" ({', '.join(causes)})" if causes else "")


def normalisers(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    """The names of a fast tokenizer's normalisers (a Sequence listed by its parts)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    norm = getattr(backend, "normalizer", None)
    if norm is None:
        return []
    text = repr(norm)
    if text.startswith("Sequence"):
        parts = [p.split("(")[0].strip(" [") for p in text.split("normalizers=")[-1].split("), ")]
        return [p for p in parts if p]
    return [type(norm).__name__]


def byte_fallback(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer spells unknown characters as byte tokens (<0x0A>): those have no string to match."""
    model = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    return bool(getattr(model, "byte_fallback", False))


def build_vocab_map(
    target_tok: PreTrainedTokenizerBase,
    draft_tok: PreTrainedTokenizerBase,
    target_vocab: int,
    draft_vocab: int,
    device: torch.device,
    target_name: str = "the target",
    draft_name: str = "the draft",
) -> VocabMap:
    """The map between the two tokenizers, refused with the figure when the intersection is under MIN_SHARE of the
    target's vocabulary, or naming the tokenizer that does not round-trip text and why."""
    draft_texts = token_strings(draft_tok, draft_vocab)
    cross = intersect(draft_texts, token_strings(target_tok, target_vocab))
    if cross.share < MIN_SHARE:
        raise IncompatiblePairError(
            f"The draft {draft_name!r} and the target {target_name!r} spell only {cross.size:,} tokens the same way, "
            f"{cross.share:.1%} of the target's {cross.target_vocab:,}: under {MIN_SHARE:.0%}, a draft across "
            "tokenizers could propose almost nothing. Pick a draft whose tokenizer shares more of the target's."
        )
    for tok, name in ((target_tok, target_name), (draft_tok, draft_name)):
        problem = round_trip_problem(tok)
        if problem:
            raise IncompatiblePairError(
                f"The tokenizer of {name!r} does not give back the text it reads: {problem}. Drafting across "
                "tokenizers moves text between them, so both must round-trip it: pick another draft."
            )
    to_draft = torch.full((target_vocab,), -1, dtype=torch.long)
    to_draft[list(cross.target_ids)] = torch.tensor(cross.draft_ids, dtype=torch.long)
    notes = [
        f"{name}: byte fallback (its byte tokens have no spelling to match)"
        for tok, name in ((target_tok, target_name), (draft_tok, draft_name))
        if byte_fallback(tok)
    ]
    return VocabMap(
        target_tokenizer=target_tok,
        draft_tokenizer=draft_tok,
        intersection=cross,
        draft_index=torch.tensor(cross.draft_ids, dtype=torch.long, device=device),
        target_index=torch.tensor(cross.target_ids, dtype=torch.long, device=device),
        to_draft=to_draft.to(device),
        draft_texts=tuple(draft_texts),
        notes=tuple(notes),
    )
