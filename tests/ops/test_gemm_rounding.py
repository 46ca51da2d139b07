"""16-bit float GEMMs with an added input round once, as PyTorch's CPU GEMM does: the product is
accumulated in float32 and ``beta * input`` is added before the result is stored. Rounding the
product to bfloat16 first and then the sum (twice) differed from PyTorch in most elements."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

CALLS = {
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b), ((24, 16), (24, 40), (40, 16))),
    "addmm_scaled": (
        lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0),
        ((24, 16), (24, 40), (40, 16)),
    ),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), ((3, 8, 6), (3, 8, 20), (3, 20, 6))),
    "linear": (lambda lib, c, a, b: lib.nn.functional.linear(a, b, c), ((16,), (24, 40), (16, 40))),
}


def _ember(t: torch.Tensor) -> ember.Tensor:
    return ember.tensor(t.float().numpy()).to(getattr(ember, str(t.dtype).split(".")[-1]))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_bfloat16_gemm_with_input_matches_pytorch_bit_for_bit(name):
    call, shapes = CALLS[name]
    generator = torch.Generator().manual_seed(len(name))
    inputs = [torch.randn(s, generator=generator).to(torch.bfloat16) for s in shapes]
    expected = call(torch, *inputs).float().numpy()
    got = call(ember, *[_ember(t) for t in inputs])
    assert got.dtype == ember.bfloat16
    assert (got.float().numpy() == expected).all(), f"{name}: bfloat16 result rounded twice"
