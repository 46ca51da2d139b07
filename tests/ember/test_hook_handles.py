"""``ember.utils.hooks.RemovableHandle``: torch's class and constructor (libraries build their
own hook tables with it), and the handle type of every ember hook registration."""

import pickle
from collections import OrderedDict

import torch.utils.hooks

import ember
from ember.utils.hooks import RemovableHandle


def test_handle_removes_from_its_tables_as_torch():
    for cls in (RemovableHandle, torch.utils.hooks.RemovableHandle):
        hooks, extra = OrderedDict(), OrderedDict()
        handle = cls(hooks, extra_dict=[extra])
        hooks[handle.id] = extra[handle.id] = print
        other = cls(hooks)
        hooks[other.id] = len
        assert handle.id != other.id
        with handle:
            assert handle.id in hooks
        assert handle.id not in hooks and handle.id not in extra and other.id in hooks
        handle.remove()  # twice: nothing left to remove
        copy = pickle.loads(pickle.dumps(other))
        assert copy.id == other.id


def test_every_registration_returns_a_removable_handle():
    ran = []
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    model = ember.nn.Linear(2, 2)
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    handles = [
        x.register_hook(lambda g: ran.append("tensor")),
        y.grad_fn.register_hook(lambda gi, go: ran.append("node")),
        model.register_forward_hook(lambda m, i, o: ran.append("forward")),
        model.register_full_backward_hook(lambda m, gi, go: ran.append("backward")),
        optimizer.register_step_post_hook(lambda o, a, k: ran.append("step")),
        ember.autograd.graph.register_multi_grad_hook((x,), lambda grads: ran.append("multi")),
    ]
    for handle in handles:
        assert isinstance(handle, RemovableHandle)
        with handle:
            pass
    (model(ember.ones(1, 2)).sum() + y.sum()).backward()
    optimizer.step()
    assert ran == []  # every hook was removed by its handle's with-block
