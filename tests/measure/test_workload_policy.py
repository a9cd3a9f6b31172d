"""The workload page's decisions (measure/workload_policy.py): the results' caption, how verdicts are shown, why no
deployment is offered, and what a server check found, on hand-built values."""

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.measure import workload_policy as policy
from specviz.measure.recommend import MIN_PROMPTS
from specviz.viz.notes import CAPTION, INFO, SUCCESS, WARNING

SERVED = {"server": "http://h:8000", "model": "m", "method": methods.DRAFT, "k": 3}


def test_the_run_context_names_greedy_seed_and_length_and_a_stop():
    base = RunSettings(sampling=SamplingSettings(0.0), seed=7, max_new_tokens=32)
    words = policy.run_context(base, {}, served=False, complete=True)
    assert words == " · greedy, seed 7, 32 new tokens per run"
    stopped = policy.run_context(base, {}, served=False, complete=False)
    assert stopped.startswith(" (stopped early: the finished ones are kept) · greedy")


def test_the_run_context_names_the_server_and_the_sampling_filters():
    base = RunSettings(sampling=SamplingSettings(0.7, top_k=20, top_p=0.9), seed=1, max_new_tokens=8)
    words = policy.run_context(base, SERVED, served=True, complete=True)
    label = methods.label(methods.DRAFT)
    assert words == (
        f" through http://h:8000 (m, {label}, K = 3) · temperature 0.7, top-k 20, top-p 0.9, seed 1, "
        "8 new tokens per run"
    )


def test_the_headline_says_go_no_go_or_why_there_is_no_verdict():
    assert policy.headline(True, "fast", True, "none").level == SUCCESS
    assert policy.headline(True, "fast", True, "none").text == "GO: fast"
    assert (policy.headline(False, "slow", True, "none").level, policy.headline(False, "slow", True, "").text) == (
        WARNING,
        "NO-GO: slow",
    )
    pending = policy.headline(None, "too few prompts", True, "none")
    assert (pending.level, pending.text) == (INFO, "No verdict yet. Too few prompts")
    served = policy.headline(True, "fast", False, "no baseline through a server")
    assert (served.level, served.text) == (INFO, "no baseline through a server")  # no GO without a plain baseline


def test_a_tag_verdict_is_shown_by_the_same_rule():
    assert policy.tag_verdict(True, "code", "r").level == SUCCESS
    assert policy.tag_verdict(False, "code", "r").text == "NO-GO for prompts tagged **code**: r"
    pending = policy.tag_verdict(None, "prose", "r")
    assert (pending.level, pending.text) == (INFO, "No verdict yet for prompts tagged **prose**: r")


def test_no_deployment_says_why_and_whether_a_tag_passes():
    assert policy.no_deployment_words(False, False) == (
        "No deployment settings are offered for a NO-GO: decoding plainly is the recommendation."
    )
    pending = policy.no_deployment_words(None, True)
    assert f"at least {MIN_PROMPTS} prompts" in pending
    assert pending.endswith(", except for the tags that pass, below.")
    assert "neither vLLM nor Hugging Face has it" in policy.no_deployment_words(True, False)


def test_greedy_drafts_are_warned_of_only_for_a_sampled_served_draft_model():
    assert policy.warns_of_greedy_drafts(True, 0.8, methods.DRAFT)
    assert not policy.warns_of_greedy_drafts(True, 0.0, methods.DRAFT)
    assert not policy.warns_of_greedy_drafts(False, 0.8, methods.DRAFT)
    assert not policy.warns_of_greedy_drafts(True, 0.8, "ngram")


def test_the_warnings_sentence_counts_the_warned_runs_and_quotes_the_first():
    assert policy.warnings_words([None, [], None]) is None
    assert policy.warnings_words([None, ["slow clock", "x"], ["other"]]) == (
        "2 run(s) carry warnings (in the JSON's meta.warnings), e.g.: slow clock"
    )


def test_the_server_check_lists_method_metrics_and_escapes_the_servers_words():
    found = {
        "server": "vllm *bold*",
        "models": ["a", "b"],
        "vllm_version": None,
        "max_model_len": 2048,
        "method": methods.DRAFT,
        "k": 4,
        "notes": ["n1"],
        "per_request": False,
        "counters": True,
    }
    words = policy.server_found_words(found)
    assert "*bold*" not in words  # a server's own words are text, not markdown
    assert "version not reported" in words and "context 2048 tokens" in words
    assert f"**{methods.label(methods.DRAFT)}**, K = **4**" in words
    assert "per-request metrics: **off**" in words
    assert words.endswith("**yes** (totals per prompt, at concurrency 1 only)")
    assert policy.server_found_words({**found, "counters": False, "per_request": True}).endswith("**none**")


def test_the_drafter_is_the_draft_shown_or_the_head_named():
    shown = policy.drafter_words("tiny", methods.DRAFT)
    assert shown == "the draft &#39;tiny&#39;: vLLM does not say which draft it runs"  # quoted, and shown as text
    assert policy.drafter_words(None, "eagle").startswith(f"the {methods.label('eagle')} beside it")


def test_prompts_to_compare_stay_between_one_and_the_cap():
    assert policy.compare_count(0, 8) == (1, 1)
    assert policy.compare_count(2, 8) == (2, 2)
    assert policy.compare_count(20, 8) == (8, 3)


def test_notes_read_as_sentences_and_earlier_comparisons_warn_only_on_disagreement():
    assert policy.sentence_case("the prediction is below") == "The prediction is below"
    assert policy.sentence_case("") == ""
    assert policy.earlier_note(True, "s").level == CAPTION
    assert policy.earlier_note(False, "s").level == WARNING
