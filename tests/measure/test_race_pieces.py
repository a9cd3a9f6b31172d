"""The race's playback pieces: a lane's text cut where its tokens arrived, joining back to the whole text."""

from specviz.core.record import RunRecord
from specviz.measure.race import arrival_pieces, median_run

BYTES = {1: b"de", 2: b"f ", 3: "é".encode()[:1], 4: "é".encode()[1:], 5: b"!"}  # 3 and 4: one character's bytes


def decode(ids):
    return b"".join(BYTES[i] for i in ids).decode("utf-8", errors="replace")


def record(arrivals, ids=(1, 2, 3, 4, 5), wall_s=None):
    committed = tuple(n for _, n in arrivals)
    times = tuple(t for t, _ in arrivals)
    return RunRecord("specviz", "plain", 0, "p", "", ids, committed, None, None, None, times, wall_s or times[-1])


def test_pieces_join_to_the_text_and_hold_a_split_character_until_it_is_whole():
    pieces = arrival_pieces(record([(0.1, 1), (0.2, 2), (0.3, 1), (0.4, 1)]), decode)
    assert [p.text for p in pieces] == ["de", "f ", "é", "!"]  # after 3 tokens the tail is a replacement character
    assert [(p.seconds, p.tokens) for p in pieces] == [(0.1, 1), (0.2, 2), (0.3, 1), (0.4, 1)]
    assert "".join(p.text for p in pieces) == decode([1, 2, 3, 4, 5]) == "def é!"


def test_a_burst_is_one_piece():
    pieces = arrival_pieces(record([(0.1, 4), (0.2, 1)]), decode)
    assert [p.text for p in pieces] == ["def é", "!"]


def test_the_replayed_run_is_the_median_one():
    slow, mid, fast = (record([(t, 5)]) for t in (0.3, 0.2, 0.1))
    assert median_run([fast, slow, mid]) is mid
    assert median_run([fast, slow]) is slow  # even count: the lower middle (the slower of the two)
