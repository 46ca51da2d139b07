"""Dispatch-free replay: a captured graph as Python that calls pre-resolved kernels.

The graph is specialised (sizes, dtypes, devices are guarded), so what the dispatcher works
out on every eager call is known when the region is built: which runner serves each node and,
for plain elementwise nodes (operands of the output's dtype and shape, no cast, no check),
which kernel. Those nodes become ``out = empty(shape, dtype, device); kernel(out, a, b)``; the
others call their runner directly (the Backend layer, skipping the layer loop). Each
intermediate is deleted after its last use, so its buffer goes back to the caching allocator
and the next node of its size reuses it (memory planning by liveness; ``plan_memory`` gives
the peak that order reaches, which ``explain()`` reports).

The program is used only where the layer loop would have found nothing to do: no layer but
autograd installed (no autocast, profiler, vmap...) and no gradient to record; elsewhere the
region replays through the dispatcher (``jit.codegen``'s code).
"""

from __future__ import annotations

import math

import ember
from ember._tensor import contiguous_strides, empty, is_contiguous, make
from ember.autograd.grad_mode import THREAD as GRAD
from ember.dispatcher.kinds import elementwise, reduction, twin
from ember.dispatcher.kinds._common import expand_to
from ember.dispatcher.opdef import Promotion
from ember.jit.codegen import _Writer
from ember.jit.ops import is_view, resolve
from ember.jit.prims import PRIMS
from ember.jit.types import TensorType

from . import fusion, fusion_steps, lower

_ELEMENTWISE = (elementwise.unary, elementwise.binary)


def build(
    graph,
    inputs=None,
    nodes=None,
    outputs=None,
    method: bool = False,
    name="replay",
    fuse=False,
    writer=None,
    check=None,
    root=None,
):
    """The compiled program of ``nodes`` (default: the graph's), or None when the graph has
    control flow. ``fn(self, *inputs)`` (``fn(*inputs)`` when not ``method``) returns the
    tuple of ``outputs``, or None when a parameter it read now requires grad (recompute
    through the dispatcher: autograd must record). ``fuse``: elementwise chains run as the
    backend's fused kernels (fusion.py). ``writer``: the ``_Program`` subclass that writes it
    (overhead.py's binds preallocated buffers; replay_dynamic.py's computes shapes per call).
    ``check``: fusion.schedule's, for a chain's description. ``root``: the module the program
    will be called with, whose parameters it then reads straight from their registries."""
    nodes = list(graph.block().nodes()) if nodes is None else nodes
    if any(node.blocks() for node in nodes):
        return None
    inputs = graph.inputs() if inputs is None else inputs
    outputs = graph.outputs() if outputs is None else outputs
    chains = fusion.schedule(nodes, outputs, check) if fuse else ()
    writer = (writer or _Program)(graph, nodes, chains)
    writer.fuse = fuse  # the composites' sub-programs fuse too (lower.py)
    writer.root = root
    lines = writer.program(name, inputs, outputs, method)
    source = "\n".join(lines) + "\n"
    namespace = {
        "ops": writer.ops,
        "CONSTANTS": writer.constants,
        "empty": empty,
        "make": make,
        "expand_to": expand_to,
        "dense": _dense,
        "GRAD": GRAD,
        "ember": ember,
        "_raise": PRIMS["prim::RaiseException"].extra["run"],
    }
    namespace.update(writer.globals)
    exec(compile(source, f"<ember.compile {name}>", "exec"), namespace)  # our own source
    fn = namespace[name]
    fn.source = source
    return fn


class _Program(_Writer):
    """jit.codegen's writer with op nodes bound to their runner or kernel and ``del`` after
    each value's last use."""

    ARENA = True  # small temporaries in one buffer a call (a writer whose shapes vary: False)

    def __init__(self, graph, nodes, chains=()):
        super().__init__(graph)
        self.nodes = nodes
        self.globals: dict = {}
        # a fused chain runs where its last node was; its other nodes emit nothing
        self.fused = {chain.nodes[-1]: chain for chain in chains}
        self.absorbed = {node for chain in chains for node in chain.nodes[:-1]}
        at = {node: nodes.index(chain.nodes[-1]) for chain in chains for node in chain.nodes}
        self.last = _last_uses(nodes, at)
        self.kept: set = set()  # values that must outlive the body (outputs)
        self.params: list = []  # names of tensors read with prim::GetAttr
        self.taken |= {"empty", "expand_to", "dense", "GRAD", "make", _ARENA}
        self.arena: _Arena | None = None  # small temporaries' shared buffer (program())
        self.fuse = False
        self.root = None  # the module the program is called with, when known (attribute)

    def bind(self, value, base: str) -> str:
        """A global name for ``value`` in the generated module."""
        found, n = base, 0
        while found in self.taken:
            n += 1
            found = f"{base}{n}"
        self.taken.add(found)
        self.globals[found] = value
        return found

    def program(self, name, inputs, outputs, method: bool) -> list:
        params = ["self"] if method else []
        params += [self.name(v) for v in inputs]
        self.kept = set(outputs) | set(inputs)
        if self.ARENA:
            self.arena = _Arena(self.nodes, self.fused.values(), self.kept)
        body: list = []
        entry = None  # the caller's grad mode, known once a prim::set_grad_enabled changed it
        for index, node in enumerate(self.nodes):
            if node in self.absorbed:
                continue
            if node in self.fused:
                self.chain(self.fused[node], "    ", body)
            else:
                self.node(node, "    ", body)
            if node.kind() == "prim::set_grad_enabled" and entry is None:
                entry = not node.inputsAt(0).node()["value"]
            if node.kind() == "prim::GetAttr" and isinstance(node.output().type(), TensorType):
                self.params.append(self.name(node.output()))
                if node.output().type().requires_grad() is False:
                    body += _guard(self.params[-1], entry)
            dead = [v for v in self.last.get(index, ()) if v not in self.kept]
            dead = [self.names[v] for v in dead if v in self.names]
            if dead:
                body.append(f"    del {', '.join(dead)}")
        results = "".join(f"{self.expr(v)}, " for v in outputs)
        body.append(f"    return ({results})")
        if self.arena is not None and self.arena.size:
            u8, device = self.bind(ember.uint8, "D"), self.bind(self.arena.device, "DEV")
            body.insert(0, f"    {_ARENA} = empty(({self.arena.size},), {u8}, {device})._storage")
        if entry is not None:  # an error inside a grad-mode block must not leave its mode set
            body = [
                "    try:",
                *[f"    {line}" for line in body],
                "    except BaseException:",
                f"        ember.set_grad_enabled({entry})",
                "        raise",
            ]
        return [f"def {name}({', '.join(params)}):", *body]

    def attribute(self, qualified: str) -> str:
        """``self.0.weight`` as ``self._modules['0']._parameters['weight']`` where each step
        is what ``Module.__getattr__`` would find (registry_path)."""
        return registry_path(self.root, qualified) or super().attribute(qualified)

    def chain(self, chain, indent: str, out: list) -> None:
        """``out = empty(...); fused(out, ..., *inputs)``: the chain in one kernel call, each
        value it stores (a saved intermediate, the result) allocated first."""
        targets = []
        for value in chain.outputs:
            typ = value.type()
            shape = self.shape(value)
            dtype = self.bind(typ.dtype(), "D")
            device = self.bind(typ.device(), "DEV")
            targets.append(self.name(value))
            out.append(f"{indent}{targets[-1]} = {self.alloc(value, shape, dtype, device)}")
        args = ", ".join([*targets, *(f"dense({self.expr(v)})" for v in chain.inputs)])
        out.append(f"{indent}{self.bind(chain.kernel, 'FUSED')}({args})")

    def shape(self, value) -> str:
        """The expression of graph ``value``'s shape (a name bound to the guarded sizes)."""
        return self.bind(tuple(value.type().sizes()), "S")

    def strides(self, value) -> str:
        """The expression of the contiguous strides of ``value``'s shape."""
        return self.bind(contiguous_strides(tuple(value.type().sizes())), "ST")

    def number(self, value):
        """The expression of a size read (``prim::size``) known from the guarded types."""
        return fusion._constant(value)

    def sizes_of(self, value) -> tuple:
        """``value``'s sizes as the broadcasting checks compare them."""
        return tuple(value.type().sizes())

    def alloc(self, value, shape: str, dtype: str, device: str) -> str:
        """The expression of a fresh tensor for graph ``value`` (names bound in the module):
        a slice of the call's arena for a small temporary (``_Arena``), else ``empty()``."""
        offset = self.arena.place(value) if self.arena is not None else None
        if offset is not None:
            strides = self.strides(value)
            return f"make({_ARENA}, {shape}, {strides}, {offset}, {dtype}, True)"
        return f"empty({shape}, {dtype}, {device})"

    def node(self, node, indent: str, out: list) -> None:
        kind = node.kind()
        if kind == "prim::size" and fusion._metadata(node):  # its tensor may be fused away
            out.append(f"{indent}{self.name(node.output())} = {self.number(node.output())}")
            return
        op = None if kind.startswith("prim::") else resolve(kind)
        if op is None or op.runner is None:
            return super().node(node, indent, out)
        args = [self.expr(v) for v in node.inputs()]
        targets = ", ".join(self.name(v) for v in node.outputs())
        plain = _plain_kernel(op, node, self.sizes_of)
        if plain is not None:
            kernel, broadcast = plain
            result = node.output().type()
            shape = self.shape(node.output())
            for i, value in enumerate(node.inputs()):
                if value in broadcast:
                    args[i] = f"expand_to({args[i]}, {shape})"
            dtype = self.bind(result.dtype(), "D")
            device = self.bind(result.device(), "DEV")
            out.append(f"{indent}{targets} = {self.alloc(node.output(), shape, dtype, device)}")
            out.append(f"{indent}{self.bind(kernel, 'K')}({targets}, {', '.join(args)})")
            return
        if _kernel_call(node) is not None or _transposes(node):
            return self.direct(node, indent, out)
        if _reshapes(node):  # a contiguous input (the usual case) needs no runner
            rs = [self.bind(_reshaped, "RS"), self.shape(node.output())]
            rs.append(self.strides(node.output()))
            runner = f"{self.bind(twin.runner(op), 'R')}({', '.join([self.bind(op, 'OP'), *args])})"
            fast = f"{rs[0]}({args[0]}, {rs[1]}, {rs[2]})"
            out.append(f"{indent}{targets} = {fast} if {args[0]}._contig else {runner}")
            return
        sub = self.lower(op, node)
        if sub is not None:
            tensors = [self.expr(v) for v in node.inputs() if isinstance(v.type(), TensorType)]
            out.append(f"{indent}{targets}, = {self.bind(sub, 'SUB')}({', '.join(tensors)})")
            return
        self.call_runner(op, node, indent, out)

    def call_runner(self, op, node, indent: str, out: list) -> None:
        """``outputs = runner(op, *args)``: the Backend layer, the op's rules at the call."""
        args = [self.expr(v) for v in node.inputs()]
        targets = ", ".join(self.name(v) for v in node.outputs())
        runner = self.bind(twin.runner(op), "R")
        call = f"{runner}({', '.join([self.bind(op, 'OP'), *args])})"
        out.append(f"{indent}{targets} = {call}" if targets else f"{indent}{call}")

    def direct(self, node, indent: str, out: list) -> None:
        """A node whose runner's checks the guarded types settle: ``mm``/``bmm`` and keepdim
        reductions call their kernel into the output (``kernel(out, a, b)``,
        ``kernel(out, x, dims)``: the runners' contracts), ``t`` of a 2-D tensor builds the view
        itself."""
        target = self.name(node.output())
        if node.kind() == "ember::t":
            x = self.expr(node.inputsAt(0))
            out.append(f"{indent}{target} = {self.bind(_transposed, 'T')}({x})")
            return
        kernel, count, extra = _kernel_call(node)
        args = [self.expr(v) for v in list(node.inputs())[:count]]
        args += [self.bind(value, "C") for value in extra]
        typ = node.output().type()
        names = [self.shape(node.output()), self.bind(typ.dtype(), "D")]
        names.append(self.bind(typ.device(), "DEV"))
        kept = _kept_sizes(node, self.sizes_of(node.inputsAt(0)))
        if kept is None:
            out.append(f"{indent}{target} = {self.alloc(node.output(), *names)}")
            out.append(f"{indent}{self.bind(kernel, 'K')}({target}, {', '.join(args)})")
            return
        # without keepdim: the kernel writes the keepdim shape (its contract), and the result
        # is that buffer without the size-1 dims, as the runner's squeeze makes it
        # (sizes_of: expressions of the call's sizes in a generic program, replay_dynamic.py)
        buffer = f"empty(({''.join(f'{n}, ' for n in kept)}), {names[1]}, {names[2]})"
        out.append(f"{indent}{target} = {buffer}")
        out.append(f"{indent}{self.bind(kernel, 'K')}({target}, {', '.join(args)})")
        strides = self.strides(node.output())
        out.append(
            f"{indent}{target} = {self.bind(_squeezed, 'SQ')}({target}, {names[0]}, {strides})"
        )

    def lower(self, op, node):
        """The sub-program of composite ``node`` (lower.py), or None."""
        return lower.lowered(op, node, build, fuse=self.fuse)


_ARENA = "arena__"  # the program's local holding its arena's storage
ARENA_BYTES = 64 * 1024  # at most this many bytes of temporaries share one buffer a call
_ALIGN = 64  # each temporary starts on a cache line


class _Arena:
    """The small CPU temporaries of a program, each given its own slice of one buffer that the
    program allocates once per call: one ``empty()`` instead of one per temporary (each costs
    an allocator call, an address read and a Storage: about 3k instructions in the tiny MLP's
    training pair, where 17 of its 30 buffers are such temporaries).

    A temporary is a value the program allocates, not returned, not an input, and read only by
    direct kernel calls, fused kernels and views that are themselves such (``t``, a reshape):
    nothing can keep it, so the slices never need to be freed apart, and none overlap. The
    buffer lives until the call returns, so only ``ARENA_BYTES`` in all take this path; larger
    ones are freed after their last use as before."""

    def __init__(self, nodes, chains, kept):
        self.kept = kept
        self.in_chain = {node for chain in chains for node in chain.nodes}
        self.users: dict = {}
        for node in nodes:
            for value in node.inputs():
                self.users.setdefault(value, []).append(node)
        self.size = 0
        self.device = None

    def place(self, value) -> int | None:
        """``value``'s offset in elements of its dtype, or None (not such a temporary)."""
        typ = value.type()
        if not isinstance(typ, TensorType) or not typ.is_complete():
            return None
        device, itemsize = typ.device(), typ.dtype().itemsize
        if device.type != "cpu" or (self.device is not None and device != self.device):
            return None
        nbytes = math.prod(typ.sizes()) * itemsize
        start = -(-self.size // _ALIGN) * _ALIGN
        if start + nbytes > ARENA_BYTES or not self._contained(value):
            return None
        self.size, self.device = start + nbytes, device
        return start // itemsize

    def _contained(self, value) -> bool:
        """Whether nothing that outlives the node reading it can hold ``value``."""
        if value in self.kept:
            return False
        for user in self.users.get(value, ()):
            if user in self.in_chain:
                continue  # a fused kernel reads it
            kind = user.kind()
            op = None if kind.startswith("prim::") else resolve(kind)
            if op is None or op.runner is None:
                return False
            if _plain_kernel(op, user) is not None or _kernel_call(user) is not None:
                continue
            if not (_transposes(user) or _reshapes(user)) or not self._contained(user.output()):
                return False
        return True


def runs_itself(op, node) -> bool:
    """Whether a program runs op ``node`` other than by its decomposition (a kernel called
    directly, a view built in place, or codegen's own call when ``op`` has no runner)."""
    if op.runner is None or _plain_kernel(op, node) is not None:
        return True
    return _kernel_call(node) is not None or _transposes(node) or _reshapes(node)


def _guard(param: str, entry) -> list:
    """Lines that return None when ``param`` now requires grad and autograd would record it.
    Inside a grad-mode block (``entry`` known) the mode there says nothing about the ops
    outside it: any such parameter returns, after restoring the caller's mode."""
    if entry is None:
        return [f"    if GRAD.mode.enabled and {param}._requires_grad:", "        return None"]
    restore = f"        ember.set_grad_enabled({entry})"
    return [f"    if {param}._requires_grad:", restore, "        return None"]


def _plain_kernel(op, node, sizes_of=lambda v: tuple(v.type().sizes())):
    """``(kernel, inputs to broadcast)`` for an elementwise node that needs no promotion, cast
    or check (what the eager fast path runs, plus broadcast views), or None. ``sizes_of``:
    a value's sizes as compared (a generic program's are expressions of the call's sizes)."""
    runner = getattr(op.runner, "elementwise", op.runner)  # a row's wrapper: what it runs
    binary = runner is elementwise.binary
    if runner not in _ELEMENTWISE or op.mutates or not _check_passes(op, node, 1 + binary):
        return None
    outs = node.outputs()
    if len(outs) != 1 or not isinstance(outs[0].type(), TensorType):
        return None
    result = outs[0].type()
    if not result.is_complete() or not result.dtype().is_floating_point:
        return None
    inputs = node.inputs()
    if not isinstance(inputs[0].type(), TensorType):
        return None
    if runner is not op.runner and len(inputs) <= 1 + binary:  # the wrapper gives a parameter
        return None
    if binary and not _float_or_tensor(inputs[1]):
        return None
    broadcast = []
    for value in inputs[: 2 if binary else 1]:
        typ = value.type()
        if not isinstance(typ, TensorType):
            continue  # a float constant (_float_or_tensor)
        if (typ.dtype(), typ.device()) != (result.dtype(), result.device()):
            return None
        if sizes_of(value) != sizes_of(outs[0]):
            if not binary or not _broadcasts(sizes_of(value), sizes_of(outs[0])):
                return None
            broadcast.append(value)
    if result.dtype() not in op.dtypes:  # a limited dtype: the runner refuses it (twin.runner)
        return None
    compute, out_dtype = elementwise._types(op, result.dtype())
    if compute is not result.dtype() or out_dtype is not result.dtype():
        return None
    kernel = op.kernel(result.device().type, compute)
    return None if kernel is None else (kernel, broadcast)


def _check_passes(op, node, arity: int) -> bool:
    """Whether the op has no check, or one that reads only its parameters (a row's
    ``check_reads_params``: gelu_backward's ``approximate``), which the node's constants pass:
    the program then needs no check per call."""
    check = op.info.get("check")
    if check is None:
        return True
    if not op.info.get("check_reads_params"):
        return False
    params = []
    for value in list(node.inputs())[arity:]:
        if value.node().kind() != "prim::Constant":
            return False
        params.append(value.node()["value"])
    try:
        check(*[None] * arity, *params)
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


_PRODUCTS = frozenset(("ember::mm", "ember::bmm"))  # runners that end in kernel(out, a, b)


def _product_kernel(node):
    """The backend kernel of an ``mm``/``bmm`` node whose operands have its dtype and device
    (what the runner checks before calling it), or None."""
    if node.kind() not in _PRODUCTS or len(node.outputs()) != 1:
        return None
    result = node.output().type()
    if not isinstance(result, TensorType) or not result.is_complete():
        return None
    for value in node.inputs():
        typ = value.type()
        if not isinstance(typ, TensorType) or not typ.is_complete():
            return None
        if (typ.dtype(), typ.device()) != (result.dtype(), result.device()):
            return None
    op = resolve(node.kind())
    if result.dtype() not in op.dtypes:  # a limited dtype: its twin path (twin.runner)
        return None
    return op.kernel(result.device().type, result.dtype())


def _kernel_call(node):
    """``(kernel, tensor inputs passed, constants passed after them)`` of a node the replay
    calls its kernel for: ``mm``/``bmm`` (``_product_kernel``), a keepdim reduction over
    constant dims (``_reduction_kernel``); else None."""
    kernel = _product_kernel(node)
    if kernel is not None:
        return kernel, 2, ()
    return _reduction_kernel(node)


def _reduction_kernel(node):
    """sum/prod/amax/amin over constant dims (None: every dim) with no ``dtype=``, of a
    result of the input's dtype: the reduce runner's ``kernel(out, x, dims)`` (without
    keepdim, ``_kept_sizes`` gives the shape it writes). A lone ``x.sum()`` or a ``mean``'s
    sum then costs its kernel call, not the runner's checks."""
    op = None if node.kind().startswith("prim::") else resolve(node.kind())
    if op is None or op.runner is not reduction.reduce or len(node.inputs()) not in (3, 4):
        return None
    if op.promotion is Promotion.ALWAYS_BOOL:  # all/any: written as bool, then cast
        return None
    x, dim, keep, *dtype = node.inputs()  # amax/amin take no dtype=
    typ, result = x.type(), node.output().type()
    complete = all(isinstance(t, TensorType) and t.is_complete() for t in (typ, result))
    if not complete or (typ.dtype(), typ.device()) != (result.dtype(), result.device()):
        return None
    literal = fusion_steps._literal
    dims = literal(dim)
    dims = [dims] if type(dims) is int else dims
    if type(literal(keep)) is not bool or any(literal(v) is not None for v in dtype):
        return None
    if dims is None and dim.node().kind() == "prim::Constant":
        dims = list(range(len(typ.sizes())))  # every dim (None, not a computed list)
    if not isinstance(dims, list) or not dims or not all(type(d) is int for d in dims):
        return None
    sizes = tuple(typ.sizes())
    if not sizes or typ.dtype() not in op.dtypes:
        return None
    dims = reduction.reduced_dims(dims, len(sizes), op.name)
    if any(sizes[d] == 0 for d in dims):  # amax/amin refuse it: the runner raises
        return None
    kernel = op.kernel(result.device().type, result.dtype())
    return None if kernel is None else (kernel, 1, (dims,))


def _kept_sizes(node, sizes: tuple):
    """The keepdim shape a reduction without keepdim writes (``_reduction_kernel``) for an
    input of ``sizes`` (ints or a generic program's size expressions), else None (a keepdim
    reduction, a product: the kernel writes the result itself)."""
    found = _reduction_kernel(node)
    if found is None or fusion_steps._literal(node.inputsAt(2)):
        return None
    dims = found[2][0]
    return tuple(1 if i in dims else n for i, n in enumerate(sizes))


def _squeezed(x, shape, stride):
    """reduction.squeeze_dims's result for the contiguous keepdim buffer ``x``: the same
    storage without its size-1 reduced dims (no base, as the runner's)."""
    return make(x._storage, shape, stride, x._offset, x._dtype, True)


def _reshapes(node) -> bool:
    """A ``view``/``reshape`` to a known shape."""
    if node.kind() not in ("ember::view", "ember::reshape") or len(node.outputs()) != 1:
        return False
    typ = node.output().type()
    return isinstance(typ, TensorType) and typ.is_complete()


def _reshaped(x, shape, stride):
    """view.reshape's (and view.view's) result for a contiguous ``x``: a contiguous view of the
    same base."""
    out = make(x._storage, shape, stride, x._offset, x._dtype, True)
    out._base = x if x._base is None else x._base
    return out


def _transposes(node) -> bool:
    """A ``t`` of a tensor known to be 2-D."""
    if node.kind() != "ember::t" or len(node.inputs()) != 1:
        return False
    typ = node.inputsAt(0).type()
    return isinstance(typ, TensorType) and typ.is_complete() and len(typ.sizes()) == 2


def _transposed(x):
    """``x.t()`` of a 2-D tensor: view.t's result (a view of the same base) without its
    argument checks, which the graph's guarded types make."""
    (rows, cols), (a, b) = x._shape, x._stride
    if rows > 1 and cols > 1:  # the usual case, without is_contiguous's general walk
        contig = a == 1 and b == rows
    else:
        contig = is_contiguous((cols, rows), (b, a))
    out = make(x._storage, (cols, rows), (b, a), x._offset, x._dtype, contig)
    out._base = x if x._base is None else x._base
    return out


def _broadcasts(sizes, target) -> bool:
    if sizes is None or len(sizes) > len(target):
        return False
    tail = target[len(target) - len(sizes) :]
    return all(s == t or s == 1 for s, t in zip(sizes, tail))


def _float_or_tensor(value) -> bool:
    """A binary op's second operand the kernel takes as is: a tensor (checked by the caller)
    or a float constant (an int would be converted by the runner)."""
    if isinstance(value.type(), TensorType):
        return True
    node = value.node()
    return node.kind() == "prim::Constant" and type(node["value"]) is float


def _dense(tensor):
    """A fused kernel's input: contiguous at its own shape (the kernel broadcasts it)."""
    return tensor if tensor._contig else tensor.contiguous()


def registry_path(root, qualified: str) -> str | None:
    """The expression that reads ``root``'s dotted attribute ``qualified`` (``0.weight``) as
    ``self._modules['0']._parameters['weight']``, or None where some step is not a plain
    registry read. Two dict reads a step instead of a failed lookup and a Python
    ``Module.__getattr__`` call (16 a call of a 4-layer MLP). The reads are decided once, for
    the program's module: the entry's module probe (module_probe.py) checks before each replay
    that each registry still holds what it held."""
    owner, text = root, "self"
    for part in qualified.split("."):
        table = _registry_of(owner, part) if owner is not None else None
        if table is None:
            return None
        owner = owner.__dict__[table][part]
        text = f"{text}.{table}[{part!r}]"
    return text


def reader(root, paths: list):
    """``fn(root)``: the list of ``root``'s tensors at the dotted ``paths``, each read as
    registry_path says where it can, else by ``getattr``."""
    texts = []
    for path in paths:
        text = registry_path(root, path)
        if text is None:
            text = "self"
            for part in path.split("."):
                text = f"getattr({text}, {part!r})"
        texts.append(text)
    return eval(f"lambda self: [{', '.join(texts)}]", {})  # our own source


def _registry_of(owner, name: str) -> str | None:
    """The registry (``_parameters``, ``_buffers``, ``_modules``) that ``getattr(owner,
    name)`` reads through ``Module.__getattr__``, or None: not a module with the plain lookup,
    or ``name`` found before the fallback (the instance's ``__dict__``, a class attribute or
    property, as a parametrized weight is)."""
    from ember.nn.modules.module import Module

    kind = type(owner)
    if not isinstance(owner, Module) or kind.__getattr__ is not Module.__getattr__:
        return None
    if kind.__getattribute__ is not object.__getattribute__ or name in owner.__dict__:
        return None
    if any(name in vars(c) for c in kind.__mro__):
        return None
    for table in ("_parameters", "_buffers", "_modules"):  # Module.__getattr__'s order
        found = owner.__dict__.get(table)
        if found is not None and name in found:
            return table if found[name] is not None else None
    return None


def _last_uses(nodes, at=None) -> dict:
    """``{node index: [values whose last use is that node]}``, values produced and never used
    listed at their producer. ``at``: node -> the index it runs at (a fused chain's)."""
    last: dict = {}
    at = at or {}
    for index, node in enumerate(nodes):
        index = at.get(node, index)
        for value in (*node.outputs(), *node.inputs()):
            last[value] = max(index, last.get(value, index))
    by_node: dict = {}
    for value, index in last.items():
        by_node.setdefault(index, []).append(value)
    return by_node


def plan_memory(graph) -> dict:
    """Bytes of intermediates: ``peak`` live at once in the replay's order (each freed after
    its last use; a view keeps its base alive), and ``total`` allocated over the call."""
    nodes = list(graph.block().nodes())
    kept = set(graph.outputs())
    base: dict = {}  # value -> the value that owns its memory
    size: dict = {}
    for node in nodes:
        op = None if node.kind().startswith("prim::") else resolve(node.kind())
        for value in node.outputs():
            typ = value.type()
            if op is not None and is_view(op) and node.inputs():
                base[value] = base.get(node.inputs()[0], node.inputs()[0])
            elif op is not None and isinstance(typ, TensorType) and typ.is_complete():
                size[value] = math.prod(typ.sizes()) * typ.dtype().itemsize
    kept |= {base[value] for value in kept if value in base}
    last: dict = {}
    for index, node in enumerate(nodes):
        for value in node.inputs():
            last[base.get(value, value)] = index
    live = peak = 0
    for index, node in enumerate(nodes):
        live += sum(size.get(value, 0) for value in node.outputs())
        peak = max(peak, live)
        for value in node.outputs():
            if value in size and value not in kept and last.get(value, index) <= index:
                live -= size[value]
        for owner in {base.get(value, value) for value in node.inputs()}:
            if owner in size and owner not in kept and last.get(owner) == index:
                live -= size[owner]
    return {"peak": peak, "total": sum(size.values())}
