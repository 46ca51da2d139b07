"""A compiled function: a cache of regions keyed by guards, recompiling on a guard failure.

Each call computes its guard key (``guards.call_key``); a hit replays the region's generated
code; a miss captures the call (its result is the capture's eager run), up to
``config.recompile_limit`` entries, after which new guard sets run eagerly with PyTorch's
warning. A capture that broke (``.item()``, ``print`` of a tensor...) caches an entry that
records the reason and runs the Python at each call with its ops deferred into compiled
segments around the break (segments.py), with or without gradients.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import types
import weakref

from ember._tensor import Tensor
from ember.jit import pytree
from ember.jit.tracer import _ACTIVE, CAPTURE_LOCK, current

from . import (
    config,
    dynamic,
    effects,
    fusion,
    guards,
    logs,
    overhead,
    python_guards,
    segments,
    size_guards,
    stance,
)
from .exc import FailOnRecompileLimitHit, RecompileError
from .module_probe import ModuleProbe
from .observer import COMPILE, FULLGRAPH, Observer
from .region import record, replayed_graph, split
from .train_region import TrainRegion

WARN = logging.getLogger("ember._dynamo.convert_frame")
_INSTANCES: weakref.WeakSet = weakref.WeakSet()


class Entry:
    """One guard set: the region to replay (None: run eagerly) and the module flags it assumed."""

    __slots__ = (
        "guarded", "hooks", "modules", "paths", "probe", "python", "reasons", "region", "sizes"
    )  # fmt: skip

    def __init__(self, region, modules: list, reasons: list, paths=None, python=None):
        self.region = region
        self.paths = paths  # no region: the compiled segments around its breaks
        self.modules = modules
        self.probe = ModuleProbe(modules)
        self.hooks = guards.HookGuard(modules)
        self.python = python  # python_guards.PythonGuards: the globals and closures it read
        self.guarded = bool(modules) or python is not None
        self.reasons = reasons
        self.sizes = None  # size_guards.SizeGuards: the comparisons of sizes it assumed

    def matches(self) -> bool:
        return self.hooks() and self.probe.check() and (self.python is None or self.python())

    def failure(self) -> str:
        """Why ``matches`` failed, for the recompile reason."""
        if not self.hooks():
            return "a module's hooks changed (guarded: the hooks its capture ran)"
        found = self.python.failure() if self.python is not None else None
        return found or self.probe.failure()


class _Eager:
    """The ``paths`` of an entry whose calls run eagerly (module backward hooks)."""

    @staticmethod
    def call(fn, args, kwargs):
        return fn(*args, **kwargs)


EAGER = _Eager()


class CompiledFunction:
    """What ``ember.compile(fn)`` returns for a function (and holds for a module)."""

    def __init__(self, fn, options, root=None):
        self._fn = fn
        self._options = options
        self._root = root
        self._cache: dict = {}
        self._count = 0
        self._last = None  # the key of the newest entry (for recompile reasons)
        self._limit_warned = False
        self._dynamic = None  # {argument leaf: dims} guarded by rank only (dynamic.py)
        self._static = False  # a graph was not size-generic: every size specialised from then
        self._called_under_stance = False  # set_stance("eager_then_compile"): first call seen
        self._captures = 0  # captures ever made (never reset): _miss_in_turn's sign of change
        functools.update_wrapper(self, fn, updated=())
        _INSTANCES.add(self)

    def __get__(self, instance, owner=None):
        """A bound method when the compiled function is a class attribute (``@ember.compile``
        over a method, as over ``forward``), as torch.compile's wrapper binds."""
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args, **kwargs):
        if (_ACTIVE and current() is not None) or not config.enabled or segments.running():
            return self._fn(*args, **kwargs)  # inside a capture: inline, as dynamo does
        if stance.CURRENT[0] is not stance.DEFAULT and stance.runs_eagerly(self):
            return self._fn(*args, **kwargs)  # set_stance("force_eager") and the like
        captures = self._captures  # read before the lookup: see _miss_in_turn
        key = None if kwargs or self._dynamic else guards.fast_key(args)
        if key is not None:
            leaves, positions = args, None
        else:
            leaves, spec, positions = split(args, kwargs)
            key = (repr(spec), guards.call_key(leaves, self._dynamic))
        for entry in self._cache.get(key, ()):
            if entry.paths is not None:  # the Python runs: it reads the modules' flags itself
                if not entry.hooks():  # but backward hooks added since would be skipped
                    continue
                return entry.paths.call(self._fn, args, kwargs)
            if entry.guarded and not entry.matches():
                continue
            tensors = leaves if positions is None else [leaves[i] for i in positions]
            if entry.sizes is not None and not entry.sizes(tensors):
                continue
            return entry.region.run(self._root, tensors)
        return self._miss_in_turn(captures, key, leaves, args, kwargs)

    def _miss_in_turn(self, captures, key, leaves, args, kwargs):
        """Captures take turns across threads (CAPTURE_LOCK). While this thread waited, another
        may have captured this very call or made its sizes dynamic, which changes the guard key
        (a capture on the stale key read no sizes and failed): after any capture since the
        lookup, the call looks again, now in turn."""
        with CAPTURE_LOCK:
            if self._captures != captures:
                return self(*args, **kwargs)
            guards.remember_devices(leaves)
            return self._miss(key, leaves, args, kwargs)

    # ---- compiling ---------------------------------------------------------------------------
    def _miss(self, key, leaves, args, kwargs):
        names = self._leaf_names(args, kwargs)
        reasons = self._reasons(key, names, leaves)
        if stance.CURRENT[0] is not stance.DEFAULT and stance.refuses_capture(self, reasons):
            return self._fn(*args, **kwargs)  # set_stance("eager_on_recompile")
        if config.disable:  # PyTorch's switch: no new captures, cached entries still replay
            return self._fn(*args, **kwargs)
        if self._count >= _limit() or self._accumulated() >= config.accumulated_recompile_limit:
            return self._over_limit(reasons, args, kwargs)
        if self._count and config.error_on_recompile:
            raise RecompileError(self._recompile_text(reasons))
        dims = self._new_dynamic(key, leaves)
        if dims is not None:
            self._dynamic = dims
            key = self._key(args, kwargs)
            reasons.append(f"automatic dynamic shapes: {self._dims_text(dims, names)}")
        if self._count and logs.enabled("recompiles"):
            logs.log("recompiles", self._recompile_text(reasons))
        mode = FULLGRAPH if self._options.fullgraph else COMPILE
        observer = Observer(mode, None)
        sizes = contextlib.nullcontext()
        if self._dynamic:
            sizes = dynamic.watching_sizes(self._tensor_dims(leaves))
        watch = effects.watch(self._fn, args, kwargs, self._root)
        with sizes as reads:
            result, region = record(self._fn, args, kwargs, self._root, observer)
        checks = None
        if self._dynamic and region is not None:
            counts = dynamic.count_guards(region.graph, leaves, self._dynamic)
            checks, baked = size_guards.build(reads.compares + counts)
            reads.bakes += baked
            inner = getattr(region, "forward", region)  # a training step's: its forward
            if getattr(inner, "size_outputs", False):
                reads.bakes.append("a size returned as an output")
            region, key = self._generic(region, key, leaves, reads.bakes, names, args, kwargs)
            checks = checks if self._dynamic else None  # every size specialised: not needed
        changed = watch.changes() if region is not None else []
        if changed:  # a replay would skip them: the Python runs at every call instead
            logs.log("graph_breaks", f"{self.__qualname__}: Python side effects: {changed[0]}")
            region = None
        if region is not None and self._options.mode == overhead.MODE:
            region.static = True
        modules = list(observer.modules.values())
        if self._root is not None and id(self._root) not in observer.modules:
            modules.insert(0, self._root)  # called through _call_impl, so not observed
        # a capture that broke, or Python side effects a replay would skip: the Python runs at
        # every call, its ops deferred into compiled segments
        paths = segments.Paths(self.__qualname__) if region is None else None
        if guards.backward_hooks(observer.modules.values(), self._root):
            # module backward hooks run in the backward of the module's own autograd nodes,
            # which neither a compiled pair nor a segment's node has: the calls run eagerly
            logs.log("graph_breaks", f"{self.__qualname__}: module backward hooks: run eagerly")
            region, paths = None, EAGER
        python = python_guards.from_watch(watch) if region is not None else None
        entry = Entry(region, modules, observer.reasons, paths, python)
        entry.sizes = checks if region is not None else None
        self._cache.setdefault(key, []).append(entry)
        self._count += 1
        if self._code is not None:
            _ACCUMULATED[self._code] = self._accumulated() + 1
        self._captures += 1
        self._last = key
        self._log(region, key, names, observer, python)
        if entry.sizes is not None:
            logs.log("guards", "\n".join(f"size guard: {t}" for t in entry.sizes.describe()))
        return result

    # ---- dynamic sizes (dynamic.py) ----------------------------------------------------------
    def _key(self, args, kwargs):
        """The guard key as ``__call__`` computes it now."""
        if not kwargs and not self._dynamic:
            key = guards.fast_key(args)
            if key is not None:
                return key
        leaves, spec, _ = split(args, kwargs)
        return (repr(spec), guards.call_key(leaves, self._dynamic))

    def _new_dynamic(self, key, leaves):
        """The dynamic dims after this miss, when they grow (else None). ``dynamic=None``
        follows PyTorch's config: ``assume_static_by_default=False`` makes every dim dynamic
        from the first call, ``automatic_dynamic_shapes=False`` keeps changed sizes static."""
        option = self._options.dynamic
        if self._static or option is False:
            return None
        every = option or (option is None and not config.assume_static_by_default)
        found = dynamic.every_dim(leaves) if every else {}
        found = dynamic.merge(found, dynamic.marked(leaves))
        automatic = option is None and config.automatic_dynamic_shapes
        if automatic and self._last is not None:  # the sizes that changed
            found = dynamic.merge(found, dynamic.changed_dims(self._last[1], key[1]) or {})
        merged = dynamic.without_static(dynamic.merge(self._dynamic, found), leaves)
        return merged if merged and merged != (self._dynamic or {}) else None

    def _generic(self, region, key, leaves, bakes, names, args, kwargs):
        """``(region, key)``: the region made size-generic, or every size specialised from now
        on when the graph is not (with the reason logged)."""
        # a training step's region: its forward is made generic (its pair: joint_dynamic.py)
        inner = region.forward if isinstance(region, TrainRegion) else region
        if inner is None:
            why = "a training step without a forward specialises its sizes"
        else:
            why = dynamic.not_generic(region.graph, leaves, self._dynamic, bakes)
        if why is None:
            tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
            dims = self._tensor_dims(leaves)
            inner = dynamic.DynamicRegion(inner, tensors, dims, self.__qualname__)
            if isinstance(region, TrainRegion):
                region.forward = inner
                return region, key
            return inner, key
        logs.log("recompiles", f"{self.__qualname__}: sizes stay static: {why}")
        self._dynamic = None
        self._static = True
        return region, self._key(args, kwargs)

    def _tensor_dims(self, leaves) -> dict:
        """The dynamic dims by tensor (graph input) index rather than leaf position."""
        at = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
        return {k: self._dynamic[i] for k, i in enumerate(at) if i in self._dynamic}

    @staticmethod
    def _dims_text(dims: dict, names: list) -> str:
        parts = []
        for i, ds in sorted(dims.items()):
            name = names[i] if i < len(names) else f"L[{i}]"
            parts += [f"{name!r} dim {d}" for d in sorted(ds)]
        return ", ".join(parts) + " dynamic"

    def _over_limit(self, reasons, args, kwargs):
        if self._options.fullgraph or config.fail_on_recompile_limit_hit:
            why = "fullgraph=True" if self._options.fullgraph else "fail_on_recompile_limit_hit"
            raise FailOnRecompileLimitHit(
                f"Hard failure due to {why}: {self.__qualname__} hit {self._limit_text()}"
            )
        if not self._limit_warned:
            self._limit_warned = True
            code = getattr(self._fn, "__code__", None)
            where = f"'{code.co_name}' ({code.co_filename}:{code.co_firstlineno})" if code else "?"
            WARN.warning(
                "ember._dynamo hit %s\n   function: %s\n   last reason: "
                '%s\nTo log all recompilation reasons, use EMBER_LOGS="recompiles".\nTo diagnose '
                "recompilation issues, see docs/compile.md",
                self._limit_text(),
                where,
                f"0/{self._count - 1}: {reasons[0] if reasons else 'guard failure'}",
            )
        return self._fn(*args, **kwargs)

    def _limit_text(self) -> str:
        if self._count >= _limit():
            return f"config.recompile_limit ({_limit()})"
        return f"config.accumulated_recompile_limit ({config.accumulated_recompile_limit})"

    @property
    def _code(self):
        """What ``accumulated_recompile_limit`` counts by: the code object, as PyTorch's (a
        module's forward for a module's calls); None for a callable without code."""
        fn = getattr(type(self._root), "forward", None) if self._root is not None else self._fn
        return getattr(fn, "__code__", None)

    def _accumulated(self) -> int:
        """Entries captured so far by every compiled function of this code."""
        return _ACCUMULATED.get(self._code, 0) if self._code is not None else 0

    def _reasons(self, key, names, leaves) -> list[str]:
        if self._last is None:
            return []
        if self._last[0] != key[0]:
            return ["the arguments' structure changed"]
        found = guards.failures(self._last[1], key[1], names)
        if not found and self._cache.get(key):
            entry = self._cache[key][-1]
            tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
            failed = entry.sizes.failure(tensors) if entry.sizes is not None else None
            found = [failed or entry.failure()]
        return found or ["the guards of an earlier entry failed"]

    def _recompile_text(self, reasons) -> str:
        code = getattr(self._fn, "__code__", None)
        where = f"{code.co_name} in {code.co_filename}:{code.co_firstlineno}" if code else "?"
        lines = [
            f"Recompiling function {where}",
            "    triggered by the following guard failure(s):",
        ]
        lines += [f"    - {self._count - 1}/0: {reason}" for reason in reasons]
        return "\n".join(lines)

    def _log(self, region, key, names, observer, python) -> None:
        if region is None:
            logs.log("graphs", f"{self.__qualname__}: no graph (graph break): compiled segments")
            return
        logs.log("graphs", f"graph of {self.__qualname__}:\n{region.graph}")
        described = guards.describe(key[1], names)
        logs.log("guards", "\n".join(described + (python.describe() if python else [])))
        if logs.enabled("fusion"):
            plan = fusion.summary(replayed_graph(region.graph))
            logs.log("fusion", f"{self.__qualname__}: {plan}")

    def _leaf_names(self, args, kwargs) -> list[str]:
        _leaves, spec, _ = split(args, kwargs)
        try:
            params = [p.name for p in inspect.signature(self._fn).parameters.values()]
        except (TypeError, ValueError):
            params = []
        names = []
        for path in pytree.leaf_paths(spec):
            group, index, *rest = path.split(".")
            if group == "0":
                i = int(index)
                index = params[i] if i < len(params) else f"args[{i}]"
            names.append(".".join([index, *rest]))
        return names

    def _reset(self) -> None:
        self._cache.clear()
        self._count = 0
        self._last = None
        self._limit_warned = False
        self._dynamic = None
        self._static = False
        self._called_under_stance = False


def _limit() -> int:
    return config.recompile_limit


# entries captured per code object, over every compiled function of it (as PyTorch counts
# ``accumulated_recompile_limit``); weak keys: a function's count goes with it
_ACCUMULATED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def reset_all() -> None:
    for instance in list(_INSTANCES):
        instance._reset()
    _ACCUMULATED.clear()
