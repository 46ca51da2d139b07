"""``assert_close`` with PyTorch's defaults, rules and messages (``torch/testing/_comparison.py``).

Values are compared on the host through NumPy: the check is a test helper, not a hot path, and
going through one array library keeps the mismatch statistics identical on every device.
"""

from __future__ import annotations

import collections.abc
import math

import numpy as np

import ember

# (rtol, atol) per dtype, PyTorch's table; dtypes not listed compare exactly.
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _default_tolerances(*dtypes) -> tuple[float, float]:
    pairs = [_TOLERANCES.get(_dtype_name(d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_msg(default_identifier, identifier, extra, diffs, rtol, atol) -> str:
    equality = rtol == 0 and atol == 0
    if identifier is None:
        identifier = default_identifier
    elif callable(identifier):
        identifier = identifier(default_identifier)
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    for kind, (diff, idx), tol in zip(("absolute", "relative"), diffs, (atol, rtol)):
        line = f"{kind.title()} difference: {diff}" if idx is None else (
            f"Greatest {kind} difference: {diff} at index {idx}")  # fmt: skip
        msg += line + ("" if equality else f" (up to {tol} allowed)") + "\n"
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol, identifier=None) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    extra = f"Expected {expected} but got {actual}."
    diffs = ((abs_diff, None), (rel_diff, None))
    return _mismatch_msg("Scalars", identifier, extra, diffs, rtol, atol)


def _tensor_msg(actual, expected, mismatches, rtol, atol) -> str:
    total = int(mismatches.sum())
    extra = f"Mismatched elements: {total} / {mismatches.size} ({total / mismatches.size:.1%})"
    a, e = actual.ravel(), expected.ravel()
    if (
        a.dtype.kind not in "fc" and a.dtype.name != "bfloat16"
    ):  # PyTorch upcasts integers and bools to int64 first
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[~mismatches.ravel()] = 0
        rel_diff = abs_diff / np.abs(e)
        if rel_diff.dtype == np.float64 and a.dtype == np.int64:
            rel_diff = rel_diff.astype(np.float32)  # int64 / int64 is float32 in PyTorch
    rel_diff[~mismatches.ravel()] = 0
    diffs = []
    for diff in (abs_diff, rel_diff):
        i = int(np.argmax(diff)) if not np.isnan(diff).any() else int(np.argmax(np.isnan(diff)))
        idx = tuple(int(k) for k in np.unravel_index(i, actual.shape))
        diffs.append((diff[i].item(), idx))
    return _mismatch_msg("Tensor-likes", None, extra, diffs, rtol, atol)


def _to_numpy(t):
    t = t.detach().resolve_conj().resolve_neg()
    if t.device.type != "cpu":
        t = t.cpu()
    return np.asarray(t.numpy())  # bfloat16 comes as ml_dtypes' bfloat16: diffs round as PyTorch's


def _attr_mismatch(name, a, e) -> str:
    return f"The values for attribute '{name}' do not match: {a} != {e}."


def _check_attributes(actual, expected, check_device, check_dtype, check_layout, check_stride):
    checks = [("shape", True), ("device", check_device), ("dtype", check_dtype),
              ("layout", check_layout)]  # fmt: skip
    for name, wanted in checks:
        a, e = getattr(actual, name, None), getattr(expected, name, None)
        if wanted and a != e:
            raise AssertionError(_attr_mismatch(name, a, e))
    if check_stride and actual.stride() != expected.stride():
        raise AssertionError(_attr_mismatch("stride()", actual.stride(), expected.stride()))


def _compare_tensors(actual, expected, rtol, atol, equal_nan, msg, checks):
    _check_attributes(actual, expected, *checks)
    if rtol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    a, e = _to_numpy(actual), _to_numpy(expected)
    if a.dtype != e.dtype:  # check_dtype=False: compare in the promoted dtype, as PyTorch
        common = np.result_type(a, e)
        a, e = a.astype(common), e.astype(common)
    if a.dtype == np.bool_ or (a.dtype.kind in "iu" and rtol == 0 and atol == 0):
        matches = a == e
    else:
        with np.errstate(all="ignore"):
            matches = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if matches.all():
        return
    if msg is not None:
        raise AssertionError(msg(_describe(a, e, matches, rtol, atol)) if callable(msg) else msg)
    raise AssertionError(_describe(a, e, matches, rtol, atol))


def _describe(a, e, matches, rtol, atol) -> str:
    if a.shape == ():
        return _scalar_msg(a.item(), e.item(), rtol, atol)
    return _tensor_msg(a, e, ~matches, rtol, atol)


def _compare_scalars(actual, expected, rtol, atol, equal_nan, msg, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise AssertionError(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    if rtol is None:
        floating = any(isinstance(v, (float, complex)) for v in (actual, expected))
        rtol, atol = _TOLERANCES["float64"] if floating else (0.0, 0.0)
    both_nan = equal_nan and all(isinstance(v, float) and math.isnan(v) for v in (actual, expected))
    if both_nan or abs(actual - expected) <= atol + rtol * abs(expected):
        return
    text = _scalar_msg(actual, expected, rtol, atol)
    raise AssertionError(msg if isinstance(msg, str) else msg(text) if msg else text)


def _is_number(x) -> bool:
    return isinstance(x, (bool, int, float, complex, np.number))


def _walk(actual, expected, path, compare):
    """Pair up nested sequences and mappings; ``compare`` sees each leaf pair."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str):
        if len(actual) != len(expected):
            raise AssertionError(
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
                + _where(path)
            )
        for i, (a, e) in enumerate(zip(actual, expected)):
            _walk(a, e, (*path, i), compare)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(
        expected, collections.abc.Mapping
    ):
        if set(actual) != set(expected):
            missing = sorted(set(expected) - set(actual), key=str)
            extra = sorted(set(actual) - set(expected), key=str)
            raise AssertionError(
                f"The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {missing}\n"
                f"Extra keys in the actual mapping: {extra}" + _where(path)
            )
        for k in expected:
            _walk(actual[k], expected[k], (*path, k), compare)
        return
    try:
        compare(actual, expected)
    except AssertionError as error:
        raise AssertionError(str(error) + _where(path)) from None


def _where(path) -> str:
    return (
        "" if not path else "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)
    )


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):  # fmt: skip
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors match when shape, device, dtype and layout agree and every element satisfies
    ``|actual - expected| <= atol + rtol * |expected|``; without ``rtol``/``atol`` the tolerances
    come from the dtype (float32: 1.3e-6 / 1e-5; integers and bools compare exactly). Python
    numbers, and sequences and mappings of tensors or numbers (compared item by item), work too.

    Raises:
        AssertionError: a mismatch, worded as PyTorch ("Tensor-likes are not close!" with the
            number of mismatched elements and the greatest absolute and relative differences).
        ValueError: only one of ``rtol`` and ``atol`` is given.
        TypeError: inputs of a kind that cannot be compared (a tensor against a list, say).

    Example:
        >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
    """
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}."
        )
    checks = (check_device, check_dtype, check_layout, check_stride)

    def compare(a, e):
        if isinstance(a, ember.Tensor) and isinstance(e, ember.Tensor):
            return _compare_tensors(a, e, rtol, atol, equal_nan, msg, checks)
        if _is_number(a) and _is_number(e):
            return _compare_scalars(a, e, rtol, atol, equal_nan, msg, check_dtype)
        if a is None and e is None:
            return None
        raise TypeError(
            f"No comparison pair was able to handle inputs of type {type(a)} and {type(e)}."
        )

    _walk(actual, expected, (), compare)
