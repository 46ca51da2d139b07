"""ember.nn against PyTorch: layers, losses, functional forms, Module behaviour, init, utils.

- ``oracle.py``: moving weights and data between ember and torch, and the one comparison that
  most tests use (``check_module``: forward outputs, input gradients and parameter gradients).
- ``test_*.py``: one file per area; each oracle test is parametrised with the ``device`` fixture
  (tests/conftest.py), so the same checks run on every device a backend provides.
"""
