"""A real vLLM server running suffix decoding ({"method": "suffix"}, through arctic-inference, which
tests/install_vllm.sh builds) on the bundled target: its greedy texts are specviz's, its per-step counts are what
replaying vLLM's calls on specviz's cache gives (so specviz drafts what arctic-inference drafts), and, where a vLLM
step starts at the token a specviz round starts, the two drafted and accepted the same.

vLLM's per-request metrics leave out the steps that drafted nothing (specviz/remote/suffix_replay.py): the replay
places them. Both sides remember earlier outputs: the server's global tree holds its connection probe and each earlier
prompt's output, so specviz's memory is given the same runs in the same order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from vllm_servers import PER_REQUEST, serve  # noqa: E402

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixCache, SuffixMemory, SuffixOptions
from specviz.engine.decode import encode_prompt
from specviz.engine.loading.models import ASSETS, load_pair
from specviz.measure.lanes import run_method
from specviz.measure.prompts import read_workload
from specviz.remote.agreement import spans
from specviz.remote.suffix_replay import drafting_steps, replay_vllm_suffix
from specviz.remote.vllm import PROBE_TOKENS, connect

PROMPTS = read_workload(ASSETS / "workloads" / "code.jsonl").rows[3:7]
TOKENS, K, MAX_MODEL_LEN = 40, 8, 256  # vllm_servers starts every server with --max-model-len 256
OPTIONS = SuffixOptions()  # vLLM's defaults: depth 24, factor 1, min prob 0.1, 10000 cached requests
SUFFIX_CONFIG = ["--speculative-config", json.dumps({"method": methods.VLLM_SUFFIX, "num_speculative_tokens": K})]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    for started in serve("suffix", [*SUFFIX_CONFIG, *PER_REQUEST], tmp_path_factory):
        yield connect(started.url, method=methods.SUFFIX)  # its probe completion ("def") is the first cached output


@pytest.fixture(scope="module")
def pair():
    return load_pair(device="cpu", dtype="float32", draft=None)


def test_greedy_text_and_steps_agree_with_specviz(server, pair):
    assert (server.method, server.k) == (methods.SUFFIX, K)
    memory, vllm_cache = SuffixMemory(), SuffixCache(OPTIONS.max_tree_depth, OPTIONS.max_cached_requests)
    probe = run_method(pair, "def", RunSettings(method=methods.SUFFIX, k=K, max_new_tokens=PROBE_TOKENS), "suffix")
    run_method(
        pair, "def", RunSettings(method=methods.SUFFIX, k=K, max_new_tokens=PROBE_TOKENS), "suffix", memory=memory
    )
    replay_vllm_suffix(vllm_cache, encode_prompt(pair, "def"), probe.output_ids, K, OPTIONS, MAX_MODEL_LEN)
    comparable = same = vllm_steps = replayed_exactly = 0
    for row in PROMPTS:
        settings = server.settings(RunSettings(max_new_tokens=TOKENS, stop_at_eos=False))
        local = run_method(pair, row.prompt, settings, settings.method, memory=memory)
        served = server.run(row.prompt, settings, row.tag)
        assert served.output_ids == local.output_ids
        assert served.text == local.text
        steps = replay_vllm_suffix(
            vllm_cache, encode_prompt(pair, row.prompt), served.output_ids, K, OPTIONS, MAX_MODEL_LEN
        )
        drafted, accepted = drafting_steps(steps)
        reported = [(d, a) for d, a in zip(served.per_round_drafted, served.per_round_accepted) if d]
        vllm_steps += len(reported)
        # the last step may count accepted drafts that max_tokens then cut off: compare its drafts only
        replayed_exactly += [d for d, _ in reported] == drafted and [a for _, a in reported][:-1] == accepted[:-1]
        ours = {start: (d, a) for start, d, a in spans(local)}
        starts = {start for start in _round_starts(local)}
        for start, d, a in steps:
            if d and start + d + 1 <= TOKENS and start in starts:  # a step at a round's start, within the limit
                comparable += 1
                same += ours.get(start) == (d, a)
    print(f"suffix: {same}/{comparable} comparable steps the same; {vllm_steps} vLLM steps with drafts; replay exact")
    print(f"on {replayed_exactly}/{len(PROMPTS)} prompts")
    assert replayed_exactly == len(PROMPTS)  # vLLM's own per-step counts are the replay's, prompt by prompt
    assert vllm_steps > 2 * len(PROMPTS) and comparable >= vllm_steps // 2
    # at least 90 % of the comparable steps the same: a margin, not a measured gap (64 of 64 agreed, docs/engine.md)
    assert same >= 0.9 * comparable


def _round_starts(record) -> list[int]:
    out, start = [], 0
    for committed in record.per_round_committed:
        out.append(start)
        start += committed
    return out
