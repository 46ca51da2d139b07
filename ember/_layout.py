"""PyTorch's tensor layouts (``torch.strided``, ``torch.sparse_coo``...) as ember objects, so
programs can read ``Tensor.layout`` and pass ``layout=`` to factories. Every ember tensor is
strided: ``layout=None`` and ``layout=ember.strided`` are accepted, the other layouts are named
(programs test for them) and refused by factories with ``NotImplementedError``, what PyTorch
raises on a backend without sparse kernels."""

from __future__ import annotations


class layout:  # noqa: N801 - PyTorch's name for the type
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        # torch.save writes a layout as torch.serialization._get_layout("torch.strided"): the
        # same call, so either library loads the other's pickles (see _checkpoint_pickle)
        return _from_torch_name, (f"torch.{self.name}",)


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
_mkldnn = layout("_mkldnn")
jagged = layout("jagged")

EVERY = (strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc, _mkldnn, jagged)
BY_NAME = {f"torch.{each.name}": each for each in EVERY}


def _from_torch_name(name: str) -> layout:
    """``torch.serialization._get_layout``'s counterpart: the layout a pickle names."""
    return BY_NAME[name]


def check(op: str, value) -> None:
    """A factory's ``layout=``: None or strided pass; a layout ember has no tensors of is
    NotImplementedError naming the op; anything else is a TypeError, as PyTorch's parser's."""
    if value is None or value is strided:
        return
    if isinstance(value, layout):
        raise NotImplementedError(
            f"{op}(): layout={value!r} is not supported: ember tensors are strided (no sparse, "
            "mkldnn or jagged tensors); leave layout out or pass ember.strided"
        )
    raise TypeError(f"{op}(): argument 'layout' must be torch.layout, not {type(value).__name__}")
