"""``ember.load(..., mmap=True)``: CPU storages over a copy-on-write mapping of the file.

A stored (uncompressed) record's bytes are mapped where they lie in the zip archive, so loading
a large checkpoint reads nothing until tensors are touched; writes stay private to the process
(``MAP_PRIVATE``, as PyTorch maps). Compressed or byte-swapped records are read as usual.
"""

from __future__ import annotations

import struct
import zipfile

import numpy as np

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zip local file header (30 bytes)


class FileMap:
    """One copy-on-write mapping of a checkpoint file, shared by its storages."""

    def __init__(self, path: str):
        self.path = path
        self._map = None

    def record(self, fileobj, info: zipfile.ZipInfo):
        """The record's bytes as a writable (private) uint8 array, or None if not mappable."""
        if info.compress_type != zipfile.ZIP_STORED or info.file_size == 0:
            return None
        start = data_offset(fileobj, info)
        if self._map is None:
            self._map = np.memmap(self.path, dtype=np.uint8, mode="c")
        if start + info.file_size > self._map.size:
            return None
        return self._map[start : start + info.file_size]


def data_offset(fileobj, info: zipfile.ZipInfo) -> int:
    """Where a stored record's bytes start in the file: after its local header, whose name and
    extra field may differ in length from the central directory's."""
    fileobj.seek(info.header_offset)
    fields = _LOCAL_HEADER.unpack(fileobj.read(_LOCAL_HEADER.size))
    return info.header_offset + _LOCAL_HEADER.size + fields[10] + fields[11]
