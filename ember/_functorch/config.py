"""``ember._functorch.config``: PyTorch 2.13's ``torch._functorch.config``, every name with
PyTorch's default (compiler/torch_configs/functorch.txt).

None of them changes what ember does: they steer AOT autograd's recomputation
(``activation_memory_budget``, ``ban_recompute_*``), its caches and its debug checks. ember's
training regions save what eager autograd saves (compiler/joint.py), so a memory budget does
not change them; results are eager's either way.
"""

from ember.compiler.config_module import install

install(__name__, "functorch")
