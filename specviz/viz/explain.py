"""One sentence of why, with the numbers, for each phase of a round (pure text and HTML)."""

from __future__ import annotations

from specviz import methods
from specviz.core import schedule
from specviz.core.trace import ACCEPTED, AFTER_STOP, Node, Position, Round, Trace
from specviz.core.verify import tree_size
from specviz.viz.block_stops import BlockStop, block_stops, kept_drafts, kept_weight, token_by_token_kept
from specviz.viz.feature_flow import FLOWS
from specviz.viz.text import literal, plural, prob, visible

DRAFT_BOX = "border:1px solid #333333;padding:.2rem .45rem;margin:0 .1rem;font-family:monospace"


def _tok(text: str) -> str:
    return f"'{literal(visible(text))}'"


def verify_html(r: Round, committed: int = 0, timing: str = "", reuse: str = "") -> str:
    """The K drafts plus the pending token go through the target together: one pass, K+1 distributions. A tree
    round: every node at once, under the tree attention mask (committed = the committed text's length). timing: what
    the pass's measured time is, beside it ("recorded on another machine", "includes first-call warm-up"); reuse:
    what of the pass the draft already did (early exit: verify_reuse)."""
    said = f" ({literal(timing)})" if timing else ""
    reused = f'<div style="margin:.4rem 0">{literal(reuse)}</div>' if reuse else ""
    if r.is_tree:
        depth = max(node.depth for node in r.nodes)
        first = "The tokens committed last round are read first; then every" if r.index else "Every"
        return (
            f'<div style="border:3px solid #333333;border-radius:.5rem;padding:.5rem">'
            f'<div style="font-weight:bold;color:#333333">ONE target forward pass over all {len(r.nodes)} tree nodes · '
            f"{r.verify_ms:.1f} ms{said}</div>"
            f'<div style="margin:.4rem 0">{first} node, with the tree attention mask below: each node sees the '
            f"committed text ({committed} tokens) and its own ancestors only, never another branch, and its position "
            f"id is {committed} − 1 + its depth, so siblings "
            f"share a position (depths 1 to {depth}: positions {committed} to {committed - 1 + depth}).</div>"
            f"<div>→ p at the root and after every node: {len(r.nodes) + 1} distributions, all at once, so any path "
            f"the walk takes is already scored (drafting took {r.draft_ms:.1f} ms).</div></div>"
        )
    boxes = "".join(f'<span style="{DRAFT_BOX}">{literal(visible(p.text))}</span>' for p in r.positions)
    return (
        f'<div style="border:3px solid #333333;border-radius:.5rem;padding:.5rem;display:inline-block">'
        f'<div style="font-weight:bold;color:#333333">ONE target forward pass · {r.verify_ms:.1f} ms{said}</div>'
        f'<div style="margin:.4rem 0">[last committed token] {boxes}</div>'
        f"<div>→ p<sub>1</sub> … p<sub>{r.proposed + 1}</sub>: the target's distribution at each of the "
        f"{r.proposed + 1} positions, all at once (drafting took {r.draft_ms:.1f} ms).</div>{reused}</div>"
    )


def suffix_sentence(trace: Trace, r: Round) -> str:
    """Suffix decoding's round: how many tokens the tries' counts supported, or why none."""
    o = trace.settings.suffix
    if not r.proposed:
        return (
            "Suffix decoding found no continuation of the last tokens likely enough (its estimated probability, the "
            f"counts' ratio along the path, stays below {o.min_token_prob:g}) in this prompt + output or in the "
            f"session's earlier outputs, so it proposes nothing and the target decodes one token this round "
            f"({r.draft_ms:.1f} ms, no model run)."
        )
    return (
        f"Suffix decoding walks the most frequent continuation of the best-matching end of the text, in a trie over "
        f"this prompt + output or over the session's earlier outputs, for as long as its estimated probability stays "
        f"at least {o.min_token_prob:g} (and at most K, and the match's length x {o.max_spec_factor:g}): "
        f"{r.proposed} token(s), no model run ({r.draft_ms:.1f} ms):"
    )


SUFFIX_TRIES = {
    "request": "this request's trie (its prompt + output so far)",
    "global": "the global trie of the session's earlier outputs",
}
MATCH_SHOWN = 12  # tokens of a long matched suffix shown (its end, the part nearest the drafts)


def suffix_source_html(r: Round) -> str:
    """Where a suffix round's draft came from: which trie, and the matched end of the text (its tokens) it grew
    from; empty for a round that records no match (another method, or a trace older than the record)."""
    m = r.suffix
    if m is None:
        return ""
    shown = m.match_text[-MATCH_SHOWN:]
    cut = "… " if len(m.match_text) > MATCH_SHOWN else ""
    boxes = "".join(f'<span style="{DRAFT_BOX}">{literal(visible(t))}</span>' for t in shown)
    if not m.match_ids:
        return '<div style="margin:.3rem 0">No end of the text was found in either trie.</div>'
    if not m.probs:
        what = (
            f"The longest match ({len(m.match_ids)} token(s)) is in {SUFFIX_TRIES[m.source]}, but no continuation "
            f"of it was likely enough:"
        )
    else:
        what = (
            f"Drafted from <b>{SUFFIX_TRIES[m.source]}</b>, after the matched suffix of {len(m.match_ids)} "
            f"token(s) (score {m.score:.3g}, the sum of the drafts' path probabilities):"
        )
    return f'<div style="margin:.3rem 0">{what}<div style="margin:.3rem 0">{cut}{boxes}</div></div>'


def head_tree_sentence(trace: Trace, r: Round, shape: str, size: str, depth: int) -> str:
    """A feature head's tree: an EAGLE-2-style tree for a head that reads its own predicted feature, a Cartesian tree
    for parallel heads drafting all depths in one pass; who drafts each depth, and why its children are judged one-hot
    at any temperature."""
    one_hot = (
        "Each child is one of the head's top-b tokens, chosen, not sampled, so it is judged as a one-hot proposal "
        "(q = 1): kept with probability p(x), and a rejected sibling's x is removed from p before the next is tried."
    )
    if methods.get(trace.settings.method).draft_cost == methods.HEADS_PASS:
        return (
            f"The {methods.label(trace.settings.method)} draft their Cartesian tree of shape {shape} ({size}) in one "
            f"pass over one feature "
            f"({r.draft_ms:.1f} ms): head i's top tokens are the children of every node at depth i + 1, the same under "
            f"each node, since no head sees a drafted token. {one_hot}"
        )
    return (
        f"The {methods.label(trace.settings.method)} drafts a tree of shape {shape} ({size}), as EAGLE-2 grows "
        f"one: one head pass per depth over every node at that depth ({max(depth - 1, 0)} passes, the leaves need "
        f"none; {r.draft_ms:.1f} ms in all), each node reading the feature the head predicted at its own parent, "
        f"under a tree mask (never a sibling's). {one_hot}"
    )


DYNAMIC_NOTE = (
    " A dynamic tree (EAGLE-2) is grown anew each round where the draft is confident: it expands the best nodes by "
    "cumulative draft log-probability and keeps only the best of all it scored."
)


def dynamic_tree_sentence(trace: Trace, r: Round) -> str:
    """A dynamic (EAGLE-2) tree round: how many nodes were scored, expanded and kept, and why its children are judged
    one-hot at any temperature (core/dyntree.py)."""
    d = trace.settings.dynamic
    expanded = sum(c.expanded for c in r.scored)
    levels = len({c.depth for c in r.scored if c.expanded})
    who = "The draft model" if trace.settings.method == methods.TREE else f"The {methods.label(trace.settings.method)}"
    return (
        f"{who} grows a dynamic tree ({d.text}: keep {d.budget} nodes, {d.depth} levels, top-{d.topk}), as EAGLE-2 "
        f"does: it scored {len(r.scored)} nodes by their cumulative draft log-probability, expanded {expanded} of "
        f"them (the {d.topk} best of each level, one draft pass per level: {levels} passes after the root's, "
        f"{r.draft_ms:.1f} ms in all), and kept the {len(r.nodes)} best for the target's one pass; the other "
        f"{len(r.scored) - len(r.nodes)} were pruned. Each kept child was chosen, not sampled, so it is judged one-hot "
        "(q = 1): kept with probability p(x), and a rejected sibling's x is removed from p before the next is tried; "
        "beside each token, q is the draft's probability of it, ⊕ marks an expanded node and '+n' its pruned children."
    )


def draft_sentence(trace: Trace, r: Round) -> str:
    """What drafting cost this round: forward passes of the draft model, or a lookup that runs no model at all."""
    if trace.settings.method == methods.SUFFIX:
        return suffix_sentence(trace, r)
    if methods.get(trace.settings.method).draft_cost == methods.HOST_LOOKUP:
        if not r.proposed:
            return (
                f"The n-gram lookup found no earlier match for the last few tokens, so it proposes nothing and the "
                f"target decodes one token this round ({r.draft_ms:.1f} ms, no model run)."
            )
        return (
            f"The n-gram lookup copies {r.proposed} token(s) that followed an earlier occurrence of the last few "
            f"tokens: a search of the text, no model run ({r.draft_ms:.1f} ms):"
        )
    if r.is_tree and r.scored:
        return dynamic_tree_sentence(trace, r)
    if r.is_tree:
        shape = ",".join(map(str, trace.settings.tree))
        how = (
            "the top-b tokens of q at that node (greedy: each counts as a one-hot proposal)"
            if trace.settings.sampling.greedy
            else "sampled from q at that node without replacement (a token drawn is removed and q renormalised "
            "for the next sibling)"
        )
        depth = max(node.depth for node in r.nodes)
        full = tree_size(trace.settings.tree)
        left = trace.settings.max_new_tokens - committed_before(trace, r)
        size = f"{r.proposed} nodes"
        if r.proposed < full:
            size = f"{r.proposed} of its {full} nodes: trimmed to the token budget, {left} new token(s) left"
        if trace.settings.method in methods.BRANCHING:
            return head_tree_sentence(trace, r, shape, size, depth)
        return (
            f"The draft model drafts a tree of shape {shape} ({size}): one draft forward pass per depth "
            f"over every node at that depth ({depth} passes, {r.draft_ms:.1f} ms in all). Each node's children are "
            f"{how}; beside each token, q is its probability in the distribution it was drawn from."
        )
    left = trace.settings.max_new_tokens - committed_before(trace, r)
    trimmed = (
        f" (K = {trace.settings.k}, trimmed to the token budget: {left} new token(s) left, one of them for the "
        "correction or bonus)"
        if left - 1 < trace.settings.draft_length and r.proposed < trace.settings.draft_length and not r.schedule
        else ""
    )
    end = f". {stop_sentence(trace, r)} The drafts:" if r.schedule else ":"  # adaptive K: why it stopped there
    if methods.get(trace.settings.method).exits_early:
        return f"{early_exit_sentence(trace, r, trimmed)} ({r.draft_ms:.1f} ms in all){end}"
    if methods.get(trace.settings.method).quantizes:
        return f"{quantized_sentence(trace, r, trimmed)} ({r.draft_ms:.1f} ms in all){end}"
    if flow := FLOWS.get(trace.settings.method):  # a head: features, not tokens, carry the draft forward
        short = (
            flow.short_of_k.format(k=trace.settings.k)
            if flow.short_of_k and r.proposed < min(trace.settings.draft_length, left - 1)
            else ""
        )
        said = f"The {flow.head} {flow.proposes} {r.proposed} token(s){trimmed or short}, {flow.sentence}"
        return f"{said} ({r.draft_ms:.1f} ms in all){end}"
    return (
        f"The draft model proposes {r.proposed} token(s){trimmed}, one forward pass each ({r.draft_ms:.1f} ms in all)"
        f"{end}"
    )


def early_exit_sentence(trace: Trace, r: Round, trimmed: str = "") -> str:
    """Who drafts in an early-exit round: the target's own first E layers (engine/early_exit.py)."""
    e = trace.settings.exit_layer
    return (
        f"Layers 1..{e} of the target propose {r.proposed} token(s){trimmed}: the target itself, cut after its "
        f"first {e} layers, then its own final norm and LM head, one pass through those {e} layers per token. No "
        f"second model: the drafter reads the target's own KV cache of layers 1..{e} for the committed text, so "
        "nothing is read twice. A target not trained to exit early (the bundled one was not) accepts few such drafts"
    )


def quantized_sentence(trace: Trace, r: Round, trimmed: str = "") -> str:
    """Who drafts in a quantized round: the target's own low-bit copy (engine/forward/quantized.py)."""
    bits = trace.settings.quant.bits
    close = (
        "At 4 bits and more it differs from the target only in arithmetic (the rounded weights, bfloat16 "
        "activations, packed kernels), so q sits close to p"
        if bits >= 4  # the bits where the copy still agrees with its target (docs/speed.md)
        else f"At {bits} bits the rounding loses much of what the weights said, so q drifts far from p"
    )
    return (
        f"The target's own {bits}-bit copy proposes {r.proposed} token(s){trimmed}, one pass each: the same layers, "
        f"their weights rounded to {bits} bits, with its own KV cache. No second model to train. {close}"
    )


def verify_reuse(trace: Trace) -> str:
    """What an early-exit round's verify pass skips (the draft's work it reuses); "" for the other methods."""
    if not methods.get(trace.settings.method).exits_early:
        return ""
    e = trace.settings.exit_layer
    return (
        f"Layers 1..{e} already ran on the pending token and every draft but the last, while drafting (their keys "
        f"and values are in the target's cache): this pass runs layers 1..{e} on the last draft only, then layers "
        f"{e + 1} and up on all of them."
    )


def stop_sentence(trace: Trace, r: Round) -> str:
    """Why an adaptive round's draft stopped at its last token, and what the schedule does next (core/schedule.py);
    "" for a constant-K round."""
    step = r.schedule
    if step is None:
        return ""
    name = trace.settings.k_schedule
    if step.stop == schedule.STOP_CONFIDENCE:
        last = r.positions[-1]
        why = (
            f"It stopped after {_tok(last.text)}: the draft gave it {step.confidences[-1]:.2f} < the threshold "
            f"{step.threshold:.2f}, so drafting on would likely waste passes (K = {step.k} is only the cap)."
        )
    elif step.stop == schedule.STOP_BUDGET:
        left = trace.settings.max_new_tokens - committed_before(trace, r)
        why = (
            f"It stopped at the token budget: {left} new token(s) left, one of them for the correction or bonus, "
            f"fewer than this round's K = {step.k}."
        )
    elif step.stop == schedule.STOP_NONE:
        why = "It drafted nothing this round, so the target decodes one token."
    else:
        reached = "every draft was confident enough" if name == schedule.CONFIDENCE else "the schedule's K"
        why = f"It stopped at cap K = {step.k}: {reached}."
    if name == schedule.HEURISTIC:
        if step.next_k > step.k:
            after = "after a full accept (+2)"
        elif step.next_k < step.k:
            after = "after a rejection (−1)"
        else:
            after = "(at its floor of 1 after a rejection)" if step.k == 1 else "(at its ceiling after a full accept)"
        why += f" Heuristic: K {step.k} → {step.next_k} {after}."
    elif trace.settings.fit_threshold and step.next_threshold is not None and step.next_threshold != step.threshold:
        why += (
            f" The threshold is refit from this run's (confidence, accepted?) pairs: {step.threshold:.2f} → "
            f"{step.next_threshold:.2f} for the next round."
        )
    return why


def committed_before(trace: Trace, r: Round) -> int:
    """New tokens the run had committed before this round."""
    return sum(len(earlier.committed) for earlier in trace.rounds[: r.index])


def judge_sentence(pos: Position) -> str:
    if pos.u <= pos.ratio:
        return (
            f"**Accepted** {_tok(pos.text)}: p = {prob(pos.p)}, q = {prob(pos.q)}, so it is kept with probability "
            f"min(1, p/q) = {prob(pos.ratio)}; the draw u = {pos.u:.3f} falls inside."
        )
    return (
        f"**Rejected** {_tok(pos.text)}: the draft was more confident than the target (q = {prob(pos.q)} > p = "
        f"{prob(pos.p)}), so it is kept only with probability {prob(pos.ratio)}, and u = {pos.u:.3f} is above that. "
        "Every later draft is discarded."
    )


def block_judge_sentence(r: Round, stop: BlockStop) -> str:
    """A draft judged as part of a block: the weight it leaves, the stop test after it, and whether the block kept
    it; at the last draft judged, what token-by-token verification would have kept with the same draws."""
    stops = block_stops(r)
    pos, before = r.positions[stop.after - 1], stops[stop.after - 2].weight if stop.after > 1 else 1.0
    kept = kept_drafts(stops)
    first = stop.after == 1  # the first draft says what w and h are; the later ones give their numbers
    carry = ", the target's mass the drafts still carry" if first else ""
    h_is = " (= w: the last draft)" if stop.last else ""
    said = (
        f"**Draft {stop.after} of {len(stops)}** {_tok(pos.text)} (p = {prob(pos.p)}, q = {prob(pos.q)}): weight "
        f"w = min(1, {prob(before)} · p/q) = {prob(stop.weight)}{carry}. May the block end here? h = "
        f"{prob(stop.h)}{h_is}; u = {stop.u:.3f} {'≤' if stop.passed else '>'} h: "
        f"{'it may' if stop.passed else 'not here'}."
    )
    if stop.kept:
        why = "" if stop.passed else ", though its own stop failed (a later one passed)"
        said += f" **Kept**{why}: the block keeps its longest prefix whose stop passes, {plural(kept, 'draft')} here."
    else:
        later = [s for s in stops if s.after > stop.after]
        failed = ", ".join(f"u {s.u:.2f} > h {prob(s.h)}" for s in later)
        prefix = f"the first {plural(kept, 'draft')}" if kept else "none of the drafts"
        said += f" **Not kept**: no stop from here on passes{f' ({failed})' if failed else ''}, so the block keeps "
        said += f"{prefix}; every later draft is discarded."
    if stop.after == min(kept + 1, len(stops)):  # the last draft judged: the same draws, judged token by token
        said += (
            f" Token by token, the same draws would have kept {plural(token_by_token_kept(r), 'draft')} (u against "
            "min(1, p/q) at each draft, up to the first that fails): each rule reads the draws its own way, and the "
            "block keeps at least as many in expectation, not in every round."
        )
    return said


def tree_judge_sentence(r: Round, node: Node) -> str:
    """A tree child's test: which distribution it is judged against (p at its parent, or the residual left by its
    rejected elder siblings), the numbers, and where the walk goes next."""
    siblings = r.children(node.parent)
    parent = f"under {_tok(r.nodes[node.parent].text)}" if node.parent >= 0 else "of the root (the committed text)"
    elders = [c for c in siblings if c.id < node.id]
    against = (
        f"the residual left after rejecting {', '.join(_tok(c.text) for c in elders)} (norm(max(0, p − q)), "
        "updated after each rejected sibling)"
        if elders
        else "p, the target's distribution at its parent (from the one verify pass)"
    )
    head = (
        f"Child {len(elders) + 1} of {len(siblings)} {parent}, depth {node.depth}: {_tok(node.text)} is judged "
        f"against {against}. p = {prob(node.p)}, q = {prob(node.q)}, so it is kept with probability min(1, p/q) = "
        f"{prob(node.ratio)}"
    )
    if node.verdict in (ACCEPTED, AFTER_STOP):
        below = r.children(node.id)
        nxt = (
            f"the walk moves down and tries its {len(below)} child(ren) next."
            if below
            else "it is a leaf, so the target's p after it gives a bonus token."
        )
        return f"**Accepted**: {head}; the draw u = {node.u:.3f} falls inside, so {nxt}"
    younger = [c for c in siblings if c.id > node.id and c.ratio is not None]
    if younger:
        nxt = (
            f"The target's remaining distribution becomes the residual below, and the next sibling "
            f"{_tok(younger[0].text)} is judged against it."
        )
    else:
        nxt = "No sibling is left: the correction is drawn from the residual below, and the walk ends."
    return f"**Rejected**: {head}; u = {node.u:.3f} is above that. {nxt}"


def picked_by(u: float) -> str:
    """How a correction or bonus token is drawn: its own uniform, not the accept test's, read as an inverse CDF."""
    return (
        f"a fresh uniform draw, u = {u:.3f} (not the accept test's), picks it: the first token, in id order, whose "
        "running total of probability reaches u"
    )


def resolve_sentence(r: Round, block: bool = False) -> str:
    """How the round's extra token is drawn (block: from what a block's kept prefix still owes)."""
    extra = r.extra
    if block and extra.kind == "correction":
        stops = block_stops(r)
        kept = kept_drafts(stops)
        prefix = plural(kept, "draft") if kept else "none of the drafts"
        return (
            f"The block kept {prefix}, so the correction {_tok(extra.text)} is drawn at position "
            f"{kept + 1} from norm(max(0, w·p − q)) with w = {prob(kept_weight(stops))}, the kept drafts' weight: "
            f"what the target still owes after them (token by token, w is always 1). Its p is {prob(extra.p)} and its "
            f"residual probability {prob(extra.prob)}; {picked_by(extra.u)}. This keeps the output exactly the "
            "target's."
        )
    if r.is_tree and extra.kind == "correction":
        at = f"{_tok(r.nodes[r.path[-1]].text)}" if r.path else "the root"
        return (
            f"Every child tried under {at} was rejected, so the correction {_tok(extra.text)} is drawn from the "
            f"residual left after the last one, which only holds what the target still owes: its residual "
            f"probability is {prob(extra.prob)} (p = {prob(extra.p)}); {picked_by(extra.u)}. This keeps the output "
            "exactly p's, however many siblings were tried."
        )
    if r.is_tree and extra.kind == "bonus":
        return (
            f"The walk accepted {len(r.path)} node(s) down to a leaf, and the verify pass already holds p after that "
            f"leaf: the bonus token {_tok(extra.text)} is drawn from it for free (p = {prob(extra.p)}; "
            f"{picked_by(extra.u)})."
        )
    if extra.kind == "correction":
        rejected = next(p for p in r.positions if p.verdict == "rejected")
        return (
            f"The correction {_tok(extra.text)} is drawn from the residual norm(max(0, p − q)) at position "
            f"{rejected.index + 1}, which only holds tokens the target likes more than the draft did: its p is "
            f"{prob(extra.p)} and its residual probability {prob(extra.prob)}; {picked_by(extra.u)}. This is what "
            "makes the output follow p exactly."
        )
    if extra.kind == "bonus":
        return (
            f"All {r.proposed} drafts passed, so the target's pass already holds p at position {r.proposed + 1}: the "
            f"bonus token {_tok(extra.text)} is drawn from it for free (p = {prob(extra.p)}; {picked_by(extra.u)})."
        )
    return f"Plain decoding: the target draws {_tok(extra.text)} from p (p = {prob(extra.p)}, u = {extra.u:.3f})."


def commit_sentence(r: Round) -> str:
    kept = len(r.committed)
    stop = {"eos": " The end-of-sequence token ends the run.", "max_new_tokens": " The length limit ends the run."}
    if r.is_tree:
        path = " ".join(_tok(r.nodes[i].text) for i in r.path) or "no node"
        return (
            f"Committed {kept} token(s) for one target pass over {len(r.nodes)} nodes: the accepted path ({path}) "
            f"and the {r.extra.kind if r.extra else 'stop'}. The target's cache held {r.target_cache[0]} tokens after "
            f"the pass; the rollback crops every tree node, leaving {r.target_cache[1]} (the draft's: "
            f"{r.draft_cache[0]} to {r.draft_cache[1]}), and the committed tokens are read at the start of the next "
            "pass, so the rejected branches leave no trace." + stop.get(r.stop or "", "")
        )
    text = (
        f"Committed {kept} token(s) for one target pass. The target's cache goes from {r.target_cache[0]} to "
        f"{r.target_cache[1]} tokens"
    )
    if r.draft_cache != (0, 0):
        text += f", the draft's from {r.draft_cache[0]} to {r.draft_cache[1]}"
    return (
        text
        + ": rejected drafts leave no trace; the newest token is read at the start of the next round."
        + stop.get(r.stop or "", "")
    )


BF16_GREEDY_NOTE = (
    "a verify pass over K + 1 tokens rounds differently from one-token steps, so where the target's top two tokens "
    "tie within bfloat16's resolution, greedy output can part from plain decoding (sampling stays exact relative to "
    "the verify pass's own numbers). In float32 the same can happen only at far closer ties, which are rare."
)

ALPHA_HELP = (
    "α = accepted drafts / drafts judged: the chance that a draft token passes the accept test, the α of the paper's "
    "formulas. Given the text so far, its expectation is Σ min(p, q) over the processed p and q at whatever "
    "temperature, top-k or top-p is set (at T = 0, whether the two argmaxes agree); the measured α is a ratio "
    "estimator of it. Drafts after a rejection are never judged. vLLM's 'draft acceptance rate' divides by all drafts "
    "proposed instead, so it falls as K grows."
)


def setting_captions(
    tree: bool, dynamic: bool, temperature: float, first_run_note: str | None, lesson: dict[str, str]
) -> list[str]:
    """What a live run with these settings shows, said under the round page's trace picker: a tree's second chances
    (and a dynamic tree's growth), the first run's note where it is one, then greedy's agree / disagree or sampling's
    min(1, p/q); `lesson` is assets/lessons/rounds.json."""
    captions = [lesson["tree"] + (DYNAMIC_NOTE if dynamic else "")] if tree or dynamic else []
    if first_run_note:
        captions.append(first_run_note)
    sampled = lesson["sampling"].format(temperature=temperature)
    return [*captions, lesson["greedy"] if temperature == 0 else sampled]
