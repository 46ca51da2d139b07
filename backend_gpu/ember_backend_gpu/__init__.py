"""The shared half of ember's GPU backends (``ember-backend-cuda``, ``ember-backend-rocm``).

Not a plugin (no entry point) and no driver: kernel sources generated for a target (``codegen``,
"cuda" or "hip"), their glue (``kernels.build_table(runtime)``), launch plans (``launch``), the
driver-independent runtime (``gpu.GpuRuntime``) with its streams and events (``streams``), the
on-disk cache of compiled modules (``diskcache``) and the CPU emulator the tests run the kernels
on (``emulator``). A backend subclasses ``GpuRuntime`` with its driver's hooks, so every backend
runs this code, and the emulator's runs test it as the GPUs run it.

It is its own distribution so that the ROCm plugin can use it without installing the CUDA plugin
and pycuda, which does not build without the CUDA toolkit.
"""
