"""Saving over a file is atomic: a kill, a full disk or a failed fsync keeps the old file."""

import errno
import io
import os
import pathlib
import signal
import stat
import subprocess
import sys

import pytest

import ember
from ember import _atomic
from ember import safetensors as st

REPO = pathlib.Path(__file__).resolve().parents[1]
OLD, NEW = 1.0, 2.0


def write(writer: str, path, value: float, n: int = 1 << 16) -> None:
    tensors = {"w": ember.full((n,), value), "b": ember.full((n // 2,), value)}
    if writer == "save":
        ember.save(tensors, path)
    else:
        st.save_file(tensors, path)


def read(writer: str, path) -> dict:
    loaded = ember.load(path) if writer == "save" else st.load_file(path)
    return {name: set(t.tolist()) for name, t in loaded.items()}


def assert_old_file_intact(writer: str, path) -> None:
    assert read(writer, path) == {"w": {OLD}, "b": {OLD}}
    assert sorted(os.listdir(path.parent)) == [path.name]  # no stray temporaries


WRITERS = ["save", "safetensors"]


@pytest.fixture(params=[True, False], ids=["unnamed-temporary", "named-temporary"])
def temporary_kind(request, monkeypatch):
    """Both ways of making the temporary: O_TMPFILE (Linux) and a hidden named file."""
    if request.param and not _atomic._TMPFILE:
        pytest.skip("this platform has no O_TMPFILE")
    monkeypatch.setattr(_atomic, "_TMPFILE", request.param)
    return request.param


# ---- a save killed mid-write -----------------------------------------------------------------

CHILD = """
import os, sys, time
import ember
from ember import safetensors, serialization

writer, hook, path = sys.argv[1:]

def signal_then_hang():
    print("writing", flush=True)
    time.sleep(120)

if hook == "mid-write":  # after the first tensor's bytes went out, before the rest
    def hooked(target, original):
        def wrapper(*args):
            out = original(*args)
            if hooked.calls == 1:
                signal_then_hang()
            hooked.calls += 1
            return out
        return wrapper
    hooked.calls = 0
    serialization._write_record = hooked(None, serialization._write_record)
    safetensors._little_endian = hooked(None, safetensors._little_endian)
else:  # everything written; the file is being fsynced, the rename has not happened
    def fsync(fd):
        signal_then_hang()
    os.fsync = fsync

tensors = {"w": ember.full((1 << 20,), 2.0), "b": ember.full((1 << 19,), 2.0)}
if writer == "save":
    ember.save(tensors, path)
else:
    safetensors.save_file(tensors, path)
print("finished", flush=True)
"""


@pytest.mark.parametrize("hook", ["mid-write", "before-rename"])
@pytest.mark.parametrize("writer", WRITERS)
def test_save_killed_mid_write_keeps_the_old_file(tmp_path, writer, hook):
    path = tmp_path / "model.pt"
    write(writer, path, OLD)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, writer, hook, str(path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        line = child.stdout.readline()
        assert line == b"writing\n", child.stderr.read().decode()
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    if not _atomic._TMPFILE:  # without O_TMPFILE, a killed process leaves its named temporary
        assert sys.platform != "linux"
        for stray in tmp_path.glob(".model.pt.*.tmp"):
            stray.unlink()
    assert_old_file_intact(writer, path)


# ---- failures the process lives through ------------------------------------------------------


class FullDisk(io.FileIO):
    """A file on a disk that fills up after ``room`` bytes."""

    room = 100_000

    def write(self, data):
        size = memoryview(data).nbytes
        if self.tell() + size > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


@pytest.mark.parametrize("writer", WRITERS)
def test_full_disk_keeps_the_old_file(tmp_path, monkeypatch, writer, temporary_kind):
    path = tmp_path / "model.pt"
    write(writer, path, OLD)
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: FullDisk(fd, "w"))
    with pytest.raises(OSError) as caught:
        write(writer, path, NEW)
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert_old_file_intact(writer, path)


@pytest.mark.parametrize("writer", WRITERS)
def test_failed_fsync_keeps_the_old_file(tmp_path, monkeypatch, writer, temporary_kind):
    def fsync(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    path = tmp_path / "model.pt"
    write(writer, path, OLD)
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output error"):
        write(writer, path, NEW)
    monkeypatch.undo()
    assert_old_file_intact(writer, path)


@pytest.mark.parametrize("writer", WRITERS)
def test_successful_save_replaces_the_file(tmp_path, writer, temporary_kind):
    path = tmp_path / "model.pt"
    write(writer, path, OLD)
    write(writer, path, NEW)
    assert read(writer, path) == {"w": {NEW}, "b": {NEW}}
    assert os.listdir(tmp_path) == ["model.pt"]


# ---- what open(path, "wb") would do ----------------------------------------------------------


def test_new_files_get_the_umask_mode_and_old_files_keep_theirs(tmp_path, temporary_kind):
    old_umask = os.umask(0o027)
    try:
        ember.save(ember.ones(1), tmp_path / "new.pt")
        with open(tmp_path / "reference", "wb"):
            pass
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.pt").st_mode) == 0o640
    assert os.stat(tmp_path / "new.pt").st_mode == os.stat(tmp_path / "reference").st_mode
    for mode in (0o604, 0o666):  # kept whatever the umask says about new files
        kept = tmp_path / f"kept{mode:o}.pt"
        kept.write_bytes(b"")
        kept.chmod(mode)
        old_umask = os.umask(0o077)
        try:
            ember.save(ember.ones(1), kept)
        finally:
            os.umask(old_umask)
        assert stat.S_IMODE(os.stat(kept).st_mode) == mode


def test_the_owner_is_kept_where_the_process_may(tmp_path):
    path = tmp_path / "model.pt"
    ember.save(ember.zeros(1), path)
    owner = (os.geteuid() + 1234, os.getegid() + 1234)
    try:
        os.chown(path, *owner)
    except PermissionError:  # not root: a save cannot give the file away, nor can open()
        owner = (os.geteuid(), os.getegid())
    ember.save(ember.ones(1), path)
    info = os.stat(path)
    assert (info.st_uid, info.st_gid) == owner and ember.load(path).tolist() == [1.0]


def test_a_symlink_is_followed(tmp_path):
    real = tmp_path / "real.pt"
    ember.save(ember.zeros(1), real)
    link = tmp_path / "link.pt"
    link.symlink_to(real)
    ember.save(ember.ones(1), link)
    assert link.is_symlink() and ember.load(real).tolist() == [1.0]


def test_special_files_and_folders_behave_as_with_open(tmp_path):
    ember.save(ember.ones(1), os.devnull)  # written in place: /dev/null is not replaced
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    with pytest.raises(IsADirectoryError):
        ember.save(ember.ones(1), tmp_path)
    with pytest.raises(FileNotFoundError, match="no-such-folder"):
        st.save_file({"w": ember.ones(1)}, tmp_path / "no-such-folder" / "model.safetensors")


def test_read_only_file_behaves_as_with_open(tmp_path):
    path = tmp_path / "model.pt"
    ember.save(ember.zeros(1), path)
    path.chmod(0o444)
    try:
        with open(path, "ab"):
            open_refuses = False
    except PermissionError:
        open_refuses = True
    if open_refuses:
        with pytest.raises(PermissionError):
            ember.save(ember.ones(1), path)
        assert ember.load(path).tolist() == [0.0]
    else:  # root may write anyway, as open() does
        ember.save(ember.ones(1), path)
        assert ember.load(path).tolist() == [1.0]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
