"""The Hugging Face lanes keep their seed to themselves: generate() draws from torch's global generator, so each lane
holds it alone, seeded, and gives it back as it was. Two browser sessions' runs interleaved in the app's one process
give the same outputs as each alone."""

from __future__ import annotations

import threading

import pytest
import torch

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.compare import hf_generate
from specviz.engine.decode import encode_prompt, generate

PROMPT = "def add(a, b):\n"
SAMPLED = SamplingSettings(temperature=1.0)


def lane_run(pair, lane: str, seed: int) -> tuple[int, ...]:
    settings = RunSettings(k=3, max_new_tokens=24, sampling=SAMPLED, seed=seed, stop_at_eos=False)
    return hf_generate(pair, encode_prompt(pair, PROMPT), settings, lane).output_ids


def test_a_sampled_lane_leaves_the_global_generator_as_it_found_it(load):
    pair = load("llama-target", "llama-truncated")
    torch.manual_seed(12345)
    before = torch.random.get_rng_state()
    lane_run(pair, "hf_assisted", seed=7)
    assert torch.equal(torch.random.get_rng_state(), before)


@pytest.mark.slow
def test_interleaved_sessions_get_the_outputs_each_gets_alone(load):
    pair = load("llama-target", "llama-truncated")
    jobs = [("hf_assisted", 1), ("plain", 2), ("hf_prompt_lookup", 3), ("hf_assisted", 4)]
    alone = {job: lane_run(pair, *job) for job in jobs}
    engine_settings = RunSettings(k=3, max_new_tokens=24, sampling=SAMPLED, seed=5, stop_at_eos=False)
    engine_alone = generate(pair, PROMPT, engine_settings).output_ids
    assert len(set(alone.values())) > 1  # the seeds matter: sampled runs differ

    together: dict = {}
    start = threading.Barrier(len(jobs) + 1)

    def session(job) -> None:
        start.wait()
        for _ in range(3):  # several rounds, so the sessions' calls interleave
            together.setdefault(job, set()).add(lane_run(pair, *job))

    def engine_session() -> None:
        start.wait()
        together["engine"] = {generate(pair, PROMPT, engine_settings).output_ids for _ in range(3)}

    threads = [threading.Thread(target=session, args=(job,)) for job in jobs]
    threads.append(threading.Thread(target=engine_session))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert together == {**{job: {alone[job]} for job in jobs}, "engine": {engine_alone}}
