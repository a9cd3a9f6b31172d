"""The sidebar's Precision control answers "which is faster here?" by timing both precisions on this machine."""

from app_helpers import click, open_page


def test_the_precision_button_times_both_precisions_here(tiny_default):
    at = open_page("pages/race.py")
    assert not any("faster here" in c.value for c in at.sidebar.caption)  # nothing claimed before measuring
    at = click(at, "Which precision is faster here?")
    assert not at.exception
    assert not at.error
    (answer,) = [c.value for c in at.sidebar.caption if "faster here" in c.value]
    assert "ms in float32" in answer
    assert "ms in bfloat16" in answer
    assert "On this machine (" in answer
