"""Running a graph node by node, with a hook on every value: what analyses use (shape
propagation runs graphs on meta tensors this way). Generated code (``jit.codegen``) is what runs
graphs fast; both follow the prim table (``jit.prims``).
"""

from __future__ import annotations

from .prims import PRIMS


class GraphInterpreter:
    """``run(*inputs)`` evaluates the graph; ``on_value(value, result)`` sees every result.

    Args:
        graph: the graph.
        attribute: ``name -> tensor`` for ``prim::GetAttr`` (a module's qualified names).
        constant: ``node -> value`` for ``prim::Constant`` nodes (meta propagation moves tensors
            and devices to meta); default: the node's value.
    """

    def __init__(self, graph, attribute=None, constant=None):
        self.graph = graph
        self.attribute = attribute
        self.constant = constant or (lambda node: node["value"])

    def on_value(self, value, result) -> None:
        pass

    def run(self, *inputs):
        env: dict = {}
        for value, given in zip(self.graph.inputs(), inputs, strict=True):
            env[value] = given
            self.on_value(value, given)
        self.block(self.graph.block(), env)
        return tuple(env[v] for v in self.graph.outputs())

    def block(self, block, env: dict) -> None:
        for node in block.nodes():
            results = self.node(node, env)
            for value, result in zip(node.outputs(), results):
                env[value] = result
                self.on_value(value, result)

    def node(self, node, env: dict) -> list:
        kind = node.kind()
        args = [env[v] for v in node.inputs()]
        if kind == "prim::Constant":
            return [self.constant(node)]
        if kind == "prim::GetAttr":
            if self.attribute is None:
                raise RuntimeError(f"the graph reads attribute {node['name']!r}; give a module")
            return [self.attribute(node["name"])]
        if kind == "prim::If":
            taken = node.blocks()[0 if args[0] else 1]
            self.block(taken, env)
            return [env[v] for v in taken.outputs()]
        if kind == "prim::Loop":
            return self.loop(node, args, env)
        if kind == "prim::RaiseException":
            raise RuntimeError(args[0])
        if kind.startswith("prim::"):
            result = PRIMS[kind].run(*args)
        else:
            result = node.op()(*args)
        if len(node.outputs()) == 1:
            return [result]
        return list(result) if node.outputs() else []  # prim::index_put_ returns nothing

    def loop(self, node, args: list, env: dict) -> list:
        trip, cond, *carried = args
        (body,) = node.blocks()
        counter, *params = body.inputs()
        i = 0
        while cond and i < trip:
            env[counter] = i
            for param, value in zip(params, carried):
                env[param] = value
            self.block(body, env)
            cond, *carried = (env[v] for v in body.outputs())
            i += 1
        return carried
