"""The race page runs every lane with short outputs (under greedy decoding in float32 all texts are identical), and its
K sweep puts each measured speedup next to τ / (drafts per round · c + v) from the τ and the costs it measured."""

import math

import pytest
import torch
from app_helpers import click, open_page

from specviz.core import stats
from specviz.methods import LANES


def test_race_with_short_outputs(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(10).run()
    k = at.sidebar.slider(key="k").value
    at = click(at, "Start the race")
    assert not at.exception
    assert not at.error
    results, greedy, dtype = at.session_state["race"]
    assert greedy
    assert dtype == torch.float32
    assert [r.method for r in results] == list(LANES)
    plain = results[0]
    assert len(plain.output_ids) == 10  # this prompt meets no EOS within 10 tokens: every lane stops at the limit
    assert all(r.output_ids == plain.output_ids for r in results)  # greedy in float32: token for token the same
    table = at.dataframe[0].value.set_index("lane")
    assert len(table) == 5
    assert list(table["same text as plain"]) == ["✓"] * 5
    assert list(table["tokens"]) == [10] * 5
    assert (table["tokens/s"] > 0).all()
    assert (table["time to first token (ms)"] > 0).all()
    plain_row, draft_row, ngram_row = table.iloc[0], table.iloc[1], table.iloc[2]
    assert plain_row["α"] == "–"
    assert plain_row["τ"] == 1.0  # nothing judged; one token per target pass
    for row in (draft_row, ngram_row):  # specviz's lanes: K drafts per round, at most K + 1 tokens per round
        assert 0 <= float(row["α"]) <= 1
        assert 1 <= row["τ"] <= k + 1
    hf = table.iloc[3:]
    assert (hf["α"] == "not reported").all()  # generate() does not report its acceptances
    assert ((hf["τ"] >= 1) & (hf["τ"] <= k + 1)).all()  # but its target passes are counted


def test_a_tree_lane_races_beside_the_chain_and_writes_the_same_greedy_text(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(10).run()
    at.multiselect[0].set_value(["plain", "draft"]).run()
    at.radio(key="race_tree").set_value("tree 2,2,1,1 (14 nodes)").run()  # 2 + 4 + 4 + 4: every node counted
    assert "its depth, 4, is the chain's K at equal depth" in " ".join(c.value for c in at.caption)
    at = click(at, "Start the race")
    assert not at.exception
    assert not at.error
    results, _, _ = at.session_state["race"]
    assert [r.method for r in results] == ["plain", "draft", "tree"]
    assert results[2].output_ids == results[0].output_ids  # greedy tree speculation writes plain decoding's text
    table = at.dataframe[0].value.set_index("lane")
    assert list(table["same text as plain"]) == ["✓"] * 3


def test_k_sweep_shows_measured_and_predicted(tiny_default, monkeypatch):
    """With the target as its own draft α = 1 and τ = drafts per round + 1; the prediction is τ / (drafts · c + v)."""
    import specviz.measure.race

    measured_costs, measure = [], specviz.measure.race.measure_costs

    def recording(*args, **kwargs):  # the page's own measurement, kept for the check below
        measured_costs.append(measure(*args, **kwargs))
        return measured_costs[-1]

    monkeypatch.setattr(specviz.measure.race, "measure_costs", recording)
    monkeypatch.setenv("SPECVIZ_DRAFT", tiny_default[0])
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(8).run()
    at = click(at, "Run the K sweep")
    assert not at.exception
    assert not at.error
    (costs,) = measured_costs
    sweep = at.session_state["sweep"]
    assert sweep.costs is costs
    rows = sweep.rows
    if costs.implausible:  # timed on a swamped machine: no prediction is drawn, and the page says why
        assert [(r["k"], r["kind"]) for r in rows] == [(k, "measured") for k in (1, 2, 4, 8)]
        assert any("No prediction is drawn" in w.value for w in at.warning)
        return
    assert [(r["k"], r["kind"]) for r in rows] == [
        (k, kind) for k in (1, 2, 4, 8) for kind in ("measured", "predicted from measured τ and costs")
    ]
    for measured, predicted in zip(rows[::2], rows[1::2], strict=True):
        drafts = predicted["drafts_per_round"]
        assert 0 < measured["speedup"] < math.inf
        assert predicted["alpha"] == 1.0  # its own draft: always accepted
        assert drafts <= measured["k"]
        assert predicted["tau"] == pytest.approx(drafts + 1)  # every draft plus a bonus
        round_cost = drafts * costs.c + stats.verify_cost_at(costs.verify_relative, drafts)
        assert predicted["speedup"] == pytest.approx(predicted["tau"] / round_cost)
