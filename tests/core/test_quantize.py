"""Groupwise rounding, with hand-built matrices whose right answers are known."""

import pytest
import torch

from specviz.core.quantize import QuantOptions, round_groupwise, round_per_row
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError


def test_weights_already_on_a_4_bit_grid_are_recovered_exactly():
    # each group of 4: lo + code * step with codes 0..15 (both ends present), as the Q4_1 blocks smollm2 ships
    codes = torch.tensor([[0, 15, 3, 7, 15, 0, 1, 2]])
    lo, step = torch.tensor([[-1.0, 0.5]]), torch.tensor([[0.25, 0.125]])
    weight = (lo.repeat_interleave(4, 1) + codes * step.repeat_interleave(4, 1)).float()
    rounded = round_groupwise(weight, bits=4, group=4)
    assert torch.equal(rounded.codes, codes.int())
    assert torch.equal(rounded.weights(), weight)


def test_each_group_keeps_its_own_least_and_greatest_value():
    weight = torch.tensor([[0.0, 1.0, 0.4, 0.6, -8.0, 8.0, 1.0, -1.0]])
    rounded = round_groupwise(weight, bits=2, group=4)  # 4 levels per group: lo, lo + step, lo + 2 step, hi
    assert rounded.lo.tolist() == [[0.0, -8.0]]
    assert rounded.step[0].tolist() == pytest.approx([1 / 3, 16 / 3])
    assert rounded.codes.tolist() == [[0, 3, 1, 2, 0, 3, 2, 1]]  # 0.4 -> 1/3, 0.6 -> 2/3; 1 -> 8/3, -1 -> -8/3
    assert rounded.weights()[0, :2].tolist() == [0.0, 1.0]  # the ends are exact


def test_fewer_bits_mean_fewer_codes_and_a_larger_error():
    weight = torch.randn(16, 64, generator=torch.Generator().manual_seed(0))
    errors = []
    for bits in (4, 3, 2):
        rounded = round_groupwise(weight, bits, 32)
        assert int(rounded.codes.max()) <= 2**bits - 1 and int(rounded.codes.min()) >= 0
        errors.append(float((rounded.weights() - weight).abs().max()))
    assert errors[0] < errors[1] < errors[2]
    assert errors[0] <= float(round_groupwise(weight, 4, 32).step.max()) / 2 + 1e-6  # at most half a step


def test_a_constant_group_is_kept_exactly():
    weight = torch.full((2, 32), 0.3)
    assert torch.equal(round_groupwise(weight, 4, 32).weights(), weight)


def test_per_row_int8_rounds_symmetrically_with_one_scale_per_row():
    weight = torch.tensor([[127.0, -63.5, 0.0], [1.0, 0.5, -1.0]])
    codes, scale = round_per_row(weight)
    assert scale.tolist() == [1.0, pytest.approx(1 / 127)]
    assert codes.tolist() == [[127, -64, 0], [127, 64, -127]]  # -63.5 rounds half to even


def test_a_width_that_does_not_split_into_groups_is_refused_naming_both():
    with pytest.raises(SettingsError, match="576-wide.*groups of 128"):
        round_groupwise(torch.zeros(1, 576), 4, 128)


@pytest.mark.parametrize(
    ("field", "value", "words"), [("bits", 5, "bits"), ("group", 48, "group size"), ("head_bits", 32, "head bits")]
)
def test_options_out_of_range_are_refused_naming_the_choices(field, value, words):
    with pytest.raises(SettingsError, match=f"{words} must be one of .*got {value}"):
        QuantOptions(**{field: value})


def test_a_quantized_runs_settings_keep_its_options_through_json_and_others_do_not_carry_them():
    run = RunSettings(method="quantized", quant=QuantOptions(bits=3, group=64))
    body = run.to_dict()
    assert body["quant"] == {"bits": 3, "group": 64, "head_bits": 16}
    assert RunSettings.from_dict(body) == run
    assert "quant" not in RunSettings(method="draft").to_dict()
    with pytest.raises(SettingsError, match="bits, group and head_bits"):
        RunSettings.from_dict({**body, "quant": {"bits": 4, "colour": 1}})
