"""Graph passes: each a function ``pass(graph) -> graph`` (rewriting in place, returning it).

- ``dce.eliminate_dead_code``: nodes whose results are unused and that have no effects.
- ``constant_fold.fold_constants``: nodes whose inputs are all constants, evaluated once.
- ``cse.eliminate_common_subexpressions``: identical pure nodes merged.
- ``freeze.inline_attributes``: parameters and buffers become constants.
- ``conv_bn.fold_conv_batch_norm``: an eval-mode batch norm folded into the convolution before it.
- ``transposes.fold_double_transposes``: ``t(t(x))`` is ``x`` (backward formulas make them).
- ``shape_prop.propagate_shapes``: every value's type from the op table's rules (meta tensors).
"""
