"""A real vLLM server with n-gram lookup and no per-request metrics: specviz falls back to its Prometheus counters.

Totals only (no rounds), one request at a time, and a run during which someone else used the server says so.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from vllm_servers import NGRAM_CONFIG, serve  # noqa: E402

from specviz.cli import main
from specviz.core.settings import RunSettings
from specviz.engine.loading.models import ASSETS, BUNDLED_TARGET, load_pair
from specviz.measure.lanes import run_method
from specviz.measure.prompts import PromptRow, read_workload
from specviz.remote import prometheus
from specviz.remote.errors import ConcurrencyUnsupported
from specviz.remote.vllm import connect, measure

PROMPTS = read_workload(ASSETS / "workloads" / "code.jsonl").rows[:2]


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    yield from serve("ngram-counters", NGRAM_CONFIG, tmp_path_factory)


@pytest.fixture(scope="module")
def server(vllm):
    return connect(vllm.url, method="ngram")


def settings(server, tokens=32):
    return server.settings(RunSettings(max_new_tokens=tokens, stop_at_eos=False))


def test_connect_finds_the_counters_and_k(server):
    assert (server.per_request, server.counters, server.k, server.method) == (False, True, 4, "ngram")
    assert any("K from the per-position counters" in note for note in server.notes)


def test_counter_totals_are_consistent_and_the_text_is_the_targets(server):
    pair = load_pair(BUNDLED_TARGET, None, device="cpu", dtype="float32")
    for row in PROMPTS:
        record = server.run(row.prompt, settings(server), row.tag)
        moved = record.meta["counters"]
        assert record.per_round_committed == ()
        assert record.per_round_accepted is None  # totals only
        assert (record.proposed, record.accepted) == (
            moved["spec_decode_num_draft_tokens_total"],
            moved["spec_decode_num_accepted_tokens_total"],
        )
        assert record.rounds == moved["iteration_tokens_total_count"]
        assert record.committed == 32
        assert record.tau == pytest.approx(32 / record.rounds)
        assert record.totals.drafting_rounds >= 1
        assert record.acceptance_rate == pytest.approx(record.accepted / record.proposed)
        # a greedy speculative run commits the target's own greedy text, whoever drafts
        assert record.text == run_method(pair, row.prompt, replace(settings(server), method="plain"), "plain").text
        assert "warnings" not in record.meta


def run_beside_another_client(server, vllm):
    """Our request while another client's long one is being decoded: the record of ours."""
    request = urllib.request.Request(
        f"{vllm.url}/v1/completions",
        json.dumps(
            {"model": server.model, "prompt": "import os\n", "max_tokens": 200, "ignore_eos": True, "temperature": 0}
        ).encode(),
        {"Content-Type": "application/json"},
    )
    ours_done = threading.Event()

    def other_client() -> None:  # one long request after another until ours is done: ours always overlaps one
        while not ours_done.is_set():
            urllib.request.urlopen(request, timeout=120).read()

    other = threading.Thread(target=other_client)
    other.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until the other request is being decoded
            text = urllib.request.urlopen(f"{vllm.url}/metrics", timeout=5).read().decode()
            if prometheus.total(prometheus.parse(text), "vllm:num_requests_running"):
                break
            time.sleep(0.02)
        return server.run(PROMPTS[0].prompt, settings(server, 8))
    finally:
        ours_done.set()
        other.join()


def test_another_clients_request_is_detected(server, vllm):
    # The other client sends one request after another until ours is done; tried up to three times all the same.
    records = []
    for _ in range(3):
        records.append(run_beside_another_client(server, vllm))
        if "warnings" in records[-1].meta:
            break
    assert "other clients used the server" in records[-1].meta["warnings"][0], [r.meta for r in records]
    assert records[-1].rounds is None  # the engine-step count is not this request's alone


def test_concurrency_needs_per_request_metrics(server, vllm, capsys, tmp_path):
    with pytest.raises(ConcurrencyUnsupported, match="per-request metrics"):
        list(measure(server, [PromptRow("x")], RunSettings(), concurrency=2))
    prompts = tmp_path / "p.txt"
    prompts.write_text("def f():\n")
    code = main(["measure", str(prompts), "--server", vllm.url, "--method", "ngram", "--concurrency", "2"])
    assert code == 2
    assert "cannot tell concurrent requests apart" in capsys.readouterr().err
