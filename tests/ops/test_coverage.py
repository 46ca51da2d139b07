"""Coverage of the op table: every op is tested (reference or property), has samples, and every
primitive has a kernel (or a declared CPU fallback) on each backend serving an available device.

Known gaps are data: ``EXPECTED_GAPS`` maps ``(op, device type)`` to the reason. An entry that is
no longer a gap fails too, so the list only shrinks.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember._dtype import COMPLEX_TYPES
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.optable import OPS
from ember.dispatcher.registry import EXTRA

from ..complex.test_views import COMPLEX_ROWS_TESTED
from ..conftest import available_device_types
from .checks import accepted_dtypes
from .samples import GENERATORS, generator_name, samples
from .test_properties import PROPERTIES

# (op name, device type) -> why the backend serving that device has no kernel for it.
EXPECTED_GAPS: dict = {}


def _kernel_op(op):
    """The op whose kernel a call runs: in-place variants use their functional op's kernel."""
    return op.inplace_of or op


def missing_dtypes(op, device_type: str) -> list[str]:
    """Dtypes of a primitive ``op`` with neither a kernel nor a CPU fallback on ``device_type``."""
    base = _kernel_op(op)
    if base.core or base.decomposition is not None:
        return []
    backend = REGISTRY.backend(device_type)
    table = backend.kernels.get(base.name) or {}
    missing = []
    for d in sorted(base.dtypes, key=lambda d: d.code):
        if d.name in table or "*" in table or EXTRA.find(base.name, device_type, d.name):
            continue
        cpu = REGISTRY.backend("cpu").kernels.get(base.name) or {}
        # the fallback runs whatever CPU kernel resolves: the plugin's or an extra one (complex)
        if backend.fallback and (d.name in cpu or EXTRA.find(base.name, "cpu", d.name)):
            continue
        missing.append(d.name)
    return missing


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_is_tested(name):
    op = OPS[name]
    assert op.defn.reference is not None or name in PROPERTIES, (
        f"{name}: no numpy reference in its op-table row and no property test in "
        "tests/ops/test_properties.py"
    )
    sample_name = generator_name(op)
    assert sample_name in GENERATORS, (
        f"{name}: no sample generator {sample_name!r} (OpDef.samples, or the default for "
        f"{op.kind}) in tests/ops/samples.py"
    )
    real = accepted_dtypes(op)
    if not real:  # complex-only rows: generated tests cover their refusals, tests/complex the rest
        assert op.dtypes <= set(COMPLEX_TYPES), f"{name}: no dtype to sample"
        assert name in COMPLEX_ROWS_TESTED, f"{name}: complex-only row not in tests/complex"
        return
    dtype = real[0]
    found = samples(op, dtype, "cpu", np.random.default_rng(0))
    assert found, f"{name}: generator {sample_name!r} gives no samples for {dtype.name}"


@pytest.mark.parametrize("name", sorted(OPS))
def test_primitive_has_kernel(name, device):
    if (name, device) in EXPECTED_GAPS:
        pytest.xfail(EXPECTED_GAPS[(name, device)])
    missing = missing_dtypes(OPS[name], device)
    backend = REGISTRY.backend(device).name
    assert not missing, (
        f"{name}: backend '{backend}' serving {device} has no kernel for {missing} and no "
        "declared CPU fallback"
    )


def test_kernels_belong_to_ops(device):
    """A kernel under a name the table does not know is never called (a misspelt op name)."""
    backend = REGISTRY.backend(device)
    strays = sorted(set(backend.kernels) - set(OPS))
    assert not strays, f"backend '{backend.name}' has kernels for unknown ops: {strays}"


def test_kernel_dtypes_are_in_rows(device):
    """A kernel for a dtype the row does not list is unreachable (the runners refuse the dtype)."""
    backend = REGISTRY.backend(device)
    extra = {
        name: sorted(set(table) - {d.name for d in OPS[name].dtypes} - {"*"})
        for name, table in backend.kernels.items()
        if name in OPS
    }
    extra = {name: dtypes for name, dtypes in extra.items() if dtypes}
    assert not extra, f"backend '{backend.name}' has kernels for dtypes its rows exclude: {extra}"


def test_expected_gaps_are_still_gaps():
    stale = [
        key
        for key in EXPECTED_GAPS
        if key[1] in available_device_types() and not missing_dtypes(OPS[key[0]], key[1])
    ]
    assert not stale, f"EXPECTED_GAPS lists ops that now have kernels; remove them: {stale}"
