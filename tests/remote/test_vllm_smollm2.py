"""The real target through a real vLLM server: smollm2 served with n-gram lookup (K = 4), and the agreement command
on two short prompts through its chat template: texts equal, every placed step the same (vLLM's misses placed where
specviz's lookup missed: remote/agreement.py place)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from vllm_servers import PER_REQUEST, serve  # noqa: E402

from specviz import methods
from specviz.engine.loading.catalogue import SMOLLM2
from specviz.remote import agreement

K = 4
NGRAM_CONFIG = ["--speculative-config", json.dumps(methods.get(methods.NGRAM).vllm_config(K))]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    target, _ = SMOLLM2.sources()
    yield from serve("smollm2-ngram", [*NGRAM_CONFIG, *PER_REQUEST], tmp_path_factory, target=target)


def test_ngram_steps_on_smollm2_agree_with_specviz(server, tmp_path, capsys):
    out = tmp_path / "agreement.json"
    argv = ["assets/workloads/code.jsonl", "--server", server.url, "--pair", "smollm2", "--method", "ngram"]
    assert agreement.main([*argv, "--limit", "2", "--max-new-tokens", "24", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())["summary"]
    assert summary["pair"] == "smollm2" and summary["chat"] and summary["server"]["model"] == "smollm2"
    assert summary["texts_equal"] == 2
    assert summary["steps"] > 0 and summary["steps_same"] == summary["steps"], summary
