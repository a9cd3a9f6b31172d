"""The first run a newcomer sees (home and round page: FIRST_RUN with the code preset) shows the lesson on the real
bundled pair and reads like code: a fixed seed, so this is one exact run, not a statistic."""

from collections import Counter

import pytest

from specviz.engine.decode import generate
from specviz.engine.loading.catalogue import BUNDLED_PRESETS
from specviz.engine.loading.models import load_pair
from specviz.ui.controls import FIRST_RUN, FIRST_RUN_NOTE, first_run_settings


@pytest.fixture(scope="module")
def first_run():
    pair = load_pair(device="cpu")  # the bundled pair, as the app loads it on a CPU
    return generate(pair, BUNDLED_PRESETS["code"], first_run_settings(pair.recommended_draft_vocab))


def most_repeated_line(text: str) -> int:
    counts = Counter(line.strip() for line in text.splitlines() if line.strip())
    return max(counts.values(), default=0)


def test_the_first_run_shows_rejections_and_residual_draws(first_run):
    corrections = [r for r in first_run.rounds if r.extra is not None and r.extra.kind == "correction"]
    assert len(corrections) >= 1  # a draft rejected: the accept/reject rule at work
    assert any(r.residual_top for r in corrections)  # its correction drawn from norm(max(0, p - q)), shown ranked
    assert any(r.accepted >= 1 for r in first_run.rounds)  # and drafts accepted: speculation pays somewhere


def test_the_first_run_reads_like_code(first_run):
    assert most_repeated_line(first_run.text) < 3  # greedy repeated "if not f: return f.read(1)" three times
    finished = first_run.text[: first_run.text.rfind("\ndef ")]  # the run stops mid-way through the next function
    assert finished.count("\n") >= 3
    compile(BUNDLED_PRESETS["code"] + finished + "\n", "first-run", "exec", dont_inherit=True)  # the function parses


def test_the_page_says_what_the_first_run_is():
    t, seed, k = FIRST_RUN["temperature"], FIRST_RUN["seed"], FIRST_RUN["k"]
    assert 0.5 <= t <= 0.8  # low enough to read, high enough to reject
    assert f"temperature {t:g}" in FIRST_RUN_NOTE and f"seed {seed}" in FIRST_RUN_NOTE and f"K = {k}" in FIRST_RUN_NOTE
    assert f"{FIRST_RUN['max_new_tokens']} new tokens" in FIRST_RUN_NOTE
