"""The mapping table: op-table op name -> the rule that writes it in ONNX ops.

One table keyed by op name, as the op table is; each family's module holds its part
(``symbolic/``). A rule is called as ``rule(g, *args)`` with the node's schema arguments
(``jit.onnx.convert`` says what each argument arrives as) and returns the output value (a tuple
for several outputs, a list for ``Tensor[]``). In-place variants (``relu_``) use their
functional op's rule. An op absent here raises ``UnsupportedOperatorError`` naming the op and
the opset; a rule raises the same, with the first opset that has it, when the target is older.
"""

from __future__ import annotations

from .symbolic import elementwise, factory, index, linalg, nn, reduction, shape

FAMILIES = (elementwise, reduction, shape, nn, linalg, index, factory)


def _join(families) -> dict:
    table: dict = {}
    for family in families:
        overlap = table.keys() & family.TABLE.keys()
        if overlap:
            raise RuntimeError(f"ONNX rules defined twice: {sorted(overlap)}")
        table.update(family.TABLE)
    return table


TABLE = _join(FAMILIES)
