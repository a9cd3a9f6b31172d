"""The calculator's closed forms reproduce Leviathan et al.'s Table 1 and worked best-K examples exactly, and its
edge cases behave."""

import math

import pytest

from specviz.core.roofline import HARDWARE, MODELS, LoadSettings, break_even_batch, load_curve, load_point, pass_time
from specviz.core.theory import (
    COST_EXAMPLES,
    IDEAL,
    TheoryInputs,
    VerifyCost,
    analyse,
    best_k,
    best_k_table,
    break_even,
    break_even_alpha,
    break_even_alpha_at,
    compare_positional,
    cost_examples_table,
    expected_tokens,
    expected_tokens_table,
    formulas,
    leviathan_table,
    ops_factor,
    parse_rates,
    positional_expected_tokens,
    speedup,
)
from specviz.errors import SettingsError

# Leviathan et al. 2023 ("Fast Inference from Transformers via Speculative Decoding"), Table 1 (c = 0):
# (α, K) -> (ops, speed)
TABLE1 = {
    (0.6, 2): (1.53, 1.96),
    (0.7, 3): (1.58, 2.53),
    (0.8, 2): (1.23, 2.44),
    (0.8, 5): (1.63, 3.69),
    (0.9, 2): (1.11, 2.71),
    (0.9, 10): (1.60, 6.86),
}
# the best integer K of S = (1 − α^(K+1)) / ((1 − α)(K·c + 1)) and its S, to 2 decimals: (α, c) -> (K, speedup)
BEST_K = {(0.8, 0.05): (8, 3.09), (0.7, 0.1): (4, 1.98), (0.6, 0.2): (2, 1.40), (0.5, 0.5): (1, 1.00)}


def test_leviathan_table1_is_reproduced_to_the_printed_digits():
    """leviathan_table() lists the paper's rows in order, each computed by ops_factor and speedup at c = ĉ = 0."""
    rows = leviathan_table()
    assert [(r["alpha"], r["k"]) for r in rows] == list(TABLE1)
    for r in rows:
        alpha, k = r["alpha"], r["k"]
        assert (r["ops"], r["speedup"]) == (ops_factor(alpha, k, c_hat=0.0), speedup(alpha, k, c=0.0))
        assert (f"{r['ops']:.2f}", f"{r['speedup']:.2f}") == tuple(f"{x:.2f}" for x in TABLE1[(alpha, k)])


def test_best_integer_k_matches_reference():
    """best_k_table() lists the reference (α, c) pairs in order, each computed by best_k."""
    rows = best_k_table()
    assert [(r["alpha"], r["c"]) for r in rows] == list(BEST_K)
    for r in rows:
        assert (r["best_k"], r["speedup"]) == best_k(r["alpha"], r["c"])
        best, s = BEST_K[(r["alpha"], r["c"])]
        assert (r["best_k"], f"{r['speedup']:.2f}") == (best, f"{s:.2f}")


def test_expected_tokens_closed_form_and_the_alpha_one_limit():
    for alpha in (0.0, 0.3, 0.8, 0.999):
        for k in (1, 4, 16):
            assert expected_tokens(alpha, k) == pytest.approx((1 - alpha ** (k + 1)) / (1 - alpha), rel=1e-12)
    assert expected_tokens(1.0, 4) == 5.0  # exactly K + 1, no 0/0
    assert expected_tokens(1 - 1e-12, 4) == pytest.approx(5.0, abs=1e-9)
    assert expected_tokens(0.0, 7) == 1.0  # every draft rejected: one token per round


def test_speedup_and_ops_factor_formulas():
    e = expected_tokens(0.7, 3)
    assert speedup(0.7, 3, 0.1) == pytest.approx(e / (3 * 0.1 + 1))
    assert speedup(0.7, 3, 0.1, verify_cost=1.4) == pytest.approx(e / (3 * 0.1 + 1.4))
    assert ops_factor(0.7, 3, 0.1) == pytest.approx((1 - 0.7) * (3 * 0.1 + 3 + 1) / (1 - 0.7**4))


@pytest.mark.parametrize("c", [0.0, 0.05, 0.3, 0.9])
def test_break_even_alpha_is_c_with_ideal_verify(c):
    assert break_even_alpha(c) == c
    a = c + 1e-6
    assert (1 + a) / (1 + c) > 1
    assert speedup(a, 1, c) == pytest.approx((1 + a) / (1 + c))  # K = 1 already pays
    below = max(c - 1e-3, 0.0)
    assert all(speedup(below, k, c) <= 1 + 1e-12 for k in range(1, 17))  # no K pays at or below c


def test_break_even_alpha_with_a_verify_cost_model():
    verify = VerifyCost.linear(0.05)
    a = break_even_alpha(0.1, verify)
    assert 0.1 < a < 1
    assert best_k(a + 1e-6, 0.1, verify)[1] > 1 >= best_k(a - 1e-6, 0.1, verify)[1]
    assert break_even_alpha(1.0) is None
    assert break_even_alpha(0.5, VerifyCost.measured([20.0] * 16)) is None
    assert break_even_alpha(0.0, VerifyCost.measured([0.5])) == 0.0  # verify cheaper than a step: even α = 0 pays


@pytest.mark.parametrize(
    "k, c, v, alpha",
    [
        (1, 0.3, 1.0, 0.3),  # 1 + α = 0.3 + 1
        (1, 0.3, 1.03, 0.33),  # the linear model's v(1) = 1.03
        (2, 0.3, 1.0, (-1 + math.sqrt(3.4)) / 2),  # 1 + α + α² = 1.6: α = 0.42195
        (3, 0.0, 1.875, 0.5),  # E(0.5, 3) = 1 + 0.5 + 0.25 + 0.125 = 1.875 = 3·0 + v
        (1, 0.0, 0.5, 0.0),  # a verify pass cheaper than a step: even α = 0 pays
        (2, 1.0, 1.0, None),  # a round costs 3 steps, the most E(α, 2) can be: no α pays
    ],
)
def test_break_even_alpha_at_one_k_solves_s_equal_one(k, c, v, alpha):
    got = break_even_alpha_at(k, c, v)
    if alpha is None:
        assert got is None
        return
    assert got == pytest.approx(alpha, abs=1e-9)
    if alpha > 0:
        assert speedup(got, k, c, v) == pytest.approx(1.0, abs=1e-9)


def test_break_even_over_every_k_is_the_smallest_k_break_even_and_names_its_k():
    assert break_even(0.3) == (0.3, 1)
    linear = VerifyCost.linear(0.03)
    assert break_even(0.3, linear) == (pytest.approx(0.33), 1)
    alpha, k = break_even(0.1, VerifyCost.linear(0.05))
    assert alpha == pytest.approx(min(break_even_alpha_at(j, 0.1, 1 + 0.05 * j) for j in range(1, 17)))
    assert break_even_alpha_at(k, 0.1, 1 + 0.05 * k) == alpha
    # a verify pass as dear at K = 1 as at K = 3, and a cheap draft: three drafts pay first, not one
    alpha, k = break_even(0.01, VerifyCost.measured([1.5, 1.5, 1.5]))
    assert k == 3 and alpha == pytest.approx(break_even_alpha_at(3, 0.01, 1.5))


def test_analyse_gives_the_chosen_ks_break_even_beside_every_ks():
    r = analyse(TheoryInputs(alpha=0.6, k=8, c=0.3))
    assert r.break_even_alpha == 0.3 and r.break_even_k == 1
    assert r.break_even_alpha_at_k == pytest.approx(break_even_alpha_at(8, 0.3))
    assert expected_tokens(r.break_even_alpha_at_k, 8) == pytest.approx(8 * 0.3 + 1)
    assert r.speedup < 1 and r.inputs.alpha < r.break_even_alpha_at_k  # slower than plain: below K = 8's
    f = formulas(r)
    assert f["break_even_alpha"] == (
        f"break-even α at K = 8: E(α, 8) = K·c + v(K) = 8·0.3 + 1.000 = 3.400 → α = {r.break_even_alpha_at_k:.3f}"
    )
    assert f["break_even_alpha_any_k"].endswith("the smallest is at K = 1: E(α, 1) = 1·0.3 + 1.000 → α = 0.300")


def test_measured_verify_cost_limits_k():
    verify = VerifyCost.measured([1.1, 1.2, 1.3])
    assert verify(2) == 1.2
    assert verify.k_max == 3
    assert best_k(0.99, 0.0, verify)[0] == 3  # searches only the measured K
    with pytest.raises(SettingsError, match="K = 1..3"):
        verify(4)
    with pytest.raises(SettingsError, match="from 1 to 3"):
        TheoryInputs(0.8, 4, 0.1, verify=verify)


def test_a_larger_search_bound_is_honoured():
    assert best_k(0.99, 0.0)[0] == 16  # with c = 0 the best K is the bound itself
    assert best_k(0.99, 0.0, k_max=32)[0] == 32
    assert analyse(TheoryInputs(alpha=0.99, k=20, c=0.0, k_max=32)).best_k == 32
    with pytest.raises(SettingsError, match="from 1 to 16"):
        TheoryInputs(alpha=0.5, k=20, c=0.0)


def test_analyse_collects_every_number():
    r = analyse(TheoryInputs(alpha=0.8, k=4, c=0.05, verify=VerifyCost.linear(0.05)))
    assert r.expected_tokens == pytest.approx(3.3616)
    assert r.speedup_ideal == pytest.approx(3.3616 / 1.2)
    assert r.verify_cost == pytest.approx(1.2)
    assert r.speedup == pytest.approx(3.3616 / 1.4)
    assert (r.best_k_ideal, r.best_speedup_ideal) == best_k(0.8, 0.05)
    assert r.best_k < 8  # a dearer verify pass per token favours a shorter draft
    assert r.ops_factor == pytest.approx((4 * 0.05 + 5) / 3.3616)  # ĉ defaults to c
    doc = r.to_dict()
    assert {
        "expected_tokens",
        "speedup",
        "speedup_measured",
        "ops_factor",
        "best_k",
        "best_speedup",
        "break_even_alpha",
    } <= doc.keys()


def test_formulas_show_the_numbers_substituted():
    f = formulas(analyse(TheoryInputs(alpha=0.8, k=4, c=0.05)))
    assert f["expected_tokens"] == "E = (1 − 0.8^5) / (1 − 0.8) = 3.362"
    assert "3.362 / (4·0.05 + 1) = 2.801" in f["speedup"]
    assert "= 8 (S = 3.092)" in f["best_k"]
    assert "K + 1" in formulas(analyse(TheoryInputs(alpha=1.0, k=4, c=0.0)))["expected_tokens"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(alpha=1.2, k=4, c=0.1), "α"),
        (dict(alpha=float("nan"), k=4, c=0.1), "α"),
        (dict(alpha=0.5, k=0, c=0.1), "K"),
        (dict(alpha=0.5, k=17, c=0.1), "K"),
        (dict(alpha=0.5, k=2.5, c=0.1), "K"),
        (dict(alpha=0.5, k=4, c=-0.1), "c"),
        (dict(alpha=0.5, k=4, c=0.1, c_hat=-1.0), "ĉ"),
    ],
)
def test_bad_inputs_raise_a_settings_error(kwargs, message):
    with pytest.raises(SettingsError, match=message):
        TheoryInputs(**kwargs)


def test_bad_verify_models_are_refused():
    with pytest.raises(SettingsError):
        VerifyCost("cubic")
    with pytest.raises(SettingsError):
        VerifyCost.linear(-0.1)
    with pytest.raises(SettingsError):
        VerifyCost.measured([])
    with pytest.raises(SettingsError):
        VerifyCost.measured([1.0, 0.0])


def test_positional_expected_tokens():
    assert positional_expected_tokens([0.8] * 4) == pytest.approx(expected_tokens(0.8, 4))
    assert positional_expected_tokens([0.9, 0.5, 0.0, 1.0]) == pytest.approx(1 + 0.9 + 0.45)
    cmp = compare_positional([0.9, 0.8, 0.7, 0.6])
    assert cmp.mean_alpha == pytest.approx(0.75)
    assert cmp.iid_expected_tokens == pytest.approx(expected_tokens(0.75, 4))
    assert cmp.expected_tokens == pytest.approx(1 + 0.9 + 0.72 + 0.504 + 0.3024)
    assert cmp.error == pytest.approx(cmp.iid_expected_tokens - cmp.expected_tokens)
    assert cmp.error < 0
    assert cmp.alpha_label == "mean of the rates"
    # with the drafts that reached each position, the i.i.d. formula uses the run's alpha = accepted / judged:
    # accepted 90 + 64 + 35 + 12 = 201 of 100 + 80 + 50 + 20 = 250 judged
    run = compare_positional([0.9, 0.8, 0.7, 0.6], reached=[100, 80, 50, 20])
    assert run.mean_alpha == pytest.approx(201 / 250)
    assert run.alpha_label == "α = accepted / judged"


def test_parse_rates():
    assert parse_rates("0.9, 0.8 0.7;0.6") == (0.9, 0.8, 0.7, 0.6)
    for bad in ("", "0.9, x", "0.9, 1.5"):
        with pytest.raises(SettingsError):
            parse_rates(bad)


def test_seed_tables():
    k4 = {r["alpha"]: r["expected_tokens"] for r in expected_tokens_table(4)}
    assert round(k4[0.5], 4) == 1.9375
    assert round(k4[0.8], 4) == 3.3616
    assert round(k4[0.9], 4) == 4.0951
    assert k4[1.0] == 5.0
    rows = {r["example"]: r for r in cost_examples_table()}
    cheap, half, deep, dear = (rows[e.label] for e in COST_EXAMPLES)
    assert cheap["speedup"] > 2  # a cheap, accurate draft: more than 2x
    assert round(half["speedup"], 1) == 1.2  # right half the time: about 1.2x
    assert abs(deep["speedup"] - cheap["speedup"]) < 0.05  # K 4 -> 8 buys nothing
    assert dear["speedup"] < 1.5
    for r in rows.values():
        assert r["speedup"] == pytest.approx(r["expected_tokens"] * 100 / (r["k"] * r["draft_pct"] + r["verify_pct"]))


def test_roofline_model():
    hw, target, draft = HARDWARE["H100 SXM"], MODELS["70B (Llama-3-70B shape)"], MODELS["1B (Llama-3.2-1B shape)"]
    # Batch 1, short context: memory-bound, so a pass over K + 1 tokens costs the same as one token.
    assert pass_time(hw, target, 1, 5, 128) == pass_time(hw, target, 1, 1, 128)
    assert pass_time(hw, target, 1, 1, 0) == pytest.approx(target.weight_bytes / (hw.bandwidth_gb_s * 1e9))
    s = LoadSettings(hw, target, draft, alpha=0.8, k=4, context=512)
    first = load_point(s, 1)
    c = pass_time(hw, draft, 1, 1, 512) / pass_time(hw, target, 1, 1, 512)
    assert first.gain == pytest.approx(expected_tokens(0.8, 4) / (4 * c + 1))
    gains = [p.gain for p in load_curve(s, [1, 8, 64, 512])]
    assert gains == sorted(gains, reverse=True)
    assert gains[-1] < 1  # the gain erodes and turns into a loss
    b = break_even_batch(s)
    assert load_point(s, b).gain <= 1 < load_point(s, b - 1).gain
    with pytest.raises(SettingsError):
        LoadSettings(hw, draft, target, alpha=0.8, k=4)  # draft bigger than target
    with pytest.raises(SettingsError):
        LoadSettings(hw, target, draft, alpha=1.5, k=4)
    assert not math.isnan(first.plain_tokens_s)
    assert IDEAL(7) == 1.0
