"""Medusa heads: K independent heads that each guess one token further ahead from the target's last feature.

Medusa (Cai et al. 2024; FasterDecoding/Medusa `medusa/model/medusa_model.py`, vLLM `model_executor/models/medusa.py`):

    h_t                                      the target's last hidden state after its final norm (what vLLM feeds:
                                             the row whose LM-head logits produced x_{t+1}, the token just committed)
    b_i = h_t + SiLU(W_i h_t + c_i)          head i's residual block (num_hidden_layers of them, with bias)
    q_i = softmax(lm_head_i(b_i))            a guess at x_{t+2+i}, i = 0..K-1, independent of the other heads

The target's own LM head gave x_{t+1}; head 0 guesses the token after it. No head reads a drafted token, so the K
drafts come from one feature in one pass (no draft cache, nothing to roll back).

LM heads: each head has its own (`lm_heads.{i}.weight`, V x H), or with `original_lm_head: true` one LM head serves
every head (vLLM loads it from `lm_heads.0.weight`). The bundled heads use the second with a copy of the target's own
frozen LM head: four of their own would be 16 MB in bfloat16 for this 8k vocabulary, one is 4 MB. vLLM's truncated
vocabulary (`truncated_vocab_size` + a `token_map` tensor) is not supported here and is refused.

Files (vLLM's Medusa format, loaded there with {"method": "medusa", "model": DIR, "num_speculative_tokens": K}):
`config.json` = {"architectures": ["MedusaModel"], "model_type": "medusa", hidden_size, vocab_size, num_heads,
num_hidden_layers, "medusa_fc_bias": true, original_lm_head}; `model.safetensors` = `blocks.{h}.layers.{j}.{weight,
bias}` and `lm_heads.{h}.weight`. vLLM builds `num_speculative_tokens` heads whatever the file holds (K heads of
fewer are the first K; more would be left uninitialised), and it drops unexpected weights without a word, so loading
here refuses any stray or missing one. No key may hold both "num" and "heads" but num_heads: vLLM's MedusaConfig
renames every such key to num_heads (a copied `num_attention_heads` would overwrite it).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from transformers import PreTrainedModel

from specviz.engine.heads.eagle import (
    WEIGHTS,
    check_fits,
    check_weight_names,
    place_head,
    read_head_config,
    read_weights,
)
from specviz.errors import ModelLoadError

ARCHITECTURE = "MedusaModel"
NAME = "Medusa head"


class ResidualBlock(nn.Module):
    """x + SiLU(W x + b), num_layers times (vLLM's ResidualBlock; Medusa's ResBlock)."""

    def __init__(self, width: int, num_layers: int = 1):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width, bias=True) for _ in range(num_layers)])
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + self.act(layer(x))
        return x


class MedusaHeads(nn.Module):
    """num_heads residual blocks over one feature, each followed by its LM head (or one shared LM head)."""

    def __init__(self, width: int, vocab_size: int, num_heads: int, num_layers: int = 1, shared_lm_head: bool = True):
        super().__init__()
        self.width, self.vocab_size, self.num_heads = width, vocab_size, num_heads
        self.num_layers, self.shared_lm_head = num_layers, shared_lm_head
        self.blocks = nn.ModuleList([ResidualBlock(width, num_layers) for _ in range(num_heads)])
        n_lm = 1 if shared_lm_head else num_heads
        self.lm_heads = nn.ModuleList([nn.Linear(width, vocab_size, bias=False) for _ in range(n_lm)])

    def lm_head(self, i: int) -> nn.Linear:
        return self.lm_heads[0 if self.shared_lm_head else i]

    def forward(self, features: torch.Tensor, k: int | None = None) -> torch.Tensor:
        """features (..., H) h_t -> (k, ..., V) logits of heads 0..k-1 (k = all heads when None): head i's row
        guesses x_{t+2+i}."""
        k = self.num_heads if k is None else k
        return torch.stack([self.lm_head(i)(self.blocks[i](features)) for i in range(k)])

    def config(self, dtype: torch.dtype = torch.bfloat16) -> dict:
        """vLLM's MedusaConfig keys (nothing else that holds "num" and "heads": see the module's docstring)."""
        return {
            "architectures": [ARCHITECTURE],
            "model_type": "medusa",
            "hidden_size": self.width,
            "vocab_size": self.vocab_size,
            "num_heads": self.num_heads,
            "num_hidden_layers": self.num_layers,
            "medusa_fc_bias": True,
            "original_lm_head": self.shared_lm_head,
            "dtype": str(dtype).removeprefix("torch."),
        }

    def expected_weights(self) -> tuple[str, ...]:
        return tuple(self.state_dict())


def new_medusa(target: PreTrainedModel, num_heads: int = 4, num_layers: int = 1) -> MedusaHeads:
    """Fresh heads for this target, as Medusa starts them: W = 0 and b = 0 (each block is the identity, so every head
    first guesses what the target's next-token head does), and the one LM head a copy of the target's."""
    config = target.config.get_text_config()
    heads = MedusaHeads(config.hidden_size, config.vocab_size, num_heads, num_layers, shared_lm_head=True)
    with torch.no_grad():
        for block in heads.blocks:
            for layer in block.layers:
                layer.weight.zero_()
                layer.bias.zero_()
        heads.lm_heads[0].weight.copy_(target.get_output_embeddings().weight[: config.vocab_size])
    return heads.to(device=target.device, dtype=target.dtype)


def save_medusa(heads: MedusaHeads, directory: str | Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """Write the heads in vLLM's Medusa format: config.json + model.safetensors."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(heads.config(dtype), indent=2, sort_keys=True) + "\n")
    weights = {name: t.detach().to("cpu", dtype).contiguous() for name, t in heads.state_dict().items()}
    save_file(weights, str(out / WEIGHTS), metadata={"format": "pt"})
    return out


def _saved_config(path: Path) -> dict | None:
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_medusa_head(directory: str | Path) -> bool:
    """Whether a directory holds Medusa heads (its config names MedusaModel, or model_type medusa)."""
    path = Path(directory)
    saved = _saved_config(path) if (path / WEIGHTS).is_file() else None
    if not isinstance(saved, dict):
        return False
    return ARCHITECTURE in (saved.get("architectures") or ()) or saved.get("model_type") == "medusa"


def load_medusa(directory: str | Path, target: PreTrainedModel, target_name: str = "the target") -> MedusaHeads:
    """Load Medusa heads for `target`, on its device and dtype; refuse heads of another width or vocabulary, a
    truncated vocabulary, and missing or unexpected weights (which vLLM would miss or drop without a word)."""
    path = Path(directory).expanduser()
    saved = read_head_config(
        path, "a Medusa head directory", f"blocks.* and lm_heads.*; the config names architectures [{ARCHITECTURE!r}]"
    )
    check_fits(path, NAME, saved, target, target_name)
    width, vocab = int(saved["hidden_size"]), int(saved["vocab_size"])
    try:
        num_heads = int(saved.get("num_heads", 0))
        num_layers = int(saved.get("num_hidden_layers", 1))
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(f"The head's config.json in {str(path)!r} is unreadable: {exc}") from None
    if num_heads < 1 or num_layers < 1:
        raise ModelLoadError(
            f"The Medusa config in {str(path)!r} gives num_heads {num_heads} and num_hidden_layers {num_layers}: "
            "both must be at least 1."
        )
    truncated = saved.get("truncated_vocab_size")
    if truncated not in (None, vocab):
        raise ModelLoadError(
            f"The Medusa heads in {str(path)!r} use a truncated vocabulary of {truncated} tokens (vLLM's token_map); "
            f"specviz runs Medusa heads over the whole vocabulary of {vocab} only."
        )
    if saved.get("medusa_fc_bias") is not True:
        raise ModelLoadError(
            f"The Medusa config in {str(path)!r} does not set medusa_fc_bias: true; without it vLLM builds blocks "
            "without bias and drops the saved biases silently."
        )
    heads = MedusaHeads(width, vocab, num_heads, num_layers, shared_lm_head=bool(saved.get("original_lm_head")))
    weights = read_weights(path)
    check_weight_names(path, NAME, "Medusa's", weights, heads.expected_weights())
    return place_head(heads, weights, path, NAME, target, target_name)
