"""Interpreter and Transformer: run an fx graph node by node, or rebuild it while doing so
(``torch.fx.Interpreter`` / ``torch.fx.Transformer``). Override the per-opcode methods
(``call_function``, ``call_module``...) to observe or change what each node does.
"""

from __future__ import annotations

import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_aggregate, map_arg
from .proxy import Proxy
from .tracer import Tracer


class Interpreter:
    """Runs ``module.graph`` with ``run(*args)``; ``env`` maps nodes to their values."""

    def __init__(self, module: GraphModule, garbage_collect_values: bool = True, graph=None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.submodules = dict(module.named_modules())
        self.env: dict = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses: dict = {}
        if garbage_collect_values:
            seen: set = set()
            for node in reversed(list(self.graph.nodes)):
                for used in node.all_input_nodes:
                    if used not in seen:
                        seen.add(used)
                        self.user_to_last_uses.setdefault(node, []).append(used)

    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True):
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per opcode ---------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from None  # fmt: skip

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ---- helpers -----------------------------------------------------------------------------
    def fetch_attr(self, target: str):
        value = self.module
        for i, part in enumerate(target.split(".")):
            if not hasattr(value, part):
                raise RuntimeError(
                    f"Node referenced nonexistent target {'.'.join(target.split('.')[: i + 1])}"
                )
            value = getattr(value, part)
        return value

    def fetch_args_kwargs_from_env(self, n: Node):
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args, n: Node):
        def load(node):
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run "
                                   "Graph.lint() to diagnose such issues")  # fmt: skip
            return self.env[node]

        return map_arg(args, load)


class Transformer(Interpreter):
    """Builds a new GraphModule by running the graph on proxies: override the opcode methods
    to emit different nodes (``super().call_function(...)`` emits the same one)."""

    def __init__(self, module: GraphModule):
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()

        class _Tracer(Tracer):
            def __init__(self, graph):
                super().__init__()
                self.graph = graph
                self.root = module
                self._module_paths = {id(m): name for name, m in module.named_modules()}
                self._tensor_paths = {}

            def is_leaf_module(self, m, qualname):
                return True

        self.tracer = _Tracer(self.new_graph)

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        node = self.new_graph.placeholder(target, default_value=default)
        return Proxy(node, self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> GraphModule:
        result = super().run()
        self.new_graph.output(
            map_aggregate(result, lambda x: x.node if isinstance(x, Proxy) else x)
        )
        return GraphModule(self.module, self.new_graph)
