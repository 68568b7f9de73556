"""The one writer never destroys a file, and the one reader names the path it was given.

Every output of fedtheory (JSON, figures, HTML) goes through :func:`fedtheory.io.write_atomic`;
users' array files come in through :func:`fedtheory.io.read_array`.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import threading

import matplotlib.pyplot as plt
import numpy as np
import pytest
import scipy.sparse as sp

from fedtheory import io as fio
from fedtheory.errors import FedTheoryError
from fedtheory.io import (
    check_output_dir,
    check_output_path,
    emit_json,
    read_array,
    save_figure,
    temporary_directory,
    write_atomic,
)

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _listing(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- regular files and links -------------------------------------------------------------------
def test_existing_file_is_replaced_whole_and_keeps_its_mode(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _listing(tmp_path) == ["out.json"]  # no temporary file left


def test_a_new_file_gets_the_mode_open_would_give(tmp_path):
    umask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.json", b"{}")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o640


def test_a_symlink_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "results.json"
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert write_atomic(link, "new") == link  # the path as given
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert _listing(tmp_path / "data") == ["results.json"]


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "made.json")
    write_atomic(link, "x")
    assert link.is_symlink() and (tmp_path / "made.json").read_text() == "x"


def test_a_link_into_a_missing_folder_names_the_link_and_the_folder(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "gone" / "x.json")
    with pytest.raises(FedTheoryError, match=r"link\.json \(a link to .*gone.*does not exist"):
        write_atomic(link, "x")


# --- streams -------------------------------------------------------------------------------------
def test_a_fifo_is_written_directly(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "hello through a pipe")
    reader.join(timeout=10)
    assert got == [b"hello through a pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still a FIFO, not a regular file
    assert _listing(tmp_path) == ["pipe"]


def test_dev_null_is_written_directly_and_stays_a_character_device():
    before = os.stat("/dev/null")
    assert check_output_path("/dev/null").kind == "stream"
    write_atomic("/dev/null", "discarded")
    emit_json({"a": 1}, "/dev/null")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_dash_is_standard_output(capsys):
    emit_json({"x": float("nan")}, "-")
    assert json.loads(capsys.readouterr().out) == {"x": None}
    write_atomic("-", "text\n")
    assert capsys.readouterr().out == "text\n"


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(FedTheoryError, match="is a socket"):
            write_atomic(path, "x")


# --- refusals name the user's path -----------------------------------------------------------
@pytest.mark.parametrize("suffix", ["", "/"])
def test_a_folder_is_refused_naming_the_path_given(tmp_path, monkeypatch, suffix):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    with pytest.raises(FedTheoryError) as exc:
        write_atomic("results" + suffix, "x")
    msg = str(exc.value)
    assert msg.startswith(f"cannot write results{suffix}:") and "folder" in msg
    assert ".tmp" not in msg and _listing(tmp_path / "results") == []


def test_a_missing_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FedTheoryError, match="cannot write nope/out.json: the folder nope does"):
        write_atomic("nope/out.json", "x")
    assert not (tmp_path / "nope").exists()


def test_a_file_used_as_a_folder_is_refused(tmp_path):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(FedTheoryError, match="a folder on its path is a file"):
        write_atomic(tmp_path / "f" / "out.json", "x")
    assert (tmp_path / "f").read_text() == "keep"


def test_an_empty_path_is_refused():
    with pytest.raises(FedTheoryError, match="empty"):
        write_atomic("", "x")


def test_a_permission_error_names_the_users_path_not_the_temporary_one(tmp_path, monkeypatch):
    real_open = os.open

    def refuse(path, flags, *args, **kw):
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(PermissionError) as exc:
        write_atomic(tmp_path / "out.json", "x")
    assert exc.value.filename == str(tmp_path / "out.json")
    assert _listing(tmp_path) == []


@pytest.mark.skipif(ROOT, reason="root may write into a read-only folder")
def test_a_read_only_folder_is_refused_before_writing(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(PermissionError) as exc:
            check_output_path(ro / "out.json")
        assert exc.value.filename == str(ro / "out.json")
    finally:
        ro.chmod(0o755)


def test_an_unwritable_folder_is_refused_up_front(tmp_path, monkeypatch):
    """os.access says no (as it does for a user without write permission): refused before any
    file is created, naming the path as given. (Runs as root too, unlike the test above.)"""
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(PermissionError) as exc:
        write_atomic(tmp_path / "out.json", "x")
    assert exc.value.filename == str(tmp_path / "out.json")
    assert _listing(tmp_path) == []


# --- interrupted writes --------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_ctrl_c_mid_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, where):
    target = tmp_path / "out.json"
    target.write_text("old")

    def interrupt(*args, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, where, interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new" * 1000)
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert _listing(tmp_path) == ["out.json"]


def test_a_failed_write_of_a_new_file_leaves_nothing(tmp_path, monkeypatch):
    def full(*args, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left") as exc:
        write_atomic(tmp_path / "new.json", "x")
    assert exc.value.filename == str(tmp_path / "new.json")
    assert _listing(tmp_path) == []


def test_data_that_is_not_text_or_bytes_writes_nothing(tmp_path):
    with pytest.raises(TypeError):
        write_atomic(tmp_path / "x.json", 123)
    assert _listing(tmp_path) == []


# --- figures, folders, temporary folders ----------------------------------------------------
def test_an_unknown_figure_format_is_one_line_and_writes_nothing(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    try:
        with pytest.raises(FedTheoryError, match=r"unknown format \.xyz \(use one of .*\.png"):
            save_figure(fig, tmp_path / "plot.xyz")
        with pytest.raises(FedTheoryError, match="does not exist"):
            save_figure(fig, tmp_path / "no" / "plot.png")
        save_figure(fig, tmp_path / "plot.svg")
    finally:
        plt.close(fig)
    assert _listing(tmp_path) == ["plot.svg"]


def test_check_output_dir_creates_and_refuses(tmp_path):
    assert check_output_dir(tmp_path / "a" / "b").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(FedTheoryError, match="is not a folder"):
        check_output_dir(tmp_path / "file")
    with pytest.raises(FedTheoryError, match="a part of its path is a file"):
        check_output_dir(tmp_path / "file" / "sub")


def test_temporary_directory_is_always_removed():
    made = []
    with temporary_directory("fedtheory-test-") as d:
        made.append(d)
        (d / "figure.png").write_bytes(b"x")
    with pytest.raises(RuntimeError), temporary_directory() as d:
        made.append(d)
        (d / "figure.png").write_bytes(b"x")
        raise RuntimeError("a claim failed")
    with pytest.raises(KeyboardInterrupt), temporary_directory() as d:
        made.append(d)
        raise KeyboardInterrupt
    assert len(made) == 3 and made[0].name.startswith("fedtheory-test-")
    assert not any(d.exists() for d in made)


# --- the reader -----------------------------------------------------------------------------
def test_read_array_names_the_path_for_every_bad_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as exc:
        read_array("missing.txt")
    assert exc.value.filename == "missing.txt"
    os.mkdir("folder")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "words.txt").write_text("0.5 abc\n")
    (tmp_path / "junk.bin").write_bytes(bytes(range(256)))
    np.savez("arch.npz", a=np.ones(3))
    np.save("obj.npy", np.array([1, None], dtype=object), allow_pickle=True)
    (tmp_path / "cut.npy").write_bytes(b"\x93NUMPY\x01\x00")
    for name, why in [
        ("folder", "is a folder"),
        ("empty.txt", "holds no numbers"),
        ("words.txt", "line 1, field 2 is 'abc', not a number"),
        ("junk.bin", "neither .npy nor text"),
        ("arch.npz", "an .npz archive"),
        ("obj.npy", "cannot read"),
        ("cut.npy", "cannot read"),
    ]:
        with pytest.raises(FedTheoryError, match=why) as exc:
            read_array(name)
        assert name in str(exc.value), str(exc.value)


def test_read_array_reads_npy_text_and_sparse(tmp_path):
    np.save(tmp_path / "v.npy", np.arange(3.0))
    (tmp_path / "v.csv").write_text("1,2,3\n")
    os.replace(tmp_path / "v.npy", tmp_path / "renamed.txt")  # recognized by its header
    assert read_array(tmp_path / "renamed.txt").tolist() == [0.0, 1.0, 2.0]
    assert read_array(tmp_path / "v.csv").tolist() == [1.0, 2.0, 3.0]
    sp.save_npz(tmp_path / "W.npz", sp.csr_array(np.eye(3)))
    W = read_array(tmp_path / "W.npz", sparse=True)
    assert sp.issparse(W) and W.shape == (3, 3)


def test_module_documents_the_null_convention():
    assert "null" in fio.__doc__ and "NaN" in fio.__doc__
