"""PyTorch's OpInfo database as the oracle (``tests/ops/test_opinfo.py``).

- ``convert.py``: torch values to ember values and back, and the ember callable for each of a
  record's variants (function, method, in-place, operator), found by the same public name.
- ``runner.py``: one record on one device: every sample, every variant, values and gradients.
- ``xfails.py``: the one table of records that do not pass yet, each with its reason.
- ``report.py``: the pytest plugin that prints the pass counts (records and samples).
"""
