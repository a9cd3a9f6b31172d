"""A trimmed draft vocabulary: the draft proposes only from the N tokens most frequent in a corpus (FR-Spec).

Most of a small draft's parameters are its LM head (for the bundled draft, 2.1 M of 2.9 M), read in full at every
draft step. Computing logits for N frequent tokens only, and q = 0 for the rest, shrinks that read by V / N. Speculative
sampling stays exact: a token with q = 0 is never proposed, so min(1, p/q) is never evaluated there, and the residual
max(0, p - q) = p keeps all of the target's mass on those tokens (Zhao et al. 2025, "FR-Spec"; EAGLE-3's draft
vocabulary does the same). The cost is α: the draft can no longer propose a rare token the target would choose.

The counts live beside the draft's weights as `token_counts.json`: {"source", "tokens_counted", "recommended",
"counts": [one per token id]}.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from specviz.errors import SettingsError

COUNTS_FILE = "token_counts.json"
MIN_VOCAB = 16  # fewer kept tokens than this cannot say anything useful
# Architectures whose causal-LM forward is exactly lm_head(base_model(...).last_hidden_state), with no logit scaling or
# soft-capping, so a head over a subset of rows gives exactly those rows of the full logits.
PLAIN_HEAD_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "gpt2", "gpt_neox", "phi3", "olmo2"})


@dataclass(frozen=True)
class TokenCounts:
    """How often each token id occurred in a corpus, and the vocabulary size its maker recommends for drafting."""

    counts: np.ndarray  # (V,) int64
    source: str
    recommended: int  # 0 = use the full vocabulary

    def top_ids(self, n: int, vocab_size: int) -> torch.Tensor:
        """(n,) long: the n most frequent token ids below vocab_size (ties broken by id), in ascending id order."""
        counts = self.counts[:vocab_size]
        if not MIN_VOCAB <= n <= len(counts):
            raise SettingsError(
                f"The draft vocabulary must keep from {MIN_VOCAB} to {len(counts)} tokens; got {n}. "
                "Use 0 for the full vocabulary."
            )
        order = np.argsort(-counts, kind="stable")[:n]
        return torch.from_numpy(np.sort(order).astype(np.int64))

    def to_json(self) -> str:
        body = {
            "source": self.source,
            "tokens_counted": int(self.counts.sum()),
            "recommended": self.recommended,
            "counts": self.counts.tolist(),
        }
        return json.dumps(body)


def count_tokens(tokenizer, texts: Iterable[str], vocab_size: int) -> np.ndarray:
    """(vocab_size,) int64: occurrences of each token id over the texts, tokenized as the engine tokenizes prompts."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for text in texts:
        ids = np.asarray(tokenizer.encode(text), dtype=np.int64)
        counts += np.bincount(ids[ids < vocab_size], minlength=vocab_size)
    return counts


def load_counts(model_dir: str | Path | None) -> TokenCounts | None:
    """The token counts shipped beside a local model, or None (hub models and models without counts)."""
    path = Path(model_dir) / COUNTS_FILE if model_dir else None
    if path is None or not path.is_file():
        return None
    try:
        body = json.loads(path.read_text())
        return TokenCounts(np.asarray(body["counts"], dtype=np.int64), str(body["source"]), int(body["recommended"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise SettingsError(f"{path} is not a token-counts file ({exc}); delete it or write it again.") from exc


def check_trimmable(model) -> None:
    """A trimmed head is only exact for models whose logits are a plain linear head over the last hidden state."""
    kind = getattr(model.config, "model_type", "?")
    if kind not in PLAIN_HEAD_TYPES:
        raise SettingsError(
            f"A trimmed draft vocabulary needs a plain LM head; this draft's architecture ({kind}) is not one of "
            f"{', '.join(sorted(PLAIN_HEAD_TYPES))}. Use the full vocabulary (draft vocabulary 0)."
        )
