"""The race page runs every lane with short outputs (under greedy decoding in float32 all texts are identical), and its
K sweep puts each measured speedup next to τ / (drafts per round · c + v) from the τ and the costs it measured."""

import math

import pytest
from app_helpers import click, open_page

from specviz.methods import DRAFT, EAGLE, EAGLE3, HF, HF_ASSISTED, LANES, MEDUSA, PLAIN, SPECVIZ, get, lane_label


def test_race_with_short_outputs(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.number_input(key="exit_layer").set_value(2).run()  # early exit's E: the tiny target has 3 layers
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(10).run()
    k = at.sidebar.slider(key="k").value
    at = click(at, "Start the race")
    assert not at.exception
    assert not at.error
    raced, settings, env = at.session_state["race"]
    results = raced.records
    assert settings.sampling.greedy
    assert env["dtype"] == "float32"
    assert [r.method for r in results] == list(LANES)
    plain = results[0]
    assert len(plain.output_ids) == 10  # this prompt meets no EOS within 10 tokens: every lane stops at the limit
    assert all(r.output_ids == plain.output_ids for r in results)  # greedy in float32: token for token the same
    table = at.dataframe[0].value.set_index("lane")
    assert len(table) == len(LANES)
    assert list(table["same text as plain"]) == ["✓"] * len(LANES)
    assert list(table["tokens"]) == [10] * len(LANES)
    assert (table["tokens/s"] > 0).all()
    assert (table["time to first token (ms)"] > 0).all()
    assert list(table["repeats"]) == [3] * len(LANES)  # each lane timed 3 times, paired with plain
    assert table["speedup vs plain"].iloc[0] == "1.00× (1.00–1.00)"
    for lane in LANES[1:]:
        timed = raced.timings[lane]
        assert len(timed.ratios) == 3
        assert min(timed.ratios) <= timed.speedup <= max(timed.ratios)
    assert list(table["speedup vs plain"]) == [raced.timings[lane].cell() for lane in LANES]
    caption = " ".join(c.value for c in at.caption)
    assert "greedy: after a warm-up of each, each timed 3 times in alternating order" in caption
    assert "The draft-model lane: Not comparable with a recorded bench" in caption  # a tiny test pair, not the bench's
    plain_row = table.iloc[0]
    assert plain_row["α"] == "–"
    assert plain_row["τ"] == 1.0  # nothing judged; one token per target pass
    ours = [lane_label(m) for m in LANES[1:] if get(m).engine == SPECVIZ]  # draft, n-gram, EAGLE-1 head
    for row in (table.loc[lane] for lane in ours):  # specviz's lanes: K drafts per round, at most K + 1 per round
        assert 0 <= float(row["α"]) <= 1
        assert 1 <= row["τ"] <= k + 1
    hf = table.loc[[lane_label(m) for m in LANES if get(m).engine == HF]]
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
    results = at.session_state["race"][0].records
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
    assert "each timed 3 times in alternating order" in " ".join(c.value for c in at.caption)
    for row in rows[:: 1 if costs.implausible else 2]:  # every measured point: the median of 3 paired repeats
        assert row["low"] <= row["speedup"] <= row["high"]
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
        v = predicted["verify_cost"]  # each round priced at v(its drafts), v(K) taken monotone (measure.predict)
        low, high = min(costs.verify_monotone[: measured["k"]]), max(costs.verify_monotone[: measured["k"]])
        assert low - 1e-9 <= v <= high + 1e-9  # an interpolated v(k) may round one ulp past an end
        round_cost = drafts * costs.c + v
        assert predicted["speedup"] == pytest.approx(predicted["tau"] / round_cost)


def test_a_target_with_no_head_beside_it_is_not_offered_the_head_lane(tiny_default, monkeypatch):
    at = open_page("pages/race.py")
    head_lanes = [m for m in LANES if get(m).loads_head]
    assert head_lanes and set(head_lanes) <= set(at.multiselect[0].value)  # the tiny targets have a head beside them
    monkeypatch.setattr("specviz.engine.loading.models.find_heads", lambda target, head: {})
    at = open_page("pages/race.py")
    assert not at.exception
    assert not set(head_lanes) & set(at.multiselect[0].value)
    assert not {lane_label(m) for m in head_lanes} & set(at.multiselect[0].options)
    assert "No EAGLE-1 head, EAGLE-3 head, Medusa heads or MTP module sit beside this target" in " ".join(
        c.value for c in at.caption
    )


def test_a_target_with_only_an_eagle_head_is_offered_its_lane_and_not_the_others(tiny_default, monkeypatch):
    monkeypatch.setattr("specviz.engine.loading.models.find_heads", lambda target, head: {EAGLE: "beside"})
    at = open_page("pages/race.py")
    assert not at.exception
    assert lane_label(EAGLE) in at.multiselect[0].options and lane_label(MEDUSA) not in at.multiselect[0].options
    assert lane_label(EAGLE3) not in at.multiselect[0].options
    assert "No EAGLE-3 head, Medusa heads or MTP module sit beside this target" in " ".join(c.value for c in at.caption)


def test_a_fitted_threshold_leaves_the_hugging_face_assisted_lane_out_and_races_the_rest(tiny_default, monkeypatch):
    """transformers refits a confidence threshold only with scikit-learn, which specviz does not install: the race
    leaves that one lane out and says why, instead of failing every lane."""
    monkeypatch.setattr("specviz.engine.compare.is_sklearn_available", lambda: False)
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(8).run()
    at.sidebar.selectbox(key="k_schedule").set_value("confidence").run()
    at.sidebar.toggle(key="fit_threshold").set_value(True).run()
    at.multiselect[0].set_value([PLAIN, DRAFT, HF_ASSISTED]).run()
    left_out = [c.value for c in at.caption if "is left out of this race" in c.value]
    assert len(left_out) == 1  # that lane alone
    assert left_out[0].startswith(f"{lane_label(HF_ASSISTED)} is left out") and "scikit-learn" in left_out[0]
    at = click(at, "Start the race")
    assert not at.exception
    assert not at.error
    assert [r.method for r in at.session_state["race"][0].records] == [PLAIN, DRAFT]


def test_early_exit_lanes_at_an_exit_layer_the_target_lacks_are_not_offered_and_the_page_says_why(tiny_default):
    at = open_page("pages/race.py")  # the sidebar's default E = 4; the tiny target has L = 3
    exiting = [lane_label(lane) for lane in LANES if get(lane).exits_early]  # the options show lane labels
    assert exiting and not set(exiting) & set(at.multiselect[0].options)
    assert any("has L = 3: set the exit layer E in the sidebar from 1 to 2" in c.value for c in at.caption)
    at.sidebar.number_input(key="exit_layer").set_value(2).run()
    assert set(exiting) <= set(at.multiselect[0].options)


def player_data(at) -> dict:
    """The race player's data as the page mounted it (AppTest runs no JavaScript; the data is what the browser gets)."""
    import json

    (element,) = [e for e in at.get("bidi_component") if e.proto.component_name == "specviz.race_player"]
    return json.loads(element.proto.json)


def test_the_player_gets_every_lanes_text_in_order_at_its_recorded_times(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(12).run()
    at.multiselect[0].set_value([PLAIN, DRAFT, HF_ASSISTED]).run()
    at = click(at, "Start the race")
    assert not at.exception
    assert not at.error
    raced = at.session_state["race"][0]
    data = player_data(at)
    assert [lane["method"] for lane in data["lanes"]] == [PLAIN, DRAFT, HF_ASSISTED]
    from specviz.engine.loading.models import load_pair

    tokenizer = load_pair(*tiny_default).tokenizer
    for lane, record in zip(data["lanes"], raced.records, strict=True):
        assert lane["label"] == lane_label(record.method)
        assert "".join(lane["pieces"]) == tokenizer.decode(record.output_ids, skip_special_tokens=True)
        assert sum(lane["tokens"]) == len(record.output_ids) == 12  # every token, none twice
        assert lane["tokens"] == list(record.per_round_committed)  # in the order the target passes gave them
        times = lane["times"]
        assert times == sorted(times) and times[0] > 0  # arrivals never go back
        assert times == list(record.round_end_s)  # the lane's own clock, not a drawing's
        assert times[-1] <= lane["end_s"] == record.wall_s  # the playback ends at the measured decode time
        # the last token arrives as decoding ends (20 ms: the run is a pool thread's, beside the page's polling one)
        assert lane["end_s"] - times[-1] < max(0.05 * lane["end_s"], 0.02)
        assert lane["tokens_per_s"] == pytest.approx(raced.tokens_per_s[record.method])  # the median repeat replayed
    captions = " ".join(c.value for c in at.caption)
    assert "decoded one after another with nothing drawn while they ran" in captions
    assert "replays each lane's recorded arrival times at their real pace" in captions


def test_the_bench_table_says_no_hf_lane_where_a_bench_raced_none(tiny_default):
    at = open_page("pages/race.py")
    assert not at.exception
    table = at.dataframe[-1].value  # the recorded benches across CPU kinds
    column = list(table["HF assisted at that K"])
    assert "no HF lane" in column  # most bundled benches race no Hugging Face lane
    assert any(cell.endswith("×") for cell in column)  # one does (cpu-float32-vocab1024.json)
    assert not table.isna().any().any() and "None" not in table.astype(str).values


def test_a_race_whose_wait_a_rerun_interrupted_is_waited_for_again_and_shown_before_the_sweep_runs(tiny_default):
    """Pressing "Run the K sweep" while the page's race runs reruns the page: the race's wait is cut, its run goes
    on in the pool. The rerun waits for that race again (kept under RACE_RUN) and shows it, then runs the sweep."""
    import threading

    from specviz.ui.hall import lecture_hall, session_id
    from specviz.ui.race import RACE_RUN

    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(6).run()
    at = click(at, "Start the race")
    finished, settings, env = at.session_state["race"]
    del at.session_state["race"]
    gate = threading.Event()
    hall = lecture_hall()
    ticket = hall.submit(("race", "interrupted"), lambda: gate.wait(60) and finished, session_id(), "race", False)
    # what an interrupted wait leaves in the session: the ticket and what the race was started with
    at.session_state[RACE_RUN] = (hall, ticket, "race", "race", "Racing")
    at.session_state["race_started"] = (settings, env)
    gate.set()
    at = click(at, "Run the K sweep")
    assert not at.exception and not at.error
    assert at.session_state["race"][0] is finished  # the interrupted race, shown
    assert RACE_RUN not in at.session_state  # handed out once
    assert "sweep" in at.session_state  # and the button pressed meanwhile did its work


def test_a_race_says_what_it_runs_and_its_pace_while_it_runs():
    from specviz.ui.race import race_progress, race_words

    assert race_words(9) == "Racing 9 lanes (each once untimed, then 27 timed runs)"
    said = []
    advance = race_progress(lambda fraction, text: said.append((fraction, text)), [PLAIN, DRAFT])
    advance(1, 6, DRAFT)
    fraction, text = said[-1]
    assert fraction == pytest.approx(1 / 6)
    assert text.startswith(f"1 of 6 timed runs done (last: {lane_label(DRAFT)}), about ") and text.endswith(" s left")
