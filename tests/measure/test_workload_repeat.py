"""A workload measured twice, minutes apart, on a machine whose speed moved between: the
two intervals can exclude each other, and the comparison says so with the range both span; v(K) timed dearer for
fewer tokens is taken monotone, so a lookup's prediction is not priced at that noise."""

from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import predict
from specviz.measure.prompts import PromptRow
from specviz.measure.summary import compare_measurements, measurement_figures, summarize
from specviz.measure.workload import run_workload


def drifting_machine(ratio_at):
    """A source whose speculative runs take 1 / ratio_at(call) the plain time: ratio_at drifts with the calls made
    (the machine's state), plus a small wobble from run to run."""
    calls = [0]

    def source(prompt, settings, tag):
        calls[0] += 1
        n = settings.max_new_tokens
        wobble = 1 + 0.01 * ((calls[0] * 7) % 3 - 1)
        wall = 0.1 if settings.method == "plain" else 0.1 / (ratio_at(calls[0]) * wobble)
        k = settings.k
        return RunRecord("specviz", settings.method, k, prompt, "", tuple(range(n)), (n,), (k,), (0,), (k,), (wall,),
                         wall, settings=settings.to_dict(), tag=tag)  # fmt: skip

    return source


def test_two_measurements_apart_by_more_than_their_intervals_are_said_to_disagree():
    rows = [PromptRow(f"prompt {i}", "prose", i) for i in range(3)]
    base = RunSettings(max_new_tokens=10)
    source = drifting_machine(
        lambda call: 0.87 if call <= 14 else 0.97
    )  # 14 calls a measurement: faster for the second
    first = summarize(list(run_workload(source, rows, ["ngram"], [4], base, repeats=2)))
    second = summarize(list(run_workload(source, rows, ["ngram"], [4], base, repeats=2)))
    then, now = measurement_figures(first), measurement_figures(second)
    (_, low0, high0), (_, low, high) = then[("specviz", "ngram", 4)], now[("specviz", "ngram", 4)]
    assert high0 < low  # each interval holds its own measurement's noise only: they exclude each other
    said = compare_measurements({"figures": then, "when": 0, "load": 0.8}, {"figures": now, "when": 300, "load": 1.9})
    assert len(said) == 1 and said[0][0] is False
    assert "Measured again, and the two disagree: n-gram lookup (prompt lookup), K = 4:" in said[0][1]
    assert f"Taken together they span {low0:.2f}x–{high:.2f}x" in said[0][1]
    assert "(load average 0.8 then, 1.9 now)" in said[0][1] and "5 min before" in said[0][1]
    steady = drifting_machine(lambda call: 0.9)
    again = [summarize(list(run_workload(steady, rows, ["ngram"], [4], base, repeats=2))) for _ in range(2)]
    agree = compare_measurements(*({"figures": measurement_figures(s), "when": 0} for s in again))
    assert [ok for ok, _ in agree] == [True]


def lookup_run(drafted):
    n = len(drafted) + sum(1 for d in drafted if d)  # each drafting round accepts its one draft
    committed = tuple(2 if d else 1 for d in drafted)
    accepted = tuple(1 if d else 0 for d in drafted)
    settings = RunSettings(method="ngram", k=4).to_dict()
    ends = tuple(range(1, len(drafted) + 1))
    return RunRecord("specviz", "ngram", 4, "p", "", tuple(range(n)), committed, drafted, accepted, accepted, ends,
                     float(len(drafted)), settings=settings)  # fmt: skip


def test_a_verify_cost_timed_dearer_for_fewer_tokens_is_taken_monotone():
    """v(1) 1.56 above v(4) 1.13 (the walk's costs): n-gram's prediction was priced at 1.56 per round."""
    costs = MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.001, 0.01, (0.0156, 0.0140, 0.0125, 0.0113))
    assert costs.verify_monotone == tuple(costs.verify_relative[3] for _ in range(4))
    assert costs.implausible is None  # under the 1.5x the guard refuses: the monotone costs carry it
    assert costs.to_dict()["verify_monotone"] == list(costs.verify_monotone)
    prediction = predict([lookup_run((1, 1, 0, 1))], costs)  # tau 1.75; rounds of 1, 1, 0 and 1 drafts
    assert prediction.verify_cost == (3 * 1.13 + 1.0) / 4  # a round with no draft is a plain step
    assert abs(prediction.speedup - 1.75 / prediction.verify_cost) < 1e-9
    quiet = MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.001, 0.01, (0.011, 0.012, 0.013, 0.014))
    assert quiet.verify_monotone == quiet.verify_relative and quiet.verify_noise == ""
