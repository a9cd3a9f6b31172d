"""A real vLLM server without speculation: specviz refuses it and says how to start one with speculation."""

from __future__ import annotations

import pytest

from specviz.cli import main
from specviz.remote.errors import SpeculationOff
from specviz.remote.vllm import connect


@pytest.fixture
def vllm(vllm_plain_server):
    return vllm_plain_server()  # the session's shared plain server (tests/conftest.py)


def test_a_server_without_speculation_is_refused_with_the_recipe(vllm, tmp_path, capsys):
    with pytest.raises(SpeculationOff, match="without speculation") as caught:
        connect(vllm.url)
    assert "--speculative-config" in str(caught.value)
    assert "--per-request-spec-decode-metrics" in str(caught.value)
    prompts = tmp_path / "p.txt"
    prompts.write_text("def f():\n")
    assert main(["measure", str(prompts), "--server", vllm.url]) == 2
    assert "without speculation" in capsys.readouterr().err
