"""The exactness lab on a real pair (specviz.engine.lab): plain and speculative samples agree, greedy is identical."""

from types import SimpleNamespace

import pytest

from specviz.core.sampling import SamplingSettings
from specviz.engine import lab as engine_lab
from specviz.engine.lab import greedy_equivalence, two_token_samples
from specviz.errors import SettingsError


def test_real_pair_two_token_samples_agree(load):
    pair = load("llama-target", "llama-truncated")
    calls = []
    result = two_token_samples(
        pair, "def add(a, b):", samples=100, k=2, sampling=SamplingSettings(1.0, top_k=4), seed=0,
        time_budget_s=600.0,  # the default 20 s cut this short on a busy machine; the budget has its own test below
        on_progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    assert result.samples == 100 and sum(result.speculative.values()) == 100 and not result.stopped_early
    assert all(len(key) == 2 for key in result.plain) and calls[-1] == (100, 100)
    assert result.chi2.dof >= 3 and result.chi2.p_value > 1e-6
    rows = result.table(pair.token_texts, top=5)
    assert len(rows) == 5 and {"tokens", "plain", "speculative"} <= rows[0].keys()


def test_real_pair_sampling_respects_the_time_budget_and_refuses_greedy(load):
    pair = load("llama-target", "llama-truncated")
    quick = two_token_samples(pair, "x = 1", samples=1000, sampling=SamplingSettings(1.0), time_budget_s=1e-4)
    assert quick.stopped_early and 1 <= quick.samples < 1000
    with pytest.raises(SettingsError, match="temperature"):
        two_token_samples(pair, "x = 1", sampling=SamplingSettings(0.0))
    with pytest.raises(SettingsError, match="draft"):
        two_token_samples(load("llama-target"), "x = 1")


@pytest.mark.parametrize("draft", ["llama-truncated", "llama-target", "llama-random"])
def test_greedy_equivalence_is_identical(load, draft):
    check = greedy_equivalence(load("llama-target", draft), "def add(a, b):", k=4, max_new_tokens=24)
    assert check.identical and check.plain_ids == check.speculative_ids and check.top2_margin is None


def test_greedy_equivalence_reports_the_first_divergence(load, monkeypatch):
    pair = load("llama-target", "llama-truncated")
    real = engine_lab.generate(pair, "def add(a, b):", engine_lab.RunSettings(method="plain", max_new_tokens=6)).output_ids
    fake = {"plain": real, "draft": real[:3] + ((real[3] + 1) % pair.vocab_size,) + real[4:]}
    monkeypatch.setattr(engine_lab, "generate", lambda pair, prompt, s: SimpleNamespace(output_ids=fake[s.method]))
    check = engine_lab.greedy_equivalence(pair, "def add(a, b):", k=2, max_new_tokens=6)
    assert not check.identical and check.first_divergence == 3
    assert check.plain_token == pair.token_texts[real[3]]
    assert check.top2_margin is not None and check.top2_margin >= 0
