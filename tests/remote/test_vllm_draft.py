"""A real vLLM server speculating with the bundled draft model, per-request metrics at the detailed level.

What specviz measures through it must be what specviz measures in process: the same text, the same verify steps
(once the two engines' steps line up: see specviz/remote/agreement.py for why the first ones differ), and counts that
agree with the server's own Prometheus counters. One test kills the server mid-workload: every test asks the shared
fixture for the server, which starts a new one when the last was killed, so the tests run in any order.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from specviz.cli import main
from specviz.core.settings import RunSettings
from specviz.engine.loading.models import ASSETS, BUNDLED_DRAFT, BUNDLED_TARGET, load_pair
from specviz.measure.lanes import run_method
from specviz.measure.prompts import PromptRow, read_workload
from specviz.remote import prometheus
from specviz.remote.agreement import compare
from specviz.remote.errors import ServerHTTPError, UnknownModel
from specviz.remote.vllm import connect, measure

PROMPTS = read_workload(ASSETS / "workloads" / "code.jsonl").rows[:3]
TOKENS = 32
KEY_ENV, KEY = "SPECVIZ_TEST_VLLM_KEY", "sk-never-shown-4242"


@pytest.fixture
def vllm(vllm_draft_server):
    """The shared server (tests/conftest.py), alive: started again if a test killed it (a new port, so per test)."""
    return vllm_draft_server()


@pytest.fixture
def server(vllm):
    return connect(vllm.url)


@pytest.fixture(scope="module")
def pair():
    return load_pair(BUNDLED_TARGET, BUNDLED_DRAFT, device="cpu", dtype="float32")


def settings(server, tokens=TOKENS):
    return server.settings(RunSettings(max_new_tokens=tokens, stop_at_eos=False))


def test_connect_describes_the_server(server, vllm):
    assert (server.k, server.method, server.per_request, server.counters) == (4, "draft", True, True)
    assert server.version == "0.32.0"
    assert server.model == BUNDLED_TARGET
    assert server.url == vllm.url
    assert any("K from the per-request metrics" in note for note in server.notes)


@pytest.mark.prepush  # the pre-push loop's one real-server check: vLLM agrees with specviz
def test_steps_and_text_agree_with_specviz(server, pair):
    for row in PROMPTS:
        local = run_method(pair, row.prompt, settings(server), "draft")
        served = server.run(row.prompt, settings(server), row.tag)
        assert served.text == local.text
        assert served.output_ids == local.output_ids
        assert served.committed == local.committed == TOKENS
        found = compare(served, local, TOKENS)
        # The first verify steps may differ (vLLM's prefill commits a token before it drafts, specviz's does not);
        # once one step starts where a specviz round starts, every later one is the same step.
        assert found.first_same is not None, found
        assert found.first_same <= 2, found
        assert found.same_after_first == found.steps - found.first_same, found


def test_counts_agree_with_the_servers_counters(server):
    record = server.run(PROMPTS[0].prompt, settings(server))
    moved = record.meta["counters"]
    verify_steps = [(d, a) for d, a in zip(record.per_round_drafted, record.per_round_accepted) if d]
    assert moved["spec_decode_num_drafts_total"] == len(verify_steps)
    assert moved["spec_decode_num_draft_tokens_total"] == record.proposed
    assert moved["spec_decode_num_accepted_tokens_total"] == record.accepted
    assert moved["accepted_per_pos"] == [sum(a > i for _, a in verify_steps) for i in range(4)]
    assert moved["iteration_tokens_total_count"] == record.rounds  # one engine step per round, the prefill included
    assert moved["generation_tokens_total"] == record.committed == TOKENS
    assert record.acceptance_rate == pytest.approx(
        moved["spec_decode_num_accepted_tokens_total"] / moved["spec_decode_num_draft_tokens_total"]
    )
    assert record.tau == pytest.approx(TOKENS / moved["iteration_tokens_total_count"])
    assert 0 < record.alpha <= 1
    assert "warnings" not in record.meta


def test_concurrent_requests_give_the_same_records(server):
    rows = [PromptRow(row.prompt, row.tag) for row in PROMPTS]
    together = {r.prompt: r.run for r in measure(server, rows, settings(server, 16), concurrency=3)}
    for row in rows:
        alone = server.run(row.prompt, settings(server, 16))
        assert together[row.prompt].per_round_accepted == alone.per_round_accepted
        assert together[row.prompt].text == alone.text
        assert "counters" not in together[row.prompt].meta


def test_the_servers_own_message_on_a_bad_request(server):
    with pytest.raises(ServerHTTPError, match="HTTP 400 from the server: .*max_model_len=256"):
        server.run(PROMPTS[0].prompt, settings(server, 300))


def test_unknown_model_lists_the_served_ones(vllm):
    with pytest.raises(UnknownModel, match=f"it serves: {BUNDLED_TARGET}"):
        connect(vllm.url, model="gpt-5")


def test_cli_measures_through_the_server_without_showing_the_key(vllm, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": r.prompt, "tag": r.tag}) + "\n" for r in PROMPTS[:2]))
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    code = main(
        [
            "measure",
            str(prompts),
            "--server",
            vllm.url,
            "--api-key-env",
            KEY_ENV,
            "--max-new-tokens",
            "16",
            "--json",
            str(out_json),
            "--csv",
            str(out_csv),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    assert [r["source"] for r in doc["runs"]] == ["vllm", "vllm"]
    assert doc["runs"][0]["server"] == vllm.url
    assert all(r["speedup"] is None and r["plain_tokens_per_s"] is None for r in doc["runs"])
    assert doc["settings"]["server"] == vllm.url
    assert doc["settings"]["k"] == 4
    assert "–x" in out  # the summary's speedup: not measured
    for text in (out, err, out_json.read_text(), out_csv.read_text()):
        assert KEY not in text
    code = main(["measure", str(prompts), "--server", vllm.url, "--k", "8"])
    assert code == 2
    assert "drafts K=4 tokens per step" in capsys.readouterr().err


@pytest.mark.slow
def test_killed_mid_workload_keeps_the_finished_prompts(vllm, vllm_draft_server, tmp_path, capsys):
    """The server does not survive it: the next test that asks the shared fixture gets a new one."""
    prompts = tmp_path / "p.jsonl"
    rows = read_workload(ASSETS / "workloads" / "code.jsonl").rows  # 20: many left when the kill comes, however fast
    # the server answers (with 6, CI's server finished all of them before the killer's next look at its metrics)
    prompts.write_text("".join(json.dumps({"prompt": r.prompt, "tag": r.tag}) + "\n" for r in rows))
    finished = lambda: prometheus.total(
        prometheus.parse(  # noqa: E731
            urllib.request.urlopen(f"{vllm.url}/metrics", timeout=5).read().decode()
        ),
        "vllm:request_success_total",
    )
    start = finished()

    def kill_after_two_prompts():  # the probe, the warm-up, then three prompts finished on the server: the client
        # has the first two (one request at a time: the third was sent after the second's answer arrived); the
        # third's answer may not have reached it before the kill
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and vllm.process.poll() is None:
            if finished() >= start + 5:
                vllm.kill()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_after_two_prompts)
    killer.start()
    out_json = tmp_path / "r.json"
    code = main(["measure", str(prompts), "--server", vllm.url, "--max-new-tokens", "48", "--json", str(out_json)])
    killer.join()
    err = capsys.readouterr().err
    assert code == 2
    assert "stopped: keeping the" in err
    assert "error:" in err
    assert vllm.process.poll() is not None  # killed, as the test meant
    assert vllm_draft_server().process.poll() is None  # and the shared fixture starts a live one in its place
    kept = json.loads(out_json.read_text())["runs"]
    assert 2 <= len(kept) < len(rows)
    assert all(r["committed"] == 48 for r in kept)
