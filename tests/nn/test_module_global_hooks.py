"""Global module forward hooks (nn.modules.module.register_module_forward_pre_hook and
register_module_forward_hook) against torch's: order around the module's own hooks, replaced
inputs and outputs, with_kwargs, always_call and removal."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _calls(lib):
    module_api = lib.nn.modules.module
    seen = []
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
    model[0].register_forward_pre_hook(lambda m, a: seen.append(("own pre", type(m).__name__)))
    model[0].register_forward_hook(lambda m, a, o: seen.append(("own post", type(m).__name__)))

    def pre(module, args):
        seen.append(("pre", type(module).__name__))
        return (args[0] * 2,) if isinstance(module, lib.nn.Linear) else None

    def post(module, args, kwargs, output):
        seen.append(("post", type(module).__name__, sorted(kwargs)))
        return output + 1 if isinstance(module, lib.nn.ReLU) else None

    def always(module, args, output):
        seen.append(("always", type(module).__name__, output is None))

    handles = [
        module_api.register_module_forward_pre_hook(pre),
        module_api.register_module_forward_hook(post, with_kwargs=True),
        module_api.register_module_forward_hook(always, always_call=True),
    ]
    try:
        with lib.no_grad():
            model[0].weight.fill_(1.0)
            model[0].bias.fill_(0.0)
            out = model(lib.ones(1, 2)).tolist()
        with pytest.raises(RuntimeError):
            model[0](lib.ones(1, 3))
    finally:
        for handle in handles:
            handle.remove()
    model(lib.ones(1, 2))  # removed: nothing seen
    return seen, out


def test_global_forward_hooks_match_torch():
    ours, theirs = _calls(ember), _calls(torch)
    assert ours == theirs
    assert ours[1] == [[5.0, 5.0]]
