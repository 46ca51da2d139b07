"""``DataParallel``: PyTorch's single-process wrapper; on one device it runs the module as is."""

from __future__ import annotations

from ..modules.module import Module


class DataParallel(Module):
    """Runs ``module`` on one device as it is, under a ``module.`` prefix of state-dict keys
    (``torch.nn.DataParallel``).

    PyTorch splits the batch across several GPUs of one process; ember does not replicate a
    module across devices (PyTorch itself recommends ``DistributedDataParallel``, one process
    per device): more than one device in ``device_ids`` raises.

    Args:
        module: the model.
        device_ids: None or one device index.
        output_device, dim: accepted for compatibility.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if device_ids is not None and len(device_ids) > 1:
            raise NotImplementedError(
                "DataParallel over several devices is not supported: use "
                "ember.nn.parallel.DistributedDataParallel with one process per device"
            )
        self.module = module
        self.device_ids = list(device_ids or [])
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
