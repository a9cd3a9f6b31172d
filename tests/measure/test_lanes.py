"""One run -> one RunRecord, for specviz's lanes and Hugging Face's; the clocks time decoding, not the display."""

import time

import pytest

from specviz.core.settings import RunSettings
from specviz.measure.lanes import DecodingClock, run_method


def test_the_clock_leaves_out_the_callback():
    clock = DecodingClock()
    clock.call(time.sleep, 0.05)
    assert clock.now() < 0.02
    assert clock.outside >= 0.05


@pytest.mark.parametrize("method", ["draft", "hf_assisted"])
def test_a_slow_display_does_not_slow_the_measured_decoding(load, method):
    """The race draws every arrival; a lane reporting many times must not pay for its drawing in its tokens/s."""
    pair = load("llama-target", "llama-truncated")
    settings = RunSettings(k=2, max_new_tokens=12, stop_at_eos=False)
    quiet = run_method(pair, "def f(x):", settings, method)
    calls = []
    began = time.perf_counter()
    slow = run_method(pair, "def f(x):", settings, method, lambda *a: (calls.append(a), time.sleep(0.05)))
    elapsed = time.perf_counter() - began
    assert slow.output_ids == quiet.output_ids
    assert len(calls) == slow.rounds >= 3
    drawing = 0.05 * len(calls)  # each draw sleeps at least this long, however busy the machine
    assert slow.wall_s <= elapsed - drawing  # every draw's time stayed out of the decoding time
    assert slow.round_end_s[-1] <= slow.wall_s + 1e-9
    assert list(slow.round_end_s) == sorted(slow.round_end_s)
