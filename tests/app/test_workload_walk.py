"""The workload page as an engineer trying it walked it: settings to copy only where the JSON has
them too, with the draft vocabulary the measurement used; a prediction under its measured figure says why; a second
measurement that disagrees with the first says so; the rule before a run; one name per setting; "1 prompt"."""

from __future__ import annotations

import json
import time
from dataclasses import replace

from app_helpers import open_page, text

from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.engine.costs import MeasuredCosts
from specviz.measure.recommend import GO_SPEEDUP, MIN_PROMPTS, RULE, judge, verdict_document
from specviz.measure.workload import PairedRun

TRIMMED = RunSettings(draft_vocab=1024)  # the walk's draft vocabulary
META = {"target": "t", "draft": "d-model", "device": "cpu", "dtype": "float32"}


def run(method, committed, drafted, wall, prompt, settings):
    """A run of `method` committing `committed` tokens per round from `drafted` drafts in `wall` seconds."""
    accepted = tuple(max(0, c - 1) for c in committed)
    judged = tuple(min(a + 1, d) for a, d in zip(accepted, drafted))
    ends = tuple(wall * (i + 1) / len(committed) for i in range(len(committed)))
    body = replace(settings, method=method, stop_at_eos=False).to_dict()
    ids = tuple(range(sum(committed)))
    k = 0 if method == "plain" else settings.k
    return RunRecord(
        "specviz", method, k, prompt, "", ids, committed, drafted, accepted, judged, ends, wall, settings=body
    )


def paired(speedups, prompt, method="draft", settings=TRIMMED, rounds=((5, 4), (2, 4))):
    """Repeats that measured these speedups over plain runs of as many tokens in 0.03 s."""
    committed, drafted = zip(*rounds)
    n = sum(committed)
    plains = tuple(run("plain", (1,) * n, (0,) * n, 0.03, prompt, settings) for _ in speedups)
    return PairedRun(tuple(run(method, committed, drafted, 0.03 / s, prompt, settings) for s in speedups), plains)


def page_with(records, costs=None, settings=TRIMMED, **state):
    at = open_page("pages/workload.py")
    at.session_state["workload_records"] = records
    at.session_state["workload_settings"] = (settings, META, ["draft"], [4], costs)  # as run_here stores
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def everything(at) -> list[str]:
    return [text(e) for kind in (at.caption, at.markdown, at.info, at.warning, at.success) for e in kind]


def test_no_verdict_yet_offers_no_settings_as_the_json_says(tiny_default):
    """A past bug: at 'No verdict yet' (3 prompts) the page offered vLLM and HF settings the JSON had as null."""
    records = [paired((1.2, 1.3), f"p{i}") for i in range(3)]
    at = page_with(records)
    assert not at.exception
    assert any(text(i).startswith("No verdict yet") for i in at.info)
    assert not at.code  # nothing to copy
    assert any(
        text(c) == f"No deployment settings are offered without a verdict (at least {MIN_PROMPTS} prompts): nothing "
        "is shown yet to pay."
        for c in at.caption
    )
    group = verdict_document(judge(records, "d-model", 1.0))["groups"][0]
    assert group["verdict"] == "no verdict" and group["vllm_config"] is None and group["hf_generate"] is None


def test_a_go_offers_settings_and_says_they_run_the_whole_draft_vocabulary(tiny_default):
    """A past bug: the settings left out the draft vocabulary (1024) the measurement used."""
    records = [paired((1.5, 1.6), f"p{i}") for i in range(5)]
    at = page_with(records)
    assert not at.exception
    assert any(text(s).startswith("GO: ") for s in at.success)
    configs = [json.loads(c.value) for c in at.code if c.language == "json"]
    assert configs == [{"method": "draft_model", "num_speculative_tokens": 4, "model": "d-model"}]
    notes = [text(w) for w in at.warning if "draft vocabulary 1024" in text(w)]
    assert len(notes) == 1 and "Neither vLLM's --speculative-config for a draft model nor Hugging Face's" in notes[0]
    group = verdict_document(judge(records, "d-model", 1.0))["groups"][0]
    assert group["vllm_config"] == configs[0] and group["draft_vocab"] == 1024 and group["deploy_note"] == notes[0]


def costs_with(verify):
    """Costs timed at a 10 ms target step with these v(K) (in target steps) and a free lookup."""
    return MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.001, 0.01, tuple(v * 0.01 for v in verify))


def test_a_prediction_under_its_measured_figure_says_why(tiny_default):
    """A past bug: n-gram's prediction (0.67x) stood under its measured 0.97x while the caption called it the upper
    bound; v(1) timed at 1.56, above v(4) at 1.13, had passed the plausibility guard."""
    costs = costs_with((1.56, 1.40, 1.25, 1.13))
    ngram = RunSettings(method="ngram", k=4)
    rounds = ((2, 1), (1, 1), (1, 0), (2, 1))  # a lookup drafting one token or none: tau 1.5
    records = [paired((1.4, 1.5), f"p{i}", "ngram", ngram, rounds) for i in range(5)]
    at = page_with(records, costs, ngram)
    assert not at.exception
    said = everything(at)
    assert (
        "v(1) was timed at 1.56 target steps, above v(4) at 1.13; v(2) was timed at 1.40 target steps, above v(4) at "
        "1.13; v(3) was timed at 1.25 target steps, above v(4) at 1.13: a verify pass over fewer tokens cannot cost "
        "more than one over more, so that is timing noise, and the predictions take each v(K) as the cheapest pass "
        "timed at K or more drafts."
    ) in said
    below = [s for s in said if s.startswith("N-gram lookup (prompt lookup), K = 4: predicted ")]
    assert len(below) == 1 and "predicted 1.37x, below the measured 1.45x, so here it is no upper bound" in below[0]


def test_a_second_measurement_that_disagrees_with_the_first_says_so(tiny_default):
    """A past bug: the same 3 prompts measured twice, minutes apart, gave 0.87x [0.83, 0.91] then 0.97x [0.96, 0.97]."""
    settings = RunSettings(draft_vocab=1024)
    earlier = {(("specviz", "draft", 4)): (0.87, 0.83, 0.91)}
    key = "the same prompts and settings"
    now = time.time()
    records = [paired(s, f"p{i}") for i, s in enumerate([(0.96, 0.97), (0.965, 0.97), (0.96, 0.965)])]
    history = {1: {"id": 1, "key": key, "when": now - 300, "load": 0.8, "figures": earlier}}
    at = page_with(
        records,
        settings=settings,
        workload_history=history,
        workload_measurement={"id": 2, "key": key, "when": now, "load": 1.9},
    )
    assert not at.exception
    warned = [text(w) for w in at.warning if text(w).startswith("Measured again, and the two disagree: ")]
    assert len(warned) == 1, [text(w) for w in at.warning]
    assert "draft model, K = 4: 0.96x" in warned[0] and "0.87x (0.83–0.91) 5 min before" in warned[0]
    assert "(load average 0.8 then, 1.9 now)" in warned[0]
    assert any("not a change in this machine's speed between measurements" in c for c in everything(at))


def test_the_rule_and_the_minimum_are_on_the_page_before_a_run(tiny_default):
    """A past bug: the GO rule was stated only in the JSON, the 5-prompt minimum only after a run."""
    at = open_page("pages/workload.py")
    assert not at.exception
    rule = [text(c) for c in at.caption if RULE in text(c)]
    assert len(rule) == 1 and f"over at least {MIN_PROMPTS} prompts" in rule[0] and f"{GO_SPEEDUP:.2f}x" in rule[0]


def test_one_name_per_setting_and_one_prompt_is_singular(tiny_default):
    """A past bug: 'draft, K = 2' beside 'draft model, K = 2', 'ngram' beside 'n-gram lookup', 'over 1 prompts', and
    '3/24 timed runs' in progress against '12 of 12 runs measured'."""
    records = [paired((1.2, 1.3), "p0")]
    at = page_with(records)
    assert not at.exception
    said = everything(at)
    assert not [s for s in said if "draft, K" in s or "draft K=" in s or "over 1 prompts" in s]
    assert any("over 1 prompt and its timing repeats" in s for s in said)
    assert any(s.startswith("The speedup of draft model, K = 4: Timed on one prompt") for s in said)
    tables = [d.value for d in at.dataframe if "method" in d.value.columns]  # the summary and the per-prompt table
    assert len(tables) == 2 and all(set(t["method"]) == {"draft model"} for t in tables)
    assert any(
        s.startswith(
            "1 of 1 results (prompt × method × K) measured, each timed 2 times against plain runs of the same prompt"
        )
        for s in said
    )


def test_the_progress_bar_counts_in_the_words_of_the_count_after_the_run():
    from specviz.ui.workload import measured_words, progress_text

    assert progress_text(3, 24, 2) == "3 of 24 timed runs: 12 results (prompt × method × K), each timed 2 times"
    assert measured_words(12, 12, 2).startswith("12 of 12 results (prompt × method × K) measured, each timed 2 times")
    assert progress_text(1, 3, 1, served=True) == "1 of 3 prompts through the server"
