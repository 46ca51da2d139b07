"""ember: tensors, autograd and neural networks with PyTorch's API, on pluggable backends.

Every op is a row of one table (``ember.dispatcher.optable``); the functions here and the Tensor
methods are generated from it, and every call goes through the dispatcher's layers to a kernel
provided by a backend plugin (``python -m ember.plugins`` lists them).
"""

from __future__ import annotations

import os as _os

# In a source checkout ember.dispatcher, ember.autograd and ember.nn live beside this folder
# (dispatcher/, autograd/, nn/) and the installed wheel maps them under ember/. Running from the
# checkout (``python -m pytest`` puts it first on sys.path, ahead of the installed copy) finds
# this folder instead, so the checkout root joins the package path; installed copies are untouched.
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "dispatcher")) and _os.path.isfile(
    _os.path.join(_checkout, "dispatcher", "opdef.py")
):
    __path__.append(_checkout)
del _checkout, _os

from . import (
    _bind,
    _complex,
    _dtype,
    _factories_more,
    _foreach,
    _frontends,
    _indexing,
    _legacy_types,
    _nn_entry,
    _python_signatures,
    _scatter,
    _surface,
    _tensor_surface,
    _torch_entry,
    ops,
    return_types,
)
from ._device import device, get_default_device, set_default_device
from ._dtype import (
    bfloat16,
    complex64,
    complex128,
    dtype,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._dtype import bool_ as bool
from ._factories import *  # noqa: F403 - the factories' __all__ is deliberate
from ._finfo import finfo, iinfo
from ._layout import (
    _mkldnn,
    jagged,
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ._random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ._repr import set_printoptions
from ._size import Size
from ._tensor import Tensor
from .dispatcher.optable import OPS as _OPS

half = float16
float = float32
double = float64
short = int16
int = int32
long = int64
cfloat = complex64
cdouble = complex128

_bind.bind(_OPS, Tensor, globals())
for _module in (
    _frontends,
    _foreach,
    _surface,
    _complex,
    _factories_more,
    _nn_entry,
    _scatter,
    _python_signatures,
):
    for _name, _fn in _module.FUNCTIONS.items():
        globals()[_name] = _fn
    for _name, _fn in _module.METHODS.items():
        setattr(Tensor, _name, _fn)
for _alias, _target in _frontends.ALIASES.items():
    if _target in globals():
        globals()[_alias] = globals()[_target]
    if hasattr(Tensor, _target):
        setattr(Tensor, _alias, getattr(Tensor, _target))
# other spellings of what is bound above (torch.relu_(x), torch.row_stack...): never over a name
for _name, _fn in _torch_entry.FUNCTIONS.items():
    globals().setdefault(_name, _fn)
for _name, _fn in _torch_entry.METHODS.items():
    setattr(Tensor, _name, _fn)
_torch_entry.bind_inplace_aliases(Tensor)
for _name, _fn in _legacy_types.FUNCTIONS.items():  # ember.FloatTensor, set_default_tensor_type
    globals()[_name] = _fn
for _name, _fn in _tensor_surface.METHODS.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in _tensor_surface.PROPERTIES.items():
    setattr(Tensor, _name, _fn)
globals().update(_tensor_surface.FUNCTIONS)  # ember.is_inference
Tensor.__getitem__ = _indexing.getitem
Tensor.__setitem__ = _indexing.setitem
Tensor.__pos__ = lambda self: self
del _name, _fn, _alias, _target, _module

# Last: these packages use the bound Tensor and the generated functions. multiprocessing
# registers its pickler reductions, as torch's does on import: tensors sent through any
# multiprocessing queue, pipe or process argument share memory instead of being copied.
from . import (
    _accelerator,
    amp,
    autograd,
    backends,
    compiler,
    fft,
    func,
    linalg,
    mps,
    multiprocessing,
    nn,
    optim,
    overrides,
    profiler,
    random,
    signal,
    special,
    storage,
    utils,
    version,
)
from ._determinism import *  # noqa: F403 - issue 15: deterministic and matmul precision switches
from ._runtime_flags import BUILD_FLAGS as _BUILD_FLAGS
from ._runtime_flags import FUNCTIONS as _RUNTIME_FLAGS

globals().update(_RUNTIME_FLAGS)  # set_warn_always, set_anomaly_enabled...
globals().update(_BUILD_FLAGS)  # has_lapack, has_mkl, has_openmp, has_spectral
del _BUILD_FLAGS, _RUNTIME_FLAGS
from .amp import GradScaler, autocast  # torch.GradScaler is torch.amp.GradScaler
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .compiler import compile  # cheap: the capture machinery loads on the first compiled call
from .compiler.control_flow import cond, while_loop  # torch.cond, torch.while_loop
from .dispatcher.autocast import (
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .func import vmap
from .serialization import load, save
from .storage import TypedStorage, UntypedStorage

globals().update(linalg.TOP_LEVEL)  # torch.lu, torch.tensordot: Python functions there too
for _name, _fn in linalg.TENSOR_METHODS.items():
    setattr(Tensor, _name, _fn)
del _name, _fn

# Subsystems that load on first use: ``ember.jit.trace(...)`` works after ``import ember`` alone,
# without ``import ember`` paying for them.
_LAZY = ("jit", "fx", "export", "onnx", "_dynamo", "distributions")
_LAZY += ("testing", "functional", "hub", "__future__")  # issue 15 everyday helpers
_LAZY += ("masked",)  # issue 13: torch.masked's reductions
_LAZY += ("futures",)
_LAZY += ("_logging",)  # torch._logging.set_logs over ember.compile's log artifacts
_LAZY += ("accelerator", "library")  # torch.accelerator; torch.library's custom ops
_LAZY += ("_inductor", "_functorch")  # their config modules, set by torch.compile programs
_LAZY += ("_higher_order_ops",)  # torch._higher_order_ops: cond, while_loop, map


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"ember.{name}")
    if name in ("complex32", "chalf"):
        raise AttributeError(
            f"ember.{name}: ember has no complex32 (ComplexHalf) dtype; use ember.complex64"
        )
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


from math import e, inf, nan, pi  # torch.pi, torch.inf...: Python floats there too

from ._accelerator import get_device_module
from .dispatcher.allocator import OutOfMemoryError  # torch.OutOfMemoryError

newaxis = None  # torch.newaxis, numpy's spelling of None in an index

cuda = _accelerator.module("cuda")
xpu = _accelerator.module("xpu")
cpu = _accelerator.module("cpu")
for _name in amp._deprecated.DEVICE_TYPES:  # ``import ember.cuda.amp`` finds them in sys.modules
    amp._deprecated.module(_name)
del _name

__version__ = version.__version__
