"""The data stage's decoder: Magpie prompts and the target's greedy answers, one batch kept full (continuous batching).

Each of `batch` slots runs one sample through three phases, one token a step, all slots in one forward pass:
  1. prompt  the target samples a user message at T = 1 after its chat template's user prefix (Magpie), until its
             end-of-turn token or `prompt_tokens`;
  2. header  the template's end of the user turn and the assistant's header are fed (forced tokens);
  3. answer  the target answers greedily until end-of-turn or `answer_tokens`.
A slot that finishes is refilled at once with a new sample, so the batch never waits for its longest row (the waste
of `generate`, which decodes every row until the last one ends, and writes every prompt before answering any).

The KV cache is transformers' DynamicCache, one column per step shared by all slots; a slot's own columns are the
ones its attention mask keeps. A refilled slot gets the user prefix's keys and values (computed once) written into its
last P columns, so a new sample costs no prefill; columns no slot keeps are dropped every `compact_every` steps, so
the cache stays about one sample long. Positions are per slot (RoPE sees each sample from 0).

Randomness: one torch.Generator seeded with `seed` draws every prompt token; the same model, settings and seed give
the same samples in the same order.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

from .answer_store import Sample
from .chat_data import SENTINEL


@dataclass(frozen=True)
class AnswerConfig:
    """How the decoder runs: slots decoded together, the longest prompt and answer, the seed."""

    batch: int
    prompt_tokens: int
    answer_tokens: int
    seed: int
    compact_every: int = 16

    def __post_init__(self):
        from specviz.errors import SettingsError

        if min(self.batch, self.prompt_tokens, self.answer_tokens, self.compact_every) < 1:
            raise SettingsError("batch, prompt tokens, answer tokens and compact_every must each be at least 1")


@dataclass(frozen=True)
class Template:
    """The chat template's ids around a user message: the user prefix (system line included) and the header that
    closes the user turn and opens the assistant's (its first id is the end-of-turn token)."""

    prefix: tuple[int, ...]
    header: tuple[int, ...]

    @property
    def eot(self) -> int:
        return self.header[0]


def template_of(tokenizer) -> Template:
    from specviz.errors import SpecvizError

    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": SENTINEL}], tokenize=False, add_generation_prompt=True
    )
    if SENTINEL not in text:
        raise SpecvizError("the tokenizer's chat template drops the user message; it cannot write prompts.")
    head, tail = text.split(SENTINEL, 1)
    prefix = tokenizer.encode(head, add_special_tokens=False)
    header = tokenizer.encode(tail, add_special_tokens=False)
    if not prefix or not header:
        raise SpecvizError("the chat template has no text before or after the user message.")
    return Template(tuple(prefix), tuple(header))


@dataclass
class _Slot:
    """One sample in flight (mutable: the loop's own bookkeeping, never returned)."""

    position: int  # the position of the token fed next
    body: list[int] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)  # forced header ids still to feed after the next one
    answer: list[int] = field(default_factory=list)
    phase: str = "prompt"


def answer_stream(model, tokenizer, cfg: AnswerConfig) -> Generator[Sample, None, None]:
    """Finished samples, in the order they finish, for as long as the caller takes them (close it to stop; the
    samples still in flight are dropped)."""
    import torch
    from transformers import DynamicCache

    tpl = template_of(tokenizer)
    device = model.device
    gen = torch.Generator(device="cpu").manual_seed(cfg.seed)
    n_prefix = len(tpl.prefix)
    with torch.no_grad():
        cache = DynamicCache()
        x = torch.tensor([tpl.prefix] * cfg.batch, device=device)  # (B, P)
        prefix_logits = model(input_ids=x, cache=cache, use_cache=True).logits[0, -1].float()  # (V,)
        layers: list = list(cache.layers)  # DynamicLayer: keys and values (B, H, T, D)
        prefix_kv = [(layer.keys[:1].clone(), layer.values[:1].clone()) for layer in layers]  # (1, H, P, D)
        mask = torch.ones(cfg.batch, n_prefix, dtype=torch.long, device=device)  # (B, T)
        slots = [_Slot(position=n_prefix) for _ in range(cfg.batch)]
        feed = [_first_body_token(slots[i], prefix_logits, tpl, cfg, gen) for i in range(cfg.batch)]
        step = 0
        while True:
            tokens = torch.tensor(feed, device=device)[:, None]  # (B, 1)
            positions = torch.tensor([s.position for s in slots], device=device)[:, None]  # (B, 1)
            mask = torch.cat([mask, torch.ones(cfg.batch, 1, dtype=mask.dtype, device=device)], dim=1)  # (B, T + 1)
            logits = (
                model(input_ids=tokens, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True)
                .logits[:, -1]
                .float()
            )  # (B, V)
            for s in slots:
                s.position += 1
            feed = _next_tokens(slots, logits, tpl, cfg, gen)
            for i, s in enumerate(slots):
                if s.phase != "done":
                    continue
                yield Sample(
                    tuple(tpl.prefix) + tuple(s.body) + tpl.header,
                    tuple(s.answer),
                    tokenizer.decode(s.body, skip_special_tokens=True).strip(),
                )
                slots[i] = _Slot(position=n_prefix)
                _refill(cache, mask, i, prefix_kv)
                feed[i] = _first_body_token(slots[i], prefix_logits, tpl, cfg, gen)
            step += 1
            if step % cfg.compact_every == 0:
                mask = _compact(cache, mask)


def _first_body_token(slot: _Slot, prefix_logits, tpl: Template, cfg: AnswerConfig, gen) -> int:
    """The prompt's first token, drawn after the prefix (an end-of-turn here would be an empty prompt: drawn again)."""
    import torch

    probs = prefix_logits.softmax(-1)
    for _ in range(100):
        t = int(torch.multinomial(probs, 1, generator=gen))
        if t != tpl.eot:
            slot.body.append(t)
            return t
    raise RuntimeError("the target ends the user turn at once on every draw: it writes no prompts")


def _next_tokens(slots: list[_Slot], logits, tpl: Template, cfg: AnswerConfig, gen) -> list[int]:
    """The token each slot feeds next, from this step's logits; advances each slot's phase (done: its sample ended)."""
    import torch

    rows = [i for i, s in enumerate(slots) if s.phase == "prompt"]
    drawn = dict.fromkeys(rows, 0)
    if rows:  # T = 1 draws for the rows writing their prompt
        picks = torch.multinomial(logits[rows].softmax(-1), 1, generator=gen)[:, 0].tolist()
        drawn = dict(zip(rows, picks))
    greedy = logits.argmax(-1).tolist()  # (B,)
    feed = []
    for i, s in enumerate(slots):
        if s.phase == "prompt":
            t = drawn[i]
            if t == tpl.eot or len(s.body) >= cfg.prompt_tokens:
                s.phase, s.queue = "header", list(tpl.header[1:])
                t = tpl.eot
            else:
                s.body.append(t)
        elif s.phase == "header" and s.queue:
            t = s.queue.pop(0)
        else:  # the header's last id was fed: these logits are the answer's
            s.phase = "answer"
            t = greedy[i]
            s.answer.append(t)
            if t == tpl.eot or len(s.answer) >= cfg.answer_tokens:
                s.phase = "done"
        feed.append(t)
    return feed


def _refill(cache, mask, i: int, prefix_kv) -> None:
    """Slot i starts a new sample: the prefix's keys and values in its last P columns, its older columns masked."""
    n_prefix = prefix_kv[0][0].shape[2]
    width = mask.shape[1]
    for layer, (k, v) in zip(cache.layers, prefix_kv):
        layer.keys[i, :, width - n_prefix :] = k[0]
        layer.values[i, :, width - n_prefix :] = v[0]
    mask[i, : width - n_prefix] = 0
    mask[i, width - n_prefix :] = 1


def _compact(cache, mask):
    """Drop the cache columns no slot keeps; returns the mask without them."""
    live = mask.bool().any(0)  # (T,)
    if bool(live.all()):
        return mask
    keep = live.nonzero()[:, 0]
    for layer in cache.layers:
        layer.keys = layer.keys[:, :, keep]
        layer.values = layer.values[:, :, keep]
    return mask[:, keep]


DECODE_ATTENTION = "specviz_decode"


def decode_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention for one query token a row, written as two grouped matrix products: on this CPU torch's SDPA kernel
    spent 10 to 20 times longer on a (32, 9, 1, 64) query against 300 bfloat16 keys (its flash path suits long
    queries). Longer queries (the prefill) go to SDPA. Shapes: query (B, H, 1, D), key and value (B, G, T, D) with
    H = G * n (grouped-query attention: query heads G*j..G*j+n-1 read key head j), mask (B, 1, 1, T) bool or None."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    batch, heads, q_len, dim = query.shape
    if q_len != 1 or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    groups = key.shape[1]
    q = query.view(batch, groups, heads // groups, dim)  # (B, G, n, D)
    scores = (q @ key.transpose(-1, -2)).float() * (scaling if scaling is not None else dim**-0.5)  # (B, G, n, T)
    if attention_mask is not None:
        mask = attention_mask[:, :, -1:, :]  # (B, 1, 1, T)
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    out = scores.softmax(-1).to(value.dtype) @ value  # (B, G, n, D)
    return out.reshape(batch, 1, heads, dim), None  # (B, 1, H, D), as SDPA's wrapper returns it


def register_decode_attention() -> str:
    """Register decode_attention with transformers (its mask is SDPA's); returns the name to load a model with."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(DECODE_ATTENTION, decode_attention)
    AttentionMaskInterface.register(DECODE_ATTENTION, sdpa_mask)
    return DECODE_ATTENTION
