"""A real vLLM server speculating with the shipped MTP module ({"method": "mtp"} on the MiMoForCausalLM re-export of
the bundled target, engine/heads/mimo.py): its greedy text is specviz's, and its verify steps are compared with
specviz's.

The re-export is not the same function at every step (engine/heads/mimo.py): the module's feature input is right in
direction but not in scale, and vLLM zeroes the embedding at position 0. The steps measure what that costs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from vllm_servers import PER_REQUEST, greedy_steps_agree, serve  # noqa: E402

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.engine.loading.models import ASSETS, load_pair
from specviz.measure.prompts import read_workload
from specviz.remote.launch import method_args, served_model
from specviz.remote.vllm import connect

PROMPTS = read_workload(ASSETS / "workloads" / "code.jsonl").rows[:3]
TOKENS = 32
MTP_CONFIG = method_args(methods.MTP, 4)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    mimo, tokenizer = served_model(methods.MTP, cache=tmp_path_factory.mktemp("mimo"))
    for started in serve("mtp", [*MTP_CONFIG, *PER_REQUEST], tmp_path_factory, target=mimo, tokenizer=tokenizer):
        yield connect(started.url, method=methods.MTP)  # a server hides its method unless in dev mode: declared


@pytest.fixture(scope="module")
def pair():
    return load_pair(device="cpu", dtype="float32", draft=None)


def test_the_server_runs_the_declared_mtp_method_with_k_4(server):
    assert (server.method, server.k) == (methods.MTP, 4)
    assert server.settings(RunSettings()).method == methods.MTP


def test_greedy_text_and_steps_agree_with_specviz(server, pair):
    same, comparable = greedy_steps_agree(server, pair, PROMPTS, TOKENS)
    print(f"MTP on vLLM: {same} of {comparable} comparable steps the same")
    # at least 90 % of the comparable steps the same, not all: the MiMo re-export cannot reproduce the scale of the
    # feature half exactly, which changes about 2 % of the depth-1 drafts (docs/engine.md, MTP)
    assert same >= 0.9 * comparable
