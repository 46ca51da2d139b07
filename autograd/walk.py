"""The node loop of a backward pass: runs each node once all its gradients are in, newest
first (engine.py's ``_Pass`` holds the pass's state and the general per-node step)."""

from __future__ import annotations

import heapq

from .node import AccumulateGrad, Node


def walk(run, ready: list) -> None:
    """Run nodes from ``ready`` (a heap of ``(-seq, id, node)``: newest first) until none is
    left, each through ``_Pass.step``."""
    while ready:
        node = heapq.heappop(ready)[2]
        found = run.step(node)
        # A lone ready node newer than every queued one would be popped next: it runs at
        # once, without the heap (most of a chain-like graph's steps).
        while len(found) == 1 and (not ready or -found[0].seq < ready[0][0]):
            found = run.step(found[0])
        for nxt in found:
            heapq.heappush(ready, (-nxt.seq, id(nxt), nxt))


_FORMULA, _LEAF, _OTHER = 0, 1, 2
_KINDS: dict = {}  # node class -> how walk_plain runs its nodes


def _kind(cls) -> int:
    """``_LEAF`` for accumulators; ``_FORMULA`` for nodes whose ``apply`` and ``release`` are
    Node's (the formula's nodes: the walk calls the formula itself); else ``_OTHER``."""
    if issubclass(cls, AccumulateGrad):
        kind = _LEAF
    elif cls.apply is Node.apply and cls.release is Node.release:
        kind = _FORMULA
    else:
        kind = _OTHER
    _KINDS[cls] = kind
    return kind


def walk_plain(run, ready: list) -> None:
    """``walk`` for a plain pass (every node runs, nothing captured, anomaly mode off): one
    frame for the whole walk, with ``step``'s short path, ``_apply``, ``Node.apply`` and
    ``_pass_on`` inline (a step of the 240 of minGPT's backward was five Python calls around
    its formula). A node with pre-hooks or a retained grad goes through ``step``; one with
    post-hooks, or of another kind (a custom Function's), through ``_apply``."""
    buffers, deps, shared, retain = run.buffers, run.deps, run.shared, run.retain
    take, push, pop = buffers.pop, heapq.heappush, heapq.heappop
    node = None
    while node is not None or ready:
        if node is None:
            node = pop(ready)[2]
        kind = _KINDS.get(node.__class__)
        if kind is None:
            kind = _kind(node.__class__)
        if node.pre_hooks is not None or node.retains is not None:
            found = run.step(node)
        elif kind == _LEAF:
            grads = take(node, None)
            if grads is not None:
                run._accumulate(node, grads)
            found = ()
        else:
            grads = take(node, None)
            if grads is None:  # no gradient reached it: its inputs get none either
                outputs = None
            elif kind == _FORMULA and node.hooks is None:
                outputs = node.formula.apply(node, grads)
                if len(outputs) > 1:
                    mark_repeats(outputs, shared)
            else:
                outputs = run._apply(node, grads)
            if retain:
                pass
            elif kind == _FORMULA and node.display is None:
                node.released = True  # Node.release inline: the node is its own ctx
                if node._saved:
                    node.free_saved()
            else:
                node.release()
            edges = node.edges
            if outputs is not None and len(outputs) == len(edges):
                found = []
                for edge, grad in zip(edges, outputs):
                    if edge is None:
                        continue
                    nxt = edge[0]
                    if grad is not None:
                        slots = buffers.get(nxt)
                        if slots is None:
                            slots = buffers[nxt] = [None] * max(nxt.num_outputs, 1)
                        index = edge[1]
                        slots[index] = grad if slots[index] is None else slots[index] + grad
                    left = deps[nxt] - 1
                    deps[nxt] = left
                    if left == 0:
                        found.append(nxt)
            else:
                found = run._pass_on(node, outputs)
        node = None
        if found:
            # A lone ready node newer than every queued one would be popped next: it runs at
            # once, without the heap (most of a chain-like graph's steps).
            if len(found) == 1 and (not ready or -found[0].seq < ready[0][0]):
                node = found[0]
            else:
                for nxt in found:
                    push(ready, (-nxt.seq, id(nxt), nxt))


def mark_repeats(outputs: tuple, shared: set) -> None:
    """Mark shared a gradient a formula gave for two inputs (add's ``(g, g)``): no leaf may
    take it over as its own ``.grad``."""
    if len(outputs) == 2:
        first = outputs[0]
        if first is outputs[1] and first is not None:
            shared.add(id(first))
        return
    seen = set()
    for g in outputs:
        if g is not None:
            if id(g) in seen:
                shared.add(id(g))
            seen.add(id(g))
