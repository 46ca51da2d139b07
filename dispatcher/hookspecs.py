"""The hooks a plugin implements. Each spec is the documentation of its hook.

A plugin is any object (usually a module) found through an entry point in ``ember.backends`` or
``ember.ops``. It marks its hooks with its own ``pluggy.HookimplMarker("ember")`` and never imports
ember, so it can be built and tested alone. Registration hooks must be cheap; native code is loaded
only in ``ember_backend_load``, the first time the device is used, and a failure there is kept and
reported instead of breaking ``import ember``.
"""

from __future__ import annotations

import pluggy

PROJECT = "ember"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def ember_backend_info():
    """Describe a backend without touching hardware or loading native code.

    Returns:
        dict with keys ``name`` (str, short: ``"cpu"``), ``device_types`` (list of str),
        and optionally ``priority`` (int, higher wins when two backends serve one device type;
        ``plugins.toml`` overrides it), ``version`` (str) and ``description`` (str).
    """


@hookspec
def ember_backend_load(device_type, config):
    """Initialise the backend for ``device_type`` (load libraries, probe devices).

    Called once, lazily; an exception is recorded as the reason the backend is unavailable.
    ``config`` is the plugin's own table of the plugin policy (``[backends.<name>]`` of
    ``plugins.toml`` merged with the user's file), so a plugin reads its settings without
    importing ember; an implementation that needs none may leave the argument out.

    Returns:
        dict with ``runtime`` (see ``docs/plugins.md``: ``device_count()``, ``device_name(i)``,
        ``alloc(nbytes, i)``, ``free(handle, i)``, ``address(handle)``, ``copy_in``,
        ``copy_out``, ``copy_between``, ``synchronize(i)``, ``cache_min_bytes``,
        ``host_memory``) and ``kernels``: ``{op name: {dtype name or "*": kernel}}``.
    """


@hookspec
def ember_op_library():
    """Define third-party ops (the ``ember.ops`` entry-point group).

    Called once, the first time a script touches ``ember.ops.<namespace>`` (or by
    ``python -m ember.plugins``). A library registers as one unit: any malformed or conflicting
    definition marks it broken with the reason, and none of its ops are defined.

    Returns:
        a list of op definitions, dicts with:
        ``schema`` (``"ns::name(Tensor x, *, float alpha=1.0) -> Tensor"``);
        ``kernels`` (``{device type: {dtype name or "*": kernel}}``, called as
        ``kernel(*outs, *inputs, *params)``: outputs allocated from ``shape``, tensor inputs
        contiguous on the device);
        ``shape`` (required with kernels: arguments with tensors as TensorMeta -> ``(shape,
        dtype)`` or a TensorMeta per output);
        ``backward`` and ``setup_context`` (PyTorch's ``register_autograd`` convention; required
        unless ``differentiable`` is False or there is a ``decomposition``);
        and optionally ``dtypes`` (names; default all), ``decomposition`` (the op in ember ops,
        for devices and dtypes without a kernel), ``reference`` (numpy, for ``opcheck``),
        ``differentiable`` (default True) and ``priority`` (of its kernels, default 0).
    """


@hookspec
def ember_fused_kernel(device_type, description):
    """A kernel for a chain of elementwise ops that ``ember.compile`` fused (optional hook).

    Called on the backend serving ``device_type`` when a compiled region is first replayed,
    once per chain. ``description`` (ember's ``compiler/fusion.py`` ``FusedKernel``) is plain
    data in the op table's vocabulary: ``shape`` (the elementwise steps' shape), ``dtype``
    (their dtype name, ``"float32"`` or ``"float64"``), ``inputs`` (each with ``dtype``,
    ``shape`` and ``strides``: element strides of a contiguous tensor of that shape broadcast
    to ``shape``, 0 on broadcast dimensions), ``steps`` (each with ``op``: an op-table name
    such as ``add``, ``gelu``, ``where``; ``args``: ``("input", k)``, ``("step", n)`` or
    ``("scalar", value)``; ``params``: the op's non-tensor arguments, e.g.
    ``{"approximate": "tanh"}``; ``dtype``) and ``outputs`` (indices of the steps whose values
    are stored, one tensor each, in the call's order). The last step may be a row op over the
    last dim of ``shape``: ``sum``, ``mean``, ``amax`` (``params["keepdim"]``; its output has
    the reduced shape), ``softmax``, ``log_softmax``, ``layer_norm`` (``params["eps"]``; args
    1 and 2 the weight and bias, ``("scalar", None)`` when absent). ``features`` (a sorted tuple)
    names what a description uses beyond that; a generator that does not know one returns
    None (ember then plans the program again without them):
    ``"row_steps"``: steps before the last with ``row`` true hold one value per row (a keepdim
    ``sum``/``mean``/``amax`` over the last dim, or an elementwise step reading only such
    values and inputs broadcast along the row, shape ``shape[:-1] + (1,)``), read by later
    steps as a broadcast; a stored one is an output of that shape. ``"row_index"``: a
    ``scatter_add`` step (args: base, an ``int64`` input of one index per row, a per-row
    value) adds the value at the row's index (``full`` steps, no args, give a constant); the
    kernel must check the indices (``0 <= index < shape[-1]``) and the call raise
    ``IndexError`` for one out of range. ``"row_tail"``: steps after a ``softmax``,
    ``log_softmax`` or ``layer_norm`` (not then the last step), cross-entropy's forward: with
    ``row`` true one value per row (``ne``/``eq``..., ``bitwise_not``, ``where`` of ``int64``
    or ``bool`` values, ``unsqueeze``/``squeeze``/``view``/``reshape`` as the same value,
    ``_to_copy`` to the chain's dtype, float arithmetic, and ``gather`` with args the row op's
    step and a per-row ``int64`` index, checked as ``scatter_add``'s is: ``IndexError`` named
    ``gather``); inputs they read hold one value per row (strides walk the rows, 0 along the
    last dim); with ``total`` true one value for the whole kernel, after every row (``sum`` of
    a per-row value over every row, or a step reading only totals), stored as a 0-d output.
    Other step ops a generator does not know (``addcmul``:
    ``params["value"]``) are declined the same way. A multi-tensor chain (a
    compiled optimizer's update) has ``segments``, the sizes of the tensors it runs over
    (``shape`` is ``(sum,)``), and ``writes``: per output, the input it is stored into (in
    place) or None; its kernel takes each input of nonzero stride, and each output not written
    in place, as a sequence of tensors (one per segment), the others as tensors, and carries
    ``kernel.segments`` equal to the description's (a kernel without it is not used). Other
    descriptions have both empty. ``dynamic`` (a size-generic program's chain) lists the dims
    of ``shape`` whose sizes each call gives: ``shape`` and the inputs' shapes and strides are
    those of the capture, and a call's sizes are its tensors' (inputs and outputs align with
    ``shape`` as described, sizes 0 and 1 never given); its kernel carries
    ``kernel.dynamic`` equal to the description's (a kernel without it is not used).

    Returns:
        ``kernel(*outs, *inputs)`` (outputs allocated contiguous, inputs contiguous at their
        own shape, on the device), or None to let the chain run op by op; a backend without
        this hook gets the same.
    """
