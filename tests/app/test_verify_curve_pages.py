"""The calculator and the home page chart v(K) of both targets from the recorded bench file, with its sentence."""

import pytest
from app_helpers import open_page


@pytest.mark.parametrize("name", ["pages/calculator.py", "pages/home.py"])
def test_the_page_shows_both_targets_verify_curve(tiny_default, name):
    at = open_page(name, timeout=300)
    assert not at.exception
    assert any("v(K) measured on both targets" in h.value for h in at.subheader)
    [words] = [c.value for c in at.caption if "streams the weights once" in c.value]
    assert "pystdlib v(8) = " in words and "smollm2 v(8) = " in words and "bandwidth / weight bytes" in words
