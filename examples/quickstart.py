"""A first look at ember: tensors, broadcasting, reductions, matmul and the plugin system.

Run: python examples/quickstart.py
"""

import ember

ember.manual_seed(0)
x = ember.randn(64, 128, dtype=ember.float32)
w = ember.randn(128, 10)
y = (x @ w).relu().sum(dim=1, keepdim=True) / 3
print("y:", y.shape, y.dtype, y.device, y.numpy()[:2].ravel())

a = ember.arange(12).reshape(3, 4)
print("a:\n", a)
print("a.T[1:, ::2]:\n", a.T[1:, ::2])
print("a[a > 5]:", a[a > 5])
print("softmax-ish rows:", (a.float().exp() / a.float().exp().sum(1, keepdim=True)).sum(1))

from ember.plugins import report  # noqa: E402

print()
print(report())
