"""Op tests generated from the op table (``ember.dispatcher.optable.OPS``).

- ``samples.py``: the registry of sample generators, one per ``OpDef.samples`` name (``gen_*.py``
  hold them by family; ``sampling.py`` is their vocabulary: values + memory layout per tensor).
- ``test_ops.py``: every op x device x accepted dtype against the row's numpy reference.
- ``test_properties.py``: ops without a reference (random, factories, as_strided, split...).
- ``test_coverage.py``: every op tested, every primitive with a kernel on each device.
- ``test_torch_oracle.py``: promotion and special values against PyTorch, when installed.

A new row needs nothing here when its ``samples`` name exists; a new name needs a generator in
``samples.GENERATORS``; a row without a reference needs an entry in ``PROPERTIES``.
"""
