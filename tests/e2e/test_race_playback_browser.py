"""In a real browser, the race measures first and then plays back: every lane's text appears over time at its
recorded pace, ends as the lane's text with its measured figures, and a replay sends or receives no WebSocket frame."""

import pytest
from browser_helpers import main_text, open_app_page, settle
from race_browser import lanes, replay, wait_played


@pytest.mark.slow
def test_the_race_plays_back_its_recorded_arrivals_without_the_server(app_url, page):
    frames = []
    page.on(
        "websocket",
        lambda ws: [ws.on(kind, lambda f, k=kind: frames.append(k)) for kind in ("framesent", "framereceived")],
    )
    open_app_page(page, app_url, "race")
    page.get_by_role("button", name="Start the race").click()
    settle(page, 600_000)  # every lane decoded 3 times after a warm-up: minutes on a busy machine
    wait_played(page)
    assert "decoded one after another with nothing drawn while they ran" in main_text(page)
    first = lanes(page)
    assert len(first) >= 3 and first[0]["method"] == "plain"
    for lane in first:
        assert lane["text"].strip(), lane  # every lane's whole text is shown
        assert lane["tokens"] > 0 and lane["tokens_per_s"] > 0, lane
        assert lane["tokens_per_s"] == pytest.approx(lane["tokens"] / (lane["ms"] / 1e3), rel=0.02, abs=0.2)
    settle(page)
    before = len(frames)
    played = replay(page, speed=0.25)  # a lecture's pace: long enough to see every lane grow
    assert len(frames) == before, "the replay exchanged WebSocket frames with the server"
    assert played["texts"] == [lane["text"] for lane in first]  # the replay ends on the same texts
    longest = max(lane["ms"] for lane in first)
    assert played["ms"] >= 4 * longest - 50  # at ×0.25 the slowest lane takes 4 times its measured decoding time
    for i, lane in enumerate(first):
        lengths = [s["lengths"][i] for s in played["samples"]]
        assert lengths == sorted(lengths), lane["label"]  # text only grows
        assert lengths[-1] == len(lane["text"])
        grew = sorted(set(lengths))  # plain decoding delivers one token a pass: its text grows in many steps
        assert len(grew) >= (10 if lane["method"] == "plain" else 2), f"{lane['label']}: grew only as {grew}"
    assert lanes(page) == first  # the same figures after the replay
