"""The target's low-bit copy as the lean forward reads it: the same layers, norms and rotary tables, with every layer
matrix rounded (core/quantize.py) and applied by torch's own weight-only CPU kernels, in the wheel and needing no
compiler: `_weight_int4pack_mm_for_cpu` for 4, 3 and 2 bits (3 and 2 use fewer of the 4-bit codes, so they run at
4-bit speed and only show what fewer bits lose), `_weight_int8pack_mm` for 8. Both want bfloat16 activations (with
float32 ones they are slower than float32 weights), so each matrix reads its input in bfloat16 and gives its output
back in the stream's precision; the residual stream, norms, attention and cache stay the target's (float32 norms and
attention are faster on a CPU than bfloat16 ones). smollm2's 120 layer matrices, one row, one thread on the AMD EPYC:
7.1 ms at 4 bits against 31.4 ms in float32.

torchao wraps these same kernels (its CPU int4 path is a prototype layout with a compiled extension of its own); the
calls are a few lines, so specviz makes them itself. Off the CPU, or where a kernel is missing, a copy runs its
rounded weights dequantized in bfloat16: the same q, none of the speed (`QuantizedCopy.kernel` says which).

Built once per loaded target and options, in seconds, kept in memory beside the target's own lean weights and shared
read-only by every run (no file: building takes less time than reading one back would save)."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from specviz.core.quantize import QuantOptions, Rounded, padded_to_groups, round_groupwise, round_per_row
from specviz.engine.forward.lean import LayerWeights, LeanWeights, Linear, Matrix, lean_weights, packed_copy

COPY_DTYPE = torch.bfloat16  # the activations the weight-only kernels are fast with
INT4, INT8, DEQUANTIZED = "int4 packed (torch CPU kernel)", "int8 (torch CPU kernel)", "dequantized bfloat16"


@dataclass(frozen=True)
class Int4Matrix:
    """A linear map whose weights are 4-bit codes packed for torch's CPU kernel; x @ W as the lean pass asks."""

    packed: torch.Tensor  # the kernel's layout of the (out, in) codes
    scales_zeros: torch.Tensor  # (in / group, out, 2) bfloat16: w = (code - 8) · scale + zero
    group: int
    bias: torch.Tensor | None  # (out,)
    pad: int = 0  # zero inputs added to reach whole groups (the codes' width less the matrix's)

    def times(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        """x (L, in) bfloat16 @ W + bias + residual."""
        reads = x.to(COPY_DTYPE) if not self.pad else F.pad(x.to(COPY_DTYPE), (0, self.pad))  # (L, in + pad)
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(reads, self.packed, self.group, self.scales_zeros)
        return _added(y.to(x.dtype), self.bias, residual)  # (L, out)


@dataclass(frozen=True)
class Int8Matrix:
    """A linear map whose weights are int8 codes with one scale per output row."""

    codes: torch.Tensor  # (out, in) int8
    scales: torch.Tensor  # (out,) bfloat16
    bias: torch.Tensor | None

    def times(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        y = torch.ops.aten._weight_int8pack_mm(x.to(COPY_DTYPE), self.codes, self.scales)  # (L, out)
        return _added(y.to(x.dtype), self.bias, residual)


def _added(y: torch.Tensor, bias: torch.Tensor | None, residual: torch.Tensor | None) -> torch.Tensor:
    if bias is not None:
        y = y.add_(bias)
    return y if residual is None else y.add_(residual)


@dataclass(frozen=True, eq=False)
class QuantizedCopy:
    """A target's low-bit copy: lean weights the lean forward runs as it runs the target's, and what made them."""

    weights: LeanWeights
    options: QuantOptions
    kernel: str  # INT4, INT8 or DEQUANTIZED: what multiplies its layer matrices
    build_s: float  # seconds the rounding and packing took

    @property
    def head(self) -> str:
        """The head's arithmetic, as a trace names it: 'bfloat16', the target's own 'float32', or '4-bit'."""
        if self.options.head_bits != 16:
            return f"{self.options.head_bits}-bit"
        return (
            "bfloat16"
            if isinstance(self.weights.head, Bfloat16Matrix)
            else str(self.weights.embed.dtype).removeprefix("torch.")
        )


_COPIES: weakref.WeakKeyDictionary[PreTrainedModel, dict[QuantOptions, QuantizedCopy]] = weakref.WeakKeyDictionary()
_BUILDING = threading.Lock()


def quantized_copy(model: PreTrainedModel, options: QuantOptions) -> QuantizedCopy:
    """The target's copy at these options, built once per loaded model (every run and session shares it)."""
    with _BUILDING:
        copies = _COPIES.setdefault(model, {})
        if options not in copies:
            copies[options] = _build(model, options)
        return copies[options]


def _build(model: PreTrainedModel, options: QuantOptions) -> QuantizedCopy:
    import time

    start = time.perf_counter()
    full = lean_weights(model)  # the target's own (input-major) matrices, read, never changed
    kernel = _kernel(options.bits, full.embed.device)
    with torch.no_grad():
        layers = tuple(replace(layer, **_matrices(layer, options.bits, options.group, kernel)) for layer in full.layers)
        target_head = _own(full.head)
        if options.head_bits == 16:
            head = _bfloat16(target_head) if bfloat16_native(full.embed.device) else target_head
        else:
            head = _rounded(
                target_head, options.head_bits, options.group, _kernel(options.head_bits, full.embed.device)
            )
    return QuantizedCopy(replace(full, layers=layers, head=head), options, kernel, time.perf_counter() - start)


def bfloat16_native(device: torch.device) -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AVX-512 BF16): the unrounded head then runs in bfloat16,
    oneDNN-packed (smollm2's, one row: 3.4 ms against 4.9 ms in float32 on the AMD EPYC with avx512_bf16); without
    it oneDNN emulates bfloat16 and the same head took 190 ms on an AVX2 EPYC, so the copy reads the target's own
    float32 head (8.5 ms there). The layers' kernels want bfloat16 activations either way (they convert inside)."""
    if device.type != "cpu":
        return True
    try:
        return bool(torch.cpu._is_avx512_bf16_supported())
    except AttributeError:  # a torch without the probe: assume the common case, no bfloat16 instructions
        return False


def _kernel(bits: int, device: torch.device) -> str:
    """What multiplies matrices of these bits on this device: torch's CPU kernel where it runs, else dequantized."""
    wanted = INT8 if bits == 8 else INT4
    return wanted if device.type == "cpu" and kernel_works(wanted) else DEQUANTIZED


def _matrices(layer: LayerWeights, bits: int, group: int, kernel: str) -> dict:
    """A layer's four matrices rounded (its norms stay the target's own)."""
    return {
        name: _rounded(_own(getattr(layer, name)), bits, group, kernel) for name in ("qkv", "out", "gate_up", "down")
    }


def _own(linear: Linear) -> Matrix:
    """A target's own matrix, as lean_weights reads it (a copy is never made from another copy)."""
    if not isinstance(linear, Matrix):
        raise TypeError(f"a quantized copy rounds a target's own matrices, not a {type(linear).__name__}")
    return linear


@dataclass(frozen=True)
class Bfloat16Matrix:
    """A matrix left unrounded, applied in bfloat16 (oneDNN's packed kernel on a CPU: one row of smollm2's head
    3.4 ms against 4.9 ms in float32)."""

    matrix: Matrix  # (in, out) bfloat16

    def times(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return _added(self.matrix.times(x.to(COPY_DTYPE)).to(x.dtype), None, residual)


def _bfloat16(matrix: Matrix) -> Bfloat16Matrix:
    weight = matrix.weight.to(COPY_DTYPE)
    bias = None if matrix.bias is None else matrix.bias.to(COPY_DTYPE)
    return Bfloat16Matrix(Matrix(weight, bias, packed_copy(weight)))


def _rounded(matrix: Matrix, bits: int, group: int, kernel: str):
    """One lean Matrix (input-major (in, out)) rounded to `bits` and made ready for `kernel`."""
    weight = matrix.weight.t()  # (out, in), the layout the rounding and the kernels read
    bias = matrix.bias
    if bits == 8:
        codes, scales = round_per_row(weight)
        if kernel == INT8:
            return Int8Matrix(codes, scales.to(COPY_DTYPE), bias)
        return _dequantized(codes.float() * scales[:, None], bias)
    width = weight.shape[1]
    rounded = round_groupwise(padded_to_groups(weight, group), bits, group)
    if kernel == INT4:
        return int4_matrix(rounded, bias, pad=rounded.codes.shape[1] - width)
    return _dequantized(rounded.weights()[:, :width], bias)


def int4_matrix(rounded: Rounded, bias: torch.Tensor | None = None, pad: int = 0) -> Int4Matrix:
    """Codes of at most 4 bits packed for torch's CPU kernel, whose groups read w = (code - 8) · scale + zero; the
    last `pad` columns of the codes stand for no input (padded_to_groups)."""
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(rounded.codes.contiguous(), 1)
    zero = rounded.lo + 8 * rounded.step  # (out, G): lo + code · step = (code - 8) · step + zero
    scales_zeros = torch.stack([rounded.step, zero], dim=-1).transpose(0, 1).contiguous().to(COPY_DTYPE)
    return Int4Matrix(packed, scales_zeros, rounded.group, bias, pad)  # scales_zeros (G, out, 2)


def _dequantized(weight: torch.Tensor, bias: torch.Tensor | None) -> Bfloat16Matrix:
    """(out, in) rounded values as an ordinary bfloat16 matrix (off the CPU, or where the kernel is missing)."""
    return Bfloat16Matrix(Matrix(weight.t().contiguous().to(COPY_DTYPE), None if bias is None else bias.to(COPY_DTYPE)))


_WORKS: dict[str, bool] = {}


def kernel_works(kernel: str) -> bool:
    """Whether torch's weight-only kernel runs here and agrees with the dequantized product on a small case (tried
    once per process)."""
    if kernel not in _WORKS:
        try:
            generator = torch.Generator().manual_seed(0)
            weight = torch.randn(64, 64, generator=generator)
            x = torch.randn(3, 64, generator=generator).to(COPY_DTYPE)
            if kernel == INT8:
                codes, scales = round_per_row(weight)
                got = Int8Matrix(codes, scales.to(COPY_DTYPE), None).times(x)
                expected = x.float() @ (codes.float() * scales[:, None]).t()
            else:
                rounded = round_groupwise(weight, 4, 32)
                got = int4_matrix(rounded).times(x)
                expected = x.float() @ rounded.weights().t()
            _WORKS[kernel] = bool(torch.allclose(got.float(), expected, atol=0.2, rtol=0.05))
        except (AttributeError, RuntimeError, NotImplementedError):
            _WORKS[kernel] = False
    return _WORKS[kernel]


class PackedLinear(torch.nn.Module):
    """An nn.Linear's place in a Hugging Face model, filled by a quantized copy's matrix: generate() runs the same
    rounded weights and kernels as specviz's own lane (its `assistant_model`)."""

    def __init__(self, matrix: Linear):
        super().__init__()
        self.matrix = matrix

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])  # (B·L, in)
        return self.matrix.times(rows).view(*x.shape[:-1], -1)  # (B, L, out)


_HF_COPIES: weakref.WeakKeyDictionary[PreTrainedModel, dict[QuantOptions, PreTrainedModel]] = (
    weakref.WeakKeyDictionary()
)


def hf_quantized_copy(model: PreTrainedModel, options: QuantOptions) -> PreTrainedModel:
    """The target as transformers runs it, every linear map of its layers and its head rounded as quantized_copy
    rounds them (the same rounding per output row, so the same q), built once per loaded model and options."""
    with _BUILDING:
        copies = _HF_COPIES.setdefault(model, {})
        if options not in copies:
            copies[options] = _hf_build(model, options)
        return copies[options]


def _hf_build(model: PreTrainedModel, options: QuantOptions) -> PreTrainedModel:
    import copy

    head = next(name for name, module in model.named_modules() if module is model.get_output_embeddings())
    twin = copy.deepcopy(model).eval()
    with torch.no_grad():
        for name, module in list(twin.named_modules()):
            if isinstance(module, torch.nn.Linear):
                matrix = Matrix(module.weight.detach().t().contiguous(), module.bias)  # (in, out), as lean reads it
                bits = options.head_bits if name == head else options.bits
                if bits == 16 and not bfloat16_native(model.device):
                    continue  # the head unrounded, in the target's own precision, as the lean copy reads it
                packed = (
                    _bfloat16(matrix)
                    if bits == 16
                    else _rounded(matrix, bits, options.group, _kernel(bits, model.device))
                )
                parent, _, child = name.rpartition(".")
                setattr(twin.get_submodule(parent), child, PackedLinear(packed))
    return twin
