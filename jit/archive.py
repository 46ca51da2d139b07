"""The archive both ``ember.jit.save`` and ``ember.export.save`` write: a zip of JSON and
safetensors, read back without trusting it.

Layout, under the folder ``archive/``::

    model.json            {"format": ..., "version": ..., "tensors": {key: {"device": ...}}, ...}
    tensors.safetensors   every tensor, by key
    extra/<name>          user files

Reading checks each zip record against the file before reading it (``ember._checkpoint_load``),
bounds the JSON, checks the format name and version, the tensor file (``ember.safetensors``) and
that it holds exactly the tensors the JSON declares. What the JSON means is the caller's to check.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from dataclasses import dataclass

from ember import safetensors
from ember._atomic import atomic_write
from ember._checkpoint_load import _ZIP_ERRORS, CheckpointError, _Records
from ember.dispatcher.memory import normalize_device

VERSION = 1
MODEL = "model.json"
TENSORS = "tensors.safetensors"
_MAX_JSON = 256 << 20


class ArchiveError(RuntimeError):
    """An archive that is corrupt, hostile, or from a newer ember."""


def write_archive(f, fmt: str, model: dict, tensors: dict, extra_files=None) -> None:
    """Write ``model`` (JSON-able) and ``tensors`` (key -> tensor) to ``f`` (a path, replaced
    atomically, or a binary file)."""
    model = {"format": fmt, "version": VERSION, **model}
    model["tensors"] = {key: {"device": str(t.device)} for key, t in tensors.items()}
    records = {MODEL: json.dumps(model).encode(), TENSORS: safetensors.save(_host_copies(tensors))}
    for name, data in (extra_files or {}).items():
        records[f"extra/{name}"] = data.encode() if isinstance(data, str) else bytes(data)
    with _output(f) as fileobj, zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED) as zf:
        for name, data in records.items():
            zf.writestr(f"archive/{name}", data)


def _host_copies(tensors: dict) -> dict:
    """Contiguous CPU tensors with storages of their own (safetensors refuses shared ones)."""
    out, storages = {}, set()
    for key, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if id(t._storage) in storages:
            t = t.clone()
        storages.add(id(t._storage))
        out[key] = t
    return out


@contextlib.contextmanager
def _output(f):
    if isinstance(f, (str, os.PathLike)):
        with atomic_write(f) as fileobj:
            yield fileobj
    else:
        yield f


@dataclass
class Archive:
    """What ``read_archive`` checked: the JSON, the tensors (placed), the zip records."""

    model: dict
    tensors: dict
    records: object
    what: str

    def fail(self, message: str) -> ArchiveError:
        return ArchiveError(f"{self.what}: {message}")

    def extra(self, extra_files) -> None:
        """Fill ``extra_files`` (name -> anything) with the stored contents (b"" if absent)."""
        for name in list(extra_files or ()):
            extra_files[name] = self.records.read(f"extra/{name}", b"")


@contextlib.contextmanager
def read_archive(f, fmt: str, verb: str, map_location=None):
    """The checked archive in ``f``; tensors on ``map_location`` or where they were saved.
    ``verb`` (``"ember.jit.load"``) starts every error message."""
    name = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    what = f"{verb}: {name}"
    target = None if map_location is None else normalize_device(map_location)
    with _input(f) as fileobj:
        try:
            zf = zipfile.ZipFile(fileobj)
        except _ZIP_ERRORS:
            raise ArchiveError(f"{what}: not an {fmt} archive (not a zip)") from None
        with zf:
            try:
                records = _Records(zf, what, marker=MODEL)
                model = _parse_json(records.read(MODEL), fmt, what)
                tensors = _read_tensors(records, model, what, target)
                yield Archive(model, tensors, records, what)
            except CheckpointError as exc:
                raise ArchiveError(str(exc)) from None


@contextlib.contextmanager
def _input(f):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fileobj:
            yield fileobj
    else:
        yield f


def _parse_json(raw: bytes, fmt: str, what: str) -> dict:
    if len(raw) > _MAX_JSON:
        raise ArchiveError(f"{what}: {MODEL} is implausibly large")
    try:
        model = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ArchiveError(f"{what}: {MODEL} is not valid JSON ({exc})") from None
    if not isinstance(model, dict) or model.get("format") != fmt:
        raise ArchiveError(f"{what}: not an {fmt} archive")
    version = model.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ArchiveError(f"{what}: malformed format version {version!r}")
    if version > VERSION:
        raise ArchiveError(
            f"{what}: the archive has format version {version}, newer than this ember reads "
            f"({VERSION}); upgrade ember to load it"
        )
    return model


def _read_tensors(records, model: dict, what: str, target) -> dict:
    try:
        loaded = safetensors.load(records.read(TENSORS))
    except (safetensors.SafetensorError, ValueError, KeyError, TypeError) as exc:
        raise ArchiveError(f"{what}: {TENSORS} is corrupt ({exc})") from None
    declared = model.get("tensors")
    if not isinstance(declared, dict) or set(declared) != set(loaded):
        raise ArchiveError(f"{what}: the tensor list does not match {TENSORS}")
    placed = {}
    for key, t in loaded.items():
        info = declared[key]
        device = info.get("device") if isinstance(info, dict) else None
        if not isinstance(device, str):
            raise ArchiveError(f"{what}: tensor {key!r} has no device")
        placed[key] = t.to(target if target is not None else _saved_device(device, what))
    return placed


def _saved_device(name: str, what: str):
    try:
        return normalize_device(name)
    except Exception as exc:
        raise ArchiveError(
            f"{what}: tensors were saved on {name}, which is unavailable here ({exc}); pass "
            "map_location='cpu' (or another device)"
        ) from None
