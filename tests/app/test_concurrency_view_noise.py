"""The workload page's recorded load sweep says how noisy its figures are: it was recorded at a
load average of 15.51 on 2 cores, and its 2.68× at concurrency 8 stood beside a roofline of 0.33× with no word on it."""

from app_helpers import open_page, text


def test_the_recorded_sweep_says_it_ran_on_a_machine_busier_than_its_cores(tiny_default):
    at = open_page("pages/workload.py")
    at.radio(key="where").set_value("a vLLM server").run()
    assert not at.exception
    captions = [text(c) for c in at.caption]  # as the browser reads them: the app writes numbers inert
    roofline = next(i for i, c in enumerate(captions) if "against the roofline" in c)
    noise = next(i for i, c in enumerate(captions) if c.startswith("A noisy measurement"))
    assert noise == roofline + 1  # next to the figures it qualifies
    assert "load average was 15.51 on 2 cores" in captions[noise]
    assert "2.68× with a 95% interval of 1.78–3.10×" in captions[noise]
