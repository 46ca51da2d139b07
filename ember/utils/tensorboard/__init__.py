"""``ember.utils.tensorboard``: PyTorch's ``SummaryWriter``, writing TensorBoard event files.

The file format and the summary protobufs are the ``tensorboard`` package's own
(``EventFileWriter``, ``tensorboard.compat.proto``); install it with
``pip install 'ember[tensorboard]'``. Importing this module without it raises ImportError, as
``torch.utils.tensorboard`` does; ``import ember`` never needs it.
"""

try:
    import tensorboard
except ImportError as error:
    raise ImportError(
        "TensorBoard logging requires TensorBoard version 1.15 or above "
        "(pip install 'ember[tensorboard]' or pip install tensorboard)"
    ) from error


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)


if not hasattr(tensorboard, "__version__") or _version_tuple(tensorboard.__version__) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
