"""The speculative loop and the plain baseline, both yielding `Round`s from real forward passes.

Each round: 1. the drafter proposes k tokens, 2. one target pass scores them all, 3. verify accepts a prefix and draws
the correction or bonus token, 4. both KV caches roll back to the committed prefix. Plain decoding is the same loop
with k = 0, so the two are measured on equal terms. The prompt is read once; each round brings its numbers to the host
in one transfer at step 3 (on a GPU the draft's timing adds one synchronize after step 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import torch

from specviz import __version__, methods
from specviz.core.sampling import logits_to_probs, one_hot, uniforms
from specviz.core.schedule import CONSTANT, ScheduleState
from specviz.core.settings import FORWARD_HF, FORWARD_LEAN, MAX_K, RunSettings, check_prompt
from specviz.core.suffix_tree import SuffixMemory
from specviz.core.trace import (
    ACCEPTED,
    AFTER_STOP,
    BONUS,
    CORRECTION,
    REJECTED,
    TARGET,
    TOP_N,
    UNREACHED,
    ExtraToken,
    Position,
    Round,
    TokenProb,
    Totals,
    Trace,
)
from specviz.core.verify import BLOCK, TOKEN, Verdict, overlap, tree_depths, verify, verify_block
from specviz.engine.cancel import checkpoint
from specviz.engine.forward.kv import CachedModel
from specviz.engine.forward.lean import chosen_forward
from specviz.engine.heads.lean_heads import lean_step
from specviz.engine.loading.models import ModelPair, recorded_name, synchronize
from specviz.engine.proposers import Proposal, Proposer, RunContext, ancestor_matrix, empty_chain, proposer_class
from specviz.engine.tree import judge_tree
from specviz.errors import SettingsError


def generate(pair: ModelPair, prompt: str, settings: RunSettings, memory: SuffixMemory | None = None) -> Trace:
    """Run speculative (or plain) decoding on a prompt and return the full trace. memory: what the suffix method
    remembers of earlier runs (the caller's, per session or measurement; None: a fresh one)."""
    prompt_ids = encode_prompt(pair, prompt)
    start = time.perf_counter()
    rounds = tuple(decode_rounds(pair, prompt_ids, settings, memory=memory))
    return build_trace(pair, prompt, prompt_ids, settings, rounds, time.perf_counter() - start)


def encode_prompt(pair: ModelPair, prompt: str) -> list[int]:
    """The prompt's token ids; a prompt that is not text (a lone surrogate) or makes no tokens is refused, and so is a
    message wrapped in the chat template that holds one of the template's control tokens (check_message)."""
    try:
        check_prompt(prompt).encode("utf-8")
    except UnicodeEncodeError as exc:  # e.g. JSON's "\ud800": a str, but no tokenizer takes it
        raise SettingsError(
            f"The prompt holds {prompt[exc.start]!r} at character {exc.start}, a lone surrogate that is not text: "
            "remove it."
        ) from None
    message = wrapped_message(pair, prompt)
    if message is not None:
        check_message(pair, message)
    ids = pair.tokenizer.encode(prompt)
    if not ids:
        raise SettingsError("The prompt produced no tokens; type some ordinary text.")
    return ids


def chat_wrapped(pair: ModelPair, prompt: str, refuse: bool = True) -> str:
    """The prompt as the target's chat template wraps a user's message, ready for the assistant's answer: the text
    an instruct model is run on (its template tokens, such as <|im_start|>, stay in the prompt and its trace). A prompt
    that is wrapped already (a shared link's, a trace's: the template's opening, one message, its closing) is returned
    as it is. A message that holds a control token is refused (check_message); refuse=False wraps it all the same, for
    a caller whose run then refuses it (encode_prompt), with the same words, where a run's errors are shown."""
    parts = template_parts(pair)
    if parts is None:
        raise SettingsError(
            f"The target {recorded_name(pair.target_name)} has no chat template, so a prompt cannot be wrapped as a "
            "user's message: send it as it is (raw)."
        )
    if wrapped_message(pair, prompt) is not None:
        return prompt
    if refuse:
        check_message(pair, prompt)
    return pair.tokenizer.apply_chat_template(
        [{"role": "user", "content": check_prompt(prompt)}], tokenize=False, add_generation_prompt=True
    )


_MARK = "\u2063specviz-message\u2063"  # stands for the user's message while the template's parts are found


def template_parts(pair: ModelPair) -> tuple[str, str] | None:
    """The chat template's text before and after a user's message (None for a target without a template)."""
    tokenizer = pair.tokenizer
    if not getattr(tokenizer, "chat_template", None):
        return None
    wrapped = tokenizer.apply_chat_template(
        [{"role": "user", "content": _MARK}], tokenize=False, add_generation_prompt=True
    )
    opening, closing = wrapped.split(_MARK)
    return opening, closing


def wrapped_message(pair: ModelPair, prompt: str) -> str | None:
    """The user's message of a prompt that is the chat template's opening, a message and its closing; None for any
    other prompt (raw text, or a target without a template)."""
    parts = template_parts(pair) if isinstance(prompt, str) else None
    if parts is None:
        return None
    opening, closing = parts
    if len(prompt) < len(opening) + len(closing) or not (prompt.startswith(opening) and prompt.endswith(closing)):
        return None
    return prompt[len(opening) : len(prompt) - len(closing)]


def control_tokens_in(pair: ModelPair, text: str) -> list[str]:
    """The tokenizer's added tokens (<|im_start|>, <|im_end|>, <|endoftext|>, ...) that text holds, as the tokenizer
    would read them: each one a single control token, not the characters it is spelt with."""
    added = getattr(pair.tokenizer, "added_tokens_encoder", {}) or {}
    return sorted((token for token in added if token and token in text), key=text.index)


def check_message(pair: ModelPair, message: str) -> None:
    """Refuse a user's message holding one of the template's control tokens: wrapped as it is, the tokenizer would read
    it as the marker itself, ending the user's turn and opening another (a system or assistant turn the visitor
    wrote), not as the text typed."""
    found = control_tokens_in(pair, message)
    if found:
        shown = ", ".join(repr(token) for token in found[:3]) + (" and more" if len(found) > 3 else "")
        raise SettingsError(
            f"The message holds {shown}: {'a control token' if len(found) == 1 else 'control tokens'} of this model's "
            "chat template, which the model would read as the template's own markers (the end of your turn, the "
            "start of a system or assistant turn), not as text. Remove "
            f"{'it' if len(found) == 1 else 'them'}, or send the whole text raw (the Raw switch under the message; "
            "--raw on the command line), which runs it exactly as written."
        )


def build_trace(
    pair: ModelPair, prompt: str, prompt_ids: list[int], settings: RunSettings, rounds: tuple[Round, ...], wall_s: float
) -> Trace:
    output = [t for r in rounds for t in r.committed]
    return Trace(
        settings=settings,
        prompt=prompt,
        prompt_ids=tuple(prompt_ids),
        rounds=rounds,
        text=pair.tokenizer.decode(output, skip_special_tokens=True),
        totals=Totals.of(rounds, wall_s),
        meta={
            **pair.describe(),
            **_head_named(pair, settings),
            **_copy_named(pair, settings),
            "forward": forwards_run(pair, settings),
            "specviz": __version__,
        },
    )


def _head_named(pair: ModelPair, settings: RunSettings) -> dict:
    """The feature head a run drafted with, named in its trace like the pair (nothing for other methods)."""
    return {"head": recorded_name(pair.head(settings.method))} if methods.get(settings.method).loads_head else {}


def _copy_named(pair: ModelPair, settings: RunSettings) -> dict:
    """The low-bit copy a quantized run drafted with, and what multiplied its matrices (nothing for other methods)."""
    if not methods.get(settings.method).quantizes:
        return {}
    from specviz.engine.forward.quantized import quantized_copy

    copy = quantized_copy(pair.target, settings.quant)
    return {"draft_copy": f"the target at {copy.options.label} ({copy.head}) · {copy.kernel}"}


EARLY_EXIT_NEEDS_HF = "early exit reads the target's per-layer cache, which only Hugging Face's forward keeps"


def target_forward(pair: ModelPair, settings: RunSettings, proposer: Proposer | None = None) -> str:
    """The forward the target runs (engine/forward/lean.py): the run's choice, but Hugging Face's for early exit, whose
    drafter reads the target's own cache objects layer by layer."""
    needs_hf = EARLY_EXIT_NEEDS_HF if proposer is not None and proposer.shares_target else None
    return chosen_forward(settings.forward, pair.target, needs_hf)


def forwards_run(pair: ModelPair, settings: RunSettings) -> dict:
    """Which forward each model of a run ran, as its trace's meta records it (a draft model's only if it drafts)."""
    method = methods.get(settings.method)
    needs_hf = EARLY_EXIT_NEEDS_HF if method.exits_early else None
    ran = {"target": chosen_forward(settings.forward, pair.target, needs_hf)}
    if method.loads_draft and pair.draft is not None:
        ran["draft"] = chosen_forward(settings.forward, pair.draft)
    if method.loads_head:  # a head with a lean step follows the target where it can; the others run their modules
        head = pair.load_head_for(method.name) if method.head.lean else None
        ran["head"] = (
            FORWARD_LEAN if head is not None and lean_step(head, pair.target, settings.forward) else FORWARD_HF
        )
    return ran


def make_proposer(pair: ModelPair, settings: RunSettings, memory: SuffixMemory | None = None) -> Proposer | None:
    """The proposer that implements settings.method; None for plain decoding. Every proposer is built from the one
    context; one that remembers earlier runs (suffix decoding) reads the caller's memory from it."""
    method = methods.get(settings.method)
    cls = proposer_class(method.name)
    if cls is None:
        return None
    if method.loads_draft and pair.draft is None:
        raise SettingsError(f"The {method.label} method needs a draft model: load a pair with a draft, or use n-gram.")
    if method.loads_draft and pair.crossing is not None and not method.crosses:
        raise SettingsError(
            f"The draft {recorded_name(pair.draft_name)} speaks another tokenizer than the target, so the "
            f"{method.label} method cannot compare their tokens: use --method {' or '.join(methods.CROSSING)}."
        )
    return cls.for_run(RunContext(pair, settings, memory))


def check_fits(pair: ModelPair, prompt_ids: list[int], settings: RunSettings) -> None:
    """Refuse up front a run that would overflow the context or a sliding-window cache (a tree run's last pass also
    reads every node of one tree)."""
    tree_nodes = settings.draft_slots if settings.is_tree else 0
    needed = len(prompt_ids) + settings.max_new_tokens + tree_nodes
    what = f"The prompt is {len(prompt_ids)} tokens and max new tokens is {settings.max_new_tokens}"
    what += f", plus one tree of {tree_nodes} nodes" if tree_nodes else ""
    fix = (
        "Use a smaller tree, a shorter prompt or fewer new tokens."
        if tree_nodes
        else "Shorten the prompt or lower max new tokens."
    )
    if pair.context_length and needed > pair.context_length:
        raise SettingsError(
            f"{what}: {needed} in all, more than the model's context of {pair.context_length} tokens. {fix}"
        )
    if pair.sliding_window and needed >= pair.sliding_window:
        raise SettingsError(
            f"This model uses a sliding-window cache of {pair.sliding_window} tokens, which cannot be rolled back once "
            f"full; this run needs {needed}. {fix}"
        )


@torch.inference_mode()
def decode_rounds(
    pair: ModelPair,
    prompt_ids: list[int],
    settings: RunSettings,
    on_target_logits: Callable[[torch.Tensor], None] | None = None,
    memory: SuffixMemory | None = None,
    proposer: Proposer | None = None,
) -> Iterator[Round]:
    """Yield one Round per target pass until EOS or max_new_tokens. Same settings and seed -> same rounds.

    Chains and trees run this one loop; a tree proposal (one that names parents) is scored with tree attention and
    judged by walking the tree (engine/tree.py). on_target_logits, if given, sees each pass's raw logits (n+1, V) (the
    exactness lab reads near-ties from them). proposer, if given, replaces settings.method's (the exactness lab runs
    a variant of a registry proposer, e.g. an early exit without the final norm)."""
    check_fits(pair, prompt_ids, settings)
    proposer = proposer or make_proposer(pair, settings, memory)
    generator = torch.Generator().manual_seed(settings.seed)
    layers = proposer.hidden_layers if proposer else ()  # the target features the drafter reads (most read none)
    forward = target_forward(pair, settings, proposer)
    target = CachedModel(pair.target, pair.vocab_size, prompt_ids, hidden_layers=layers, forward=forward)
    target.prefill()
    drafter = _start(proposer, prompt_ids, target) if proposer else None
    fed = target.length  # target feature rows the drafter has read (the prefill's: rows 0..len(prompt)-2)
    slots, produced = settings.draft_slots, 0
    plan = start_schedule(settings)  # the K schedule (core/schedule.py): only K varies, never the verdicts
    for index in range(settings.max_new_tokens):
        checkpoint()  # the lecture hall stops a run here, between rounds, when nobody waits or its budget is spent
        # Same number of draws every round, so shortening the last round does not shift the random stream.
        u = uniforms(generator, 2 * slots + 1)  # (2S+1,) float64: draft draws | accept draws | next-token draw
        depth = min(plan.k, settings.max_new_tokens - produced - 1)  # never draft past the limit

        # 1. fetch candidates (the confidence schedule may stop the drafter before depth)
        start = time.perf_counter()
        u_draft = u[:slots].float().to(pair.device)
        proposal = drafter.propose(depth, u_draft, plan.stop_below) if drafter else empty_chain(pair.device)
        synchronize(pair.device)  # so the draft time is the draft's
        drafted = time.perf_counter()
        draft_cache = drafter.cache_length if drafter else 0
        suffix = drafter.match(pair.token_texts) if drafter else None  # suffix decoding: where it drafted

        # 2. one target pass over the pending tokens + every draft: p at the root and after each draft
        read, base = len(target.pending), target.length  # base: the first row this pass reads
        logits = drafter.score(proposal) if drafter else None  # early exit verifies on its own work
        if logits is None:
            logits = _score(target, proposal)  # (n+1, V)
        if on_target_logits:
            on_target_logits(logits)
        p = logits_to_probs(logits, settings.sampling)  # (n+1, V)

        # 3. accept / reject (one host transfer for a chain; a tree is walked on the host)
        judged = (
            judge_tree(proposal, p, u, slots, pair)
            if proposal.is_tree
            else _judge_chain(proposal, p, u, slots, pair, settings.verifier)
        )
        verified = time.perf_counter()
        committed, stop = _apply_stops(judged.candidates, pair, settings, produced)
        produced += len(committed)

        # 4. roll both caches back to the committed prefix (the drafter also learns the target's features of it)
        target_cache = target.length
        if stop is None:
            features = None
            if target.hidden is not None:  # the committed rows of this pass the drafter has not read yet
                rows = judged.feature_rows(read)  # (r,) rows of the pass for committed rows base, base + 1, ...
                features = target.hidden[:, rows[fed - base :]]  # (layers, rows, H)
                fed = base + len(rows)
            target.advance(committed, judged.kept)
            if drafter:
                drafter.advance(committed, judged.kept, features)
        step = None
        if plan.name != CONSTANT:
            step = plan.after(depth, proposal.tokens.numel(), judged.kept, proposal.confidence)
            plan = plan.next_state(proposal.tokens.numel(), judged.kept, proposal.confidence)
        rnd = judged.round(
            index,
            committed,
            stop,
            pair,
            settings,
            draft_ms=(drafted - start) * 1e3,
            verify_ms=(verified - drafted) * 1e3,
            target_cache=(target_cache, target.length),
            draft_cache=(draft_cache, drafter.cache_length if drafter else 0),
        )
        crossing = drafter.crossing() if drafter else None  # across tokenizers: the translation
        yield replace(rnd, schedule=step, suffix=suffix, crossing=crossing) if step or suffix or crossing else rnd
        if stop:
            if drafter:  # a drafter that remembers runs learns the last round too
                drafter.finish(committed)
            return


def start_schedule(settings: RunSettings) -> ScheduleState:
    """The run's K schedule before its first round: K drafts, the heuristic's ceiling a round's slots."""
    return ScheduleState.start(
        settings.adaptive, settings.draft_length, MAX_K, settings.confidence_threshold, settings.fit_threshold
    )


def _start(proposer: Proposer, prompt_ids: list[int], target: CachedModel):
    """The run's drafter. A proposer that drafts with the target itself (early exit: `shares_target`) is handed the
    target's own per-run cache; such a drafter also scores its proposal (`score`: the verify pass, reusing its work)."""
    if proposer.shares_target:
        return proposer.start(prompt_ids, target.hidden, target=target)
    return proposer.start(prompt_ids, target.hidden)


def _score(target: CachedModel, proposal: Proposal) -> torch.Tensor:
    """One target pass over the pending tokens + the proposal: logits at the root and after each draft (n+1, V)."""
    n = proposal.tokens.numel()
    if proposal.is_tree:
        depths = torch.tensor(tree_depths(proposal.parents), dtype=torch.long)  # (n,)
        return target.forward_tree(proposal.tokens, depths, ancestor_matrix(proposal.parents))[-(n + 1) :]
    return target.forward(proposal.tokens, logits_to_keep=n + 1)


@dataclass(frozen=True)
class _ChainJudgement:
    """A chain round's verdict on the host: what it commits, and how to draw it as a Round."""

    facts: _RoundFacts
    u_accept: torch.Tensor  # (k,) float32
    u_next: float

    @property
    def candidates(self) -> list[int]:
        """The accepted drafts, then the correction or bonus token (before the stop checks)."""
        return self.facts.drafts[: self.facts.n_accepted] + [self.facts.next_token]

    @property
    def kept(self) -> int:
        """Drafts the caches keep: the accepted ones."""
        return self.facts.n_accepted

    def feature_rows(self, read: int) -> torch.Tensor:
        """(read + accepted,) the rows of the pass that read committed tokens: the pending ones, then each accepted
        draft (for a drafter that reads the target's features)."""
        return torch.arange(read + self.facts.n_accepted)

    def round(self, index: int, committed: list[int], stop: str | None, pair, settings, **timing) -> Round:
        return _make_round(index, self.facts, committed, stop, self.u_accept, self.u_next, pair, settings, **timing)


def _judge_chain(
    proposal: Proposal, p: torch.Tensor, u: torch.Tensor, slots: int, pair: ModelPair, verifier: str = TOKEN
) -> _ChainJudgement:
    """Accept a prefix of the chain and draw the correction or bonus token (core/verify.py), read in one transfer."""
    k = proposal.tokens.numel()
    q = proposal.q if proposal.q is not None else one_hot(proposal.tokens, pair.vocab_size)  # (k, V)
    u = u.float()
    u_accept, u_next = u[slots : slots + k], u[2 * slots]
    judge = verify_block if verifier == BLOCK else verify
    verdict = judge(p, q, proposal.tokens, u_accept.to(pair.device), u_next.to(pair.device))
    return _ChainJudgement(_RoundFacts.read(verdict, p, q, proposal), u_accept, float(u_next))


@dataclass(frozen=True)
class _RoundFacts:
    """A round's numbers on the host, brought over in one device-to-host transfer."""

    drafts: list[int]
    p_x: list[float]
    q_x: list[float]
    accept_prob: list[float]
    overlap: list[float]  # sum_x min(p_i(x), q_i(x)) per position: the analytic acceptance rate
    n_accepted: int
    next_token: int
    next_prob: float
    next_p: float
    p_top: list[list[tuple[int, float]]]  # (k+1) x top-N
    q_top: list[list[tuple[int, float]]]  # k x top-N
    residual_top: list[tuple[int, float]]

    @classmethod
    def read(cls, v: Verdict, p: torch.Tensor, q: torch.Tensor, proposal: Proposal) -> _RoundFacts:
        k, top_n = q.shape[0], min(TOP_N, p.shape[-1])
        n, token = v.n_accepted.view(1), v.next_token.view(1)  # (1,) each: indexing with them needs no sync
        tops = [d.topk(top_n, -1) for d in (p, q, v.next_dist[None])]  # (k+1, N), (k, N), (1, N)
        host = _to_host(
            ids=torch.cat([proposal.tokens, n, token]),  # (k+2,)
            per_draft=torch.stack([v.p_x, v.q_x, v.accept_prob, overlap(p[:k], q)]),  # (4, k)
            next_probs=torch.cat([v.next_dist[token], p[n, token]]),  # (2,)
            top_ids=torch.cat([t.indices for t in tops]),  # (2k+2, N)
            top_probs=torch.cat([t.values for t in tops]),  # (2k+2, N)
        )
        ids, per_draft = [int(i) for i in host["ids"]], host["per_draft"]
        top = _top([int(i) for i in host["top_ids"]], host["top_probs"], top_n)  # 2k+2 rows: p, q, residual
        return cls(
            drafts=ids[:k],
            p_x=per_draft[:k],
            q_x=per_draft[k : 2 * k],
            accept_prob=per_draft[2 * k : 3 * k],
            overlap=per_draft[3 * k :],
            n_accepted=ids[k],
            next_token=ids[k + 1],
            next_prob=host["next_probs"][0],
            next_p=host["next_probs"][1],
            p_top=top[: k + 1],
            q_top=top[k + 1 : 2 * k + 1],
            residual_top=top[-1],
        )


def _to_host(**tensors: torch.Tensor) -> dict[str, list[float]]:
    """Bring several tensors to the host in one transfer: flattened into one float32 vector, split back by name.

    Exact here: the probabilities are float32 already, and float32 holds every token id below 2^24.
    """
    flat = torch.cat([t.reshape(-1).float() for t in tensors.values()]).tolist()  # the one host sync
    out, start = {}, 0
    for name, t in tensors.items():
        out[name], start = flat[start : start + t.numel()], start + t.numel()
    return out


def _top(ids: list[int], probs: list[float], top_n: int) -> list[list[tuple[int, float]]]:
    """Flattened (R, N) top-N ids and probabilities -> per row the (token, prob) pairs with prob > 0."""
    rows = range(0, len(ids), top_n)
    return [[(i, v) for i, v in zip(ids[r : r + top_n], probs[r : r + top_n]) if v > 0] for r in rows]


def _apply_stops(
    candidates: list[int], pair: ModelPair, settings: RunSettings, produced: int
) -> tuple[list[int], str | None]:
    """The round's committed tokens, cut at the first EOS or at max_new_tokens (checked per token)."""
    for i, token in enumerate(candidates):
        if settings.stop_at_eos and token in pair.eos_ids:
            return candidates[: i + 1], "eos"
        if produced + i + 1 >= settings.max_new_tokens:
            return candidates[: i + 1], "max_new_tokens"
    return candidates, None


def _make_round(
    index: int,
    facts: _RoundFacts,
    committed: list[int],
    stop: str | None,
    u_accept: torch.Tensor,
    u_next: float,
    pair: ModelPair,
    settings: RunSettings,
    **timing_and_caches,
) -> Round:
    texts = pair.token_texts
    tops = lambda pairs: tuple(TokenProb(t, texts[t], prob) for t, prob in pairs)  # noqa: E731
    n, k = facts.n_accepted, len(facts.drafts)
    positions = tuple(
        Position(
            index=i,
            token_id=token,
            text=texts[token],
            q=facts.q_x[i],
            p=facts.p_x[i],
            ratio=facts.accept_prob[i],
            overlap=facts.overlap[i],
            u=float(u_accept[i]),
            accepted=i < n and i < len(committed),
            verdict=_verdict(i, n, len(committed)),
            p_top=tops(facts.p_top[i]),
            q_top=tops(facts.q_top[i]),
        )
        for i, token in enumerate(facts.drafts)
    )
    extra = None
    if len(committed) > n:  # the correction / bonus survived the stop checks
        kind = CORRECTION if n < k else (BONUS if methods.get(settings.method).speculative else TARGET)
        extra = ExtraToken(facts.next_token, texts[facts.next_token], kind, facts.next_prob, facts.next_p, u_next)
    return Round(
        index=index,
        positions=positions,
        extra=extra,
        residual_top=tops(facts.residual_top) if n < k else (),
        bonus_top=tops(facts.p_top[n]) if n == k else (),
        committed=tuple(committed),
        stop=stop,
        **timing_and_caches,
    )


def _verdict(i: int, n_accepted: int, n_committed: int) -> str:
    if i >= n_committed and i <= n_accepted:
        return AFTER_STOP  # accepted or about to be judged, but the run had already stopped
    if i < n_accepted:
        return ACCEPTED
    return REJECTED if i == n_accepted else UNREACHED
