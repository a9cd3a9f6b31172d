"""The bench's in-run costs: c and the verify pass as a lane's own rounds paid them, against its plain run's step."""

from specviz.core.record import ENGINE, RunRecord
from specviz.measure.bench import in_run_costs, plain_step_s


def record(method, committed, drafted, ends, draft_ms=None, verify_ms=None):
    return RunRecord(
        source=ENGINE,
        method=method,
        k=max(drafted, default=0),
        prompt="p",
        text="t",
        output_ids=tuple(range(sum(committed))),
        per_round_committed=tuple(committed),
        per_round_drafted=tuple(drafted) if drafted else None,
        per_round_accepted=tuple(c - 1 for c in committed) if drafted else None,
        per_round_judged=tuple(min(c, d) for c, d in zip(committed, drafted)) if drafted else None,
        round_end_s=tuple(ends),
        wall_s=ends[-1],
        draft_ms=draft_ms,
        verify_ms=verify_ms,
    )


def test_plain_step_leaves_the_first_round_which_holds_the_prefill_out():
    plain = record("plain", [1] * 5, [], [0.050, 0.054, 0.058, 0.062, 0.066])  # 50 ms prefill, then 4 ms a token
    assert abs(plain_step_s(plain) - 0.004) < 1e-12
    assert plain_step_s(record("plain", [1], [], [0.05])) == 0.0


def test_c_and_verify_in_run_are_per_drafted_token_and_per_round_over_the_plain_step():
    plain = record("plain", [1] * 5, [], [0.050, 0.054, 0.058, 0.062, 0.066])
    run = record("draft", [3, 4, 2], [4, 4, 4], [0.06, 0.07, 0.08], draft_ms=4.8, verify_ms=15.0)
    costs = in_run_costs([(run, plain)])
    assert abs(costs["c_in_run"] - 4.8 / 12 / 4.0) < 1e-12  # 0.4 ms a draft step against 4 ms a plain step: 0.1
    assert abs(costs["verify_in_run"] - 15.0 / 3 / 4.0) < 1e-12  # 5 ms a verify pass: 1.25 plain steps


def test_a_lane_that_does_not_time_its_phases_reports_no_in_run_costs():
    plain = record("plain", [1] * 3, [], [0.05, 0.054, 0.058])
    assert in_run_costs([(record("hf_assisted", [3], [4], [0.06]), plain)]) == {}
