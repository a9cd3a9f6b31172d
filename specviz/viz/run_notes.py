"""What the round page says about the run it shows: its own settings, how they differ from the sidebar's, where its
times were measured, and what the first round's times hold (pure text, no streamlit).

A run on screen is never passed off as the sidebar's: a changed setting, a recorded trace's settings and a recorded
trace's timings are each said where they would otherwise mislead.
"""

from __future__ import annotations

from specviz import methods
from specviz.core import schedule
from specviz.core.settings import RunSettings
from specviz.viz.text import literal


def settings_summary(settings: RunSettings) -> str:
    """A run's settings in one line: method (and tree shape), K, sampling, seed, length, draft vocabulary."""
    method = methods.get(settings.method)
    parts = [method.label]
    if settings.is_tree:
        parts.append(f"tree {settings.tree_label}")
    elif method.speculative:
        parts.append(f"K = {settings.k}")
        if settings.adaptive != schedule.CONSTANT:
            parts.append(f"{schedule.label(settings)} K schedule")
    sampling = settings.sampling
    parts.append("greedy (T = 0)" if sampling.greedy else f"T = {sampling.temperature:g}")
    if sampling.top_k:
        parts.append(f"top-k {sampling.top_k}")
    if sampling.top_p < 1:
        parts.append(f"top-p {sampling.top_p:g}")
    parts += [f"seed {settings.seed}", f"{settings.max_new_tokens} new tokens"]
    if settings.draft_vocab and method.loads_draft:
        parts.append(f"draft vocabulary {settings.draft_vocab}")
    return ", ".join(parts)


def _shape(settings: RunSettings) -> str:
    return settings.tree_label if settings.is_tree else "none (a chain)"


def settings_differences(shown: RunSettings, sidebar: RunSettings) -> list[str]:
    """Each setting in which the run shown differs from the sidebar's, as 'name X (the sidebar: Y)'; a setting the
    method does not use (K of a tree, a tree's shape for a chain, the draft vocabulary of a lookup) is left out."""
    then, now = methods.get(shown.method), methods.get(sidebar.method)
    rows = [("method", then.label, now.label)]
    if shown.is_tree or sidebar.is_tree:
        rows.append(("tree shape", _shape(shown), _shape(sidebar)))
    if not (shown.is_tree and sidebar.is_tree):
        rows.append(("K", shown.k, sidebar.k))
    if (then.adaptive and not shown.is_tree) or (now.adaptive and not sidebar.is_tree):
        rows.append(("K schedule", schedule.label(shown), schedule.label(sidebar)))
    rows += [
        ("temperature", f"{shown.sampling.temperature:g}", f"{sidebar.sampling.temperature:g}"),
        ("top-k", shown.sampling.top_k, sidebar.sampling.top_k),
        ("top-p", f"{shown.sampling.top_p:g}", f"{sidebar.sampling.top_p:g}"),
        ("seed", shown.seed, sidebar.seed),
        ("max new tokens", shown.max_new_tokens, sidebar.max_new_tokens),
    ]
    if then.loads_draft or now.loads_draft:
        rows.append(("draft vocabulary", shown.draft_vocab or "all", sidebar.draft_vocab or "all"))
    if then.draft_cost == methods.HOST_LOOKUP or now.draft_cost == methods.HOST_LOOKUP:
        rows.append(
            ("n-gram sizes", f"{shown.ngram_min}-{shown.ngram_max}", f"{sidebar.ngram_min}-{sidebar.ngram_max}")
        )
    if methods.SUFFIX in (shown.method, sidebar.method):
        rows.append(("suffix options", _suffix(shown), _suffix(sidebar)))
    return [f"{name} {a} (the sidebar: {b})" for name, a, b in rows if a != b]


def _suffix(settings: RunSettings) -> str:
    o = settings.suffix
    return f"depth {o.max_tree_depth}, factor {o.max_spec_factor:g}, min prob {o.min_token_prob:g}"


NEW_RUN = "▶ New run with these settings"


def source_differences(meta: dict, prompt: str, now: tuple[str | None, str | None, str]) -> list[str]:
    """How a live run's pair and prompt differ from the sidebar's pair (target, draft as records name them) and the
    prompt box's text now. Only what is known is said: the box changes with the pair (its presets, its chat
    template) as well as by typing, so a different prompt is never called an edit."""
    target, draft, typed = now  # the record's names are a trace's text: shown as text, never as Markdown
    other_pair = bool(meta.get("target")) and (meta.get("target"), meta.get("draft")) != (target, draft)
    other_prompt = typed != prompt
    if other_pair:
        run, sidebar = literal(f"{meta['target']} ← {meta.get('draft')}"), literal(f"{target} ← {draft}")
        if other_prompt:
            return [f"the pair {run} and the prompt it was given (the sidebar: {sidebar}, and another prompt)"]
        return [f"the pair {run} (the sidebar: {sidebar})"]
    return ["a prompt other than the one in the prompt box now"] if other_prompt else []


def stale_run_note(shown: RunSettings, sidebar: RunSettings | None, also: list[str] | None = None) -> str:
    """The cue when the sidebar has changed since the run shown was made ("" when it has not, or holds none); also:
    other differences (source_differences)."""
    if sidebar is None:
        return ""
    changed = settings_differences(shown, sidebar) + list(also or ())
    if not changed:
        return ""
    return (
        f"The run shown used {', '.join(changed)}: it is not the sidebar's run. Press **{NEW_RUN}** to run the "
        "sidebar's settings and prompt."
    )


def machine_name(meta: dict) -> str:
    """Where a recorded trace was run, as far as its meta says: a machine's name if it has one, then the device and
    precision ('another machine (cpu, float32)' when only those are known). Plain text from the trace: a sentence
    drawn as Markdown holds it through viz.text.literal (an uploaded trace's meta may hold a link or an image)."""
    where = ", ".join(str(meta[key]) for key in ("device", "dtype") if meta.get(key))
    named = next((str(meta[key]) for key in ("machine", "host", "hardware") if meta.get(key)), "")
    if named:
        return f"{named} ({where})" if where else named
    return f"another machine ({where})" if where else "another machine"


def recorded_note(settings: RunSettings, meta: dict, bundled: bool) -> str:
    """What a recorded trace (bundled or uploaded) is: its own settings, which the sidebar's do not change, and
    timings taken where it was recorded, not on this machine."""
    what = "This bundled trace was recorded" if bundled else "This uploaded trace was recorded"
    return (
        f"{what} with {settings_summary(settings)}; the sidebar's settings do not apply to it (choose the live run "
        f"in the trace picker and press **{NEW_RUN}** for them). Its draft and verify times were measured on "
        f"{literal(machine_name(meta))} when it was recorded: they are not this machine's."
    )


FIRST_ROUND_NOTE = (
    "Round 1's draft and verify times include each model's first call after the prompt's prefill (first-call "
    "warm-up: memory allocation, kernel selection), so they can read well above later rounds'; the prefill itself "
    "ran before round 1 and is in no round's time."
)


def verify_time_note(round_index: int, live: bool) -> str:
    """A caveat for a round's measured times: the first round of a live run is a cold start."""
    return FIRST_ROUND_NOTE if live and round_index == 0 else ""


def forward_words(ran: dict) -> str:
    """Which forward pass the specviz lanes ran (plain decoding too, so their speedups compare like with like), and
    that Hugging Face's lanes run their own generate(), the reference a user would pick."""
    kinds = {"lean": "specviz's lean forward", "hf": "Hugging Face's forward"}
    target, draft = ran.get("target"), ran.get("draft")
    said = kinds.get(target, str(target)) + (
        "" if draft in (None, target) else f" for the target and {kinds.get(draft, str(draft))} for the draft"
    )
    return (
        f"The specviz lanes, plain decoding among them, ran {said} (Advanced in the sidebar); Hugging Face's lanes "
        "run its generate(), the library's own forward, as a user of transformers would."
    )
