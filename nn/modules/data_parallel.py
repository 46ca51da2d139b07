"""DataParallel: splits the batch over devices, runs the module on each with its parameters
copied there (differentiably, so gradients reach the one set of parameters), gathers the
outputs. With no accelerator (or one device) it is the module itself, as in PyTorch."""

from __future__ import annotations

import ember

from .module import Module


def _cuda_count() -> int:
    try:
        return ember.cuda.device_count() if ember.cuda.is_available() else 0
    except Exception:  # no cuda backend installed: a CPU-only machine
        return 0


class DataParallel(Module):
    """Data parallelism over ``device_ids`` (default: every cuda device); the batch dim is
    ``dim``, outputs are gathered on ``output_device`` (default: the first device)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module, self.dim = module, dim
        count = _cuda_count()
        if not count:
            self.device_ids, self.output_device, self.src_device_obj = [], None, None
            return
        ids = list(range(count)) if device_ids is None else list(device_ids)
        self.device_ids = [ember.device(i if not isinstance(i, int) else f"cuda:{i}") for i in ids]
        self.output_device = ember.device(
            f"cuda:{output_device}"
            if isinstance(output_device, int)
            else output_device or self.device_ids[0]
        )
        self.src_device_obj = self.device_ids[0]
        module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        if len(self.device_ids) == 1:
            moved = [_to(x, self.device_ids[0]) for x in inputs]
            return self.module(*moved, **kwargs)
        from ..utils.stateless import _functional_call

        named = dict(self.module.named_parameters())
        named.update(self.module.named_buffers())
        chunks = _scatter(inputs, len(self.device_ids), self.dim)
        outputs = []
        for device, chunk in zip(self.device_ids, chunks):
            values = {k: v.to(device) for k, v in named.items()}
            moved = [_to(x, device) for x in chunk]
            outputs.append(_functional_call(self.module, values, tuple(moved), kwargs))
        return _gather(outputs, self.output_device, self.dim)


def _to(value, device):
    return value.to(device) if isinstance(value, ember.Tensor) else value


def _scatter(inputs, parts, dim):
    """Per device, the inputs' slices along ``dim`` (non-tensors repeated); fewer parts when
    the batch is smaller than the device count."""
    tensors = [x for x in inputs if isinstance(x, ember.Tensor)]
    size = tensors[0].shape[dim] if tensors else 1
    parts = max(1, min(parts, size))
    split = [x.chunk(parts, dim) if isinstance(x, ember.Tensor) else [x] * parts for x in inputs]
    return [tuple(pieces[i] for pieces in split) for i in range(len(split[0]) if split else 1)]


def _gather(outputs, device, dim):
    first = outputs[0]
    if isinstance(first, ember.Tensor):
        return ember.cat([o.to(device) for o in outputs], dim)
    if isinstance(first, (tuple, list)):
        return type(first)(_gather(list(parts), device, dim) for parts in zip(*outputs))
    if isinstance(first, dict):
        return {k: _gather([o[k] for o in outputs], device, dim) for k in first}
    return first
