"""Home: what speculative decoding is, a live run on the default pair, and the way into every page."""

import streamlit as st

from specviz.ui.header import apply_lecture_mode, lecture_on, page_header

page_header(
    "specviz: speculative decoding, token by token",
    "Teaching point: a cheap draft guesses, the big model checks all guesses in one pass, and a careful accept/reject "
    "rule makes the result exactly what the big model alone would have written.",
)
apply_lecture_mode(lecture_on())  # turned on on another page: the home page has no sidebar toggle of its own
with st.spinner("Loading specviz (the models and charts: a few seconds on a fresh server)…"):
    from specviz.engine.loading.catalogue import presets_for
    from specviz.engine.loading.models import ASSETS, BUNDLED_TARGET
    from specviz.errors import SpecvizError
    from specviz.measure.bench import recorded_benches
    from specviz.measure.timing import DISAGREES, against_bench, agreement_words
    from specviz.ui.controls import (
        active_sources,
        chat_prompt,
        drafted_as_the_pair_can,
        first_run_note,
        first_run_settings,
        recommended_draft_vocab,
    )
    from specviz.ui.render import cached_versus_plain, show_text
    from specviz.ui.verify_curve import show_verify_curve
    from specviz.viz.explain import ALPHA_HELP
st.markdown(
    """
Generating text one token at a time wastes the hardware: every step streams all of the target model's weights from
memory to produce a single token. **Speculative decoding** lets a small, cheap **draft** model guess the next K
tokens, then the big **target** model checks all K guesses in **one** forward pass. Each guess x is kept with
probability **min(1, p(x)/q(x))** (p: target, q: draft); at the first rejection a correction is drawn from what the
target still owes, **max(0, p − q)**; if all K pass, the target's pass gives a **bonus** token for free. The output
has *exactly* the target's distribution, and when the draft agrees often, each expensive pass yields several tokens.

The cheapest draft is no second model at all but **the target itself, compressed**: its own weights rounded to 4 bits
read an eighth of the bytes per step, and where a step's time is the time to stream the weights from memory, that
makes a draft step a fraction of a target step while its guesses stay nearly the target's (smollm2: 0.44 of a step on
an AVX-512 BF16 CPU, measured 1.49x; on an AVX2 CPU the 4-bit arithmetic itself is slow, 0.8 of a step, and it loses:
the round page runs it, docs/speed.md has both).
"""
)

TOY_COSTS = (
    " Measured on an AMD EPYC (2 cores, float32, one torch thread, the lean forward, docs/speed.md): the bundled draft "
    "reads a tenth of the target's weights, and in a round's back-to-back draft steps each costs about a ninth of a "
    "target step (c ≈ 0.11); a verify pass over K + 1 tokens costs 1.1 steps and the round's bookkeeping (the accept "
    "test, the numbers this page shows) about 0.1 more, so the bench's best is about 1.9x where τ alone (3.5 at "
    "K = 5) would promise more: the calculator page explains the gap."
)
sources = active_sources()
prompt = chat_prompt(sources[0], presets_for(sources[0])["code"])  # an instruct pair's: in its chat template
st.subheader("Live: one run on the default pair")
draft_vocab = recommended_draft_vocab(sources[1])
vocab_note = f" The draft proposes from its {draft_vocab} most frequent tokens." if draft_vocab else ""
try:
    settings = drafted_as_the_pair_can(first_run_settings(draft_vocab), sources)
    result, measured_at, env = cached_versus_plain(sources, prompt, settings)
except SpecvizError as exc:
    st.error(str(exc))
else:
    spec, plain = result.spec, result.plain
    st.caption(first_run_note(*sources[:2]))
    show_text(spec)
    cols = st.columns(4)
    cols[0].metric("α (accepted / judged)", f"{spec.totals.alpha:.2f}", help=ALPHA_HELP)
    cols[1].metric("τ (tokens per target pass)", f"{spec.totals.tau:.2f}")
    cols[2].metric("Target passes (plain)", f"{spec.totals.rounds} ({plain.totals.rounds})")
    cols[3].metric("Measured speedup vs plain", f"{result.speedup:.2f}×", help=result.timing.words())
    temperature = settings.sampling.temperature
    if result.first_divergence is None:
        same = "The two outputs are identical token for token (compared just now)."
    elif settings.sampling.greedy:
        same = f"The two outputs differ from token {result.first_divergence + 1} on: see the race page for why."
    else:
        same = (
            f"The two outputs part at token {result.first_divergence + 1}: sampled, each draws its own random "
            "numbers, and both are draws from the target's distribution (the exactness lab shows why)."
        )
    bench = against_bench(
        result.speedup, result.timing.interval, env, settings.k, draft_vocab, temperature,
        recorded_benches(ASSETS / "bench"),
    )  # fmt: skip
    bench_note = "" if bench.verdict == DISAGREES else agreement_words(bench)  # a disagreement is a warning below
    st.markdown(result.summary_words())
    with st.expander("How this was measured"):
        st.caption(
            f"Measured at {measured_at} on {spec.meta.get('device', '?')} ({spec.meta.get('dtype', '?')}; "
            f"{env['cpu']}, load average {env['load_average']}).{vocab_note} "
            f"{result.timing.words()} {result.speeds_words()} "
            f"{bench_note} This server keeps the result for every visitor until it restarts. {same}"
            + (TOY_COSTS if sources[0] == BUNDLED_TARGET else "")
        )
        if bench.verdict == DISAGREES:
            st.warning(agreement_words(bench))

st.subheader("Why a verify pass is cheap: v(K) measured on both targets")
show_verify_curve()

st.subheader("Explore")
st.page_link(
    "pages/rounds.py",
    label="Round by round: draft, verify, accept/reject, commit, with the real numbers",
    icon=":material/slow_motion_video:",
)
st.page_link(
    "pages/calculator.py",
    label="Speedup calculator: expected tokens, speedup, best K, fed by costs measured here",
    icon=":material/calculate:",
)
st.page_link(
    "pages/exactness.py",
    label="Exactness lab: why the output is exactly the target's, and what each classic bug breaks",
    icon=":material/science:",
)
st.page_link(
    "pages/workload.py",
    label="Your workload: acceptance and speedup on your own prompts, with a go / no-go",
    icon=":material/fact_check:",
)
st.page_link(
    "pages/race.py",
    label="The race: plain vs speculative vs Hugging Face, timed token by token",
    icon=":material/sports_score:",
)
