"""The one writer of every output file: atomic replacement, streams and devices written
directly, folders and missing folders refused naming the user's path; temporary folders.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from fedtheory.errors import FedTheoryError

#: Paths under these folders name streams and devices (``/dev/stdout``, ``/dev/fd/3``,
#: ``/proc/self/fd/1``): written directly, never replaced by a rename.
STREAM_FOLDERS = ("/dev/", "/proc/")


@dataclass(frozen=True)
class OutputTarget:
    """Where an output goes, as :func:`check_output_path` found it.

    Attributes
    ----------
    given : str
        The path as the caller gave it (every message names this one).
    path : Path
        Where the bytes go: ``given`` with symbolic links resolved.
    kind : {"stdout", "stream", "replace", "new"}
        ``stdout`` for ``-``; ``stream`` for a FIFO, a character device or a path under
        ``/dev`` or ``/proc`` (written directly); ``replace`` for an existing regular file and
        ``new`` for a path that does not exist yet (both written through a temporary file and a
        rename).
    mode : int or None
        Permission bits of the file that ``replace`` replaces.
    """

    given: str
    path: Path
    kind: str
    mode: int | None = None


def named_error(exc: OSError, given: str) -> OSError:
    """``exc`` with the user's path as its filename (never a temporary path)."""
    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror or os.strerror(exc.errno), given)


def _what(mode: int) -> str:
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def check_output_path(path: str | os.PathLike) -> OutputTarget:
    """Check, without writing anything, that ``path`` can receive an output; say where it goes.

    Call it before a long computation so that a bad ``--json`` or ``--plot`` path costs
    nothing; :func:`write_atomic` calls it again when it writes.

    Raises
    ------
    FedTheoryError
        An empty path, a folder, a path whose folder does not exist or is a file, a socket or a
        block device; the message names ``path`` as given.
    PermissionError
        The folder (or the existing file) is not writable; ``filename`` is ``path`` as given.
    """
    given = os.fsdecode(os.fspath(path))
    if given == "-":
        return OutputTarget(given, Path("-"), "stdout")
    if not given.strip():
        raise FedTheoryError("the output path is empty")
    if given.endswith(("/", os.sep)) or os.path.basename(given) in (".", ".."):
        raise FedTheoryError(f"cannot write {given}: it names a folder, not a file")
    absolute = os.path.abspath(given)
    if absolute.startswith(STREAM_FOLDERS):
        try:
            st = os.stat(given)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise named_error(exc, given) from None
        if st is not None and not stat.S_ISDIR(st.st_mode) and not stat.S_ISBLK(st.st_mode):
            return OutputTarget(given, Path(given), "stream")
    real = os.path.realpath(given)
    shown = f"{given} (a link to {real})" if os.path.islink(given) else given
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise FedTheoryError(f"cannot write {shown}: a folder on its path is a file") from None
    except OSError as exc:  # a loop of links, permission denied on the way
        raise named_error(exc, given) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise FedTheoryError(
                f"cannot write {shown}: it is a folder (give a file name inside it)"
            )
        if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
            return OutputTarget(given, Path(real), "stream")
        if not stat.S_ISREG(st.st_mode):
            raise FedTheoryError(f"cannot write {shown}: it is {_what(st.st_mode)}")
        if not os.access(real, os.W_OK):
            raise PermissionError(errno.EACCES, "Permission denied (the file is read-only)", given)
        folder = os.path.dirname(real)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(
                errno.EACCES, f"Permission denied (cannot write in its folder {folder})", given
            )
        return OutputTarget(given, Path(real), "replace", stat.S_IMODE(st.st_mode))
    folder = os.path.dirname(real)
    shown_folder = (os.path.dirname(given) or ".") if real == absolute else folder
    try:
        fst = os.stat(folder)
    except FileNotFoundError:
        raise FedTheoryError(
            f"cannot write {shown}: the folder {shown_folder} does not exist"
        ) from None
    except NotADirectoryError:
        raise FedTheoryError(f"cannot write {shown}: a folder on its path is a file") from None
    except OSError as exc:
        raise named_error(exc, given) from None
    if not stat.S_ISDIR(fst.st_mode):
        raise FedTheoryError(f"cannot write {shown}: {shown_folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(
            errno.EACCES, f"Permission denied (cannot write in the folder {shown_folder})", given
        )
    return OutputTarget(given, Path(real), "new")


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` to ``path``, the one writer of every output file (see the module notes).

    Parameters
    ----------
    path : str or path-like
        A file (new or existing; a symbolic link is followed and its target replaced), a FIFO
        or character device (written directly), or ``-`` for standard output.
    data : str or bytes
        Text is written as UTF-8.

    Returns
    -------
    Path
        ``path`` as given.

    Raises
    ------
    FedTheoryError
        See :func:`check_output_path`.
    OSError
        Permission denied, disk full, ...: its ``filename`` is ``path`` as given.
    TypeError
        ``data`` is neither text nor bytes (nothing is written).
    """
    if not isinstance(data, str | bytes | bytearray | memoryview):
        raise TypeError(f"write_atomic writes text or bytes, got {type(data).__name__}")
    target = check_output_path(path)
    if target.kind == "stdout":
        _write_stdout(data)
        return Path("-")
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if target.kind == "stream":
        sys.stdout.flush()  # /dev/stdout may be our own standard output
        try:
            with open(target.path, "ab") as fh:  # no truncation, no rename
                fh.write(blob)
        except OSError as exc:
            raise named_error(exc, target.given) from None
        return Path(target.given)
    _replace(target, blob)
    return Path(target.given)


def _write_stdout(data: str | bytes) -> None:
    if isinstance(data, str):
        sys.stdout.write(data)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    sys.stdout.buffer.write(bytes(data))
    sys.stdout.buffer.flush()


def _replace(target: OutputTarget, blob: bytes) -> None:
    """Temporary file in the target's folder, fsync, rename over the target, fsync the folder.

    The temporary file is removed on every way out (an error, Ctrl-C): ``tmp`` is set before the
    file is created and cleared only once the rename has happened.
    """
    folder, name = target.path.parent, target.path.name
    tmp: str | None = None
    fd: int | None = None
    try:
        for _ in range(100):
            tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
            try:
                # mode 0o666 minus the umask, as open() gives a new file
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                tmp = None
        else:
            raise FileExistsError(errno.EEXIST, "no free temporary name", target.given)
        if target.mode is not None:
            os.fchmod(fd, target.mode)  # a replaced file keeps its permission bits
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = None
        os.replace(tmp, target.path)
        tmp = None
        _fsync_folder(folder)
    except OSError as exc:
        raise named_error(exc, target.given) from None
    finally:
        if fd is not None:
            with suppress(OSError):
                os.close(fd)
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable (best effort: some file systems cannot fsync a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_output_dir(path: str | os.PathLike) -> Path:
    """The output folder ``path``, created if missing (with its parents), checked writable.

    Raises
    ------
    FedTheoryError
        ``path`` exists and is not a folder, or a part of it is a file.
    PermissionError
        It cannot be created or written; ``filename`` is ``path`` as given.
    """
    given = os.fsdecode(os.fspath(path))
    if not given.strip():
        raise FedTheoryError("the output folder is empty")
    folder = Path(given)
    if folder.exists() and not folder.is_dir():
        raise FedTheoryError(f"{given} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise FedTheoryError(
            f"cannot create the folder {given}: a part of its path is a file"
        ) from None
    except OSError as exc:
        raise named_error(exc, given) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "Permission denied (folder not writable)", given)
    return folder


@contextmanager
def temporary_directory(prefix: str = "fedtheory-") -> Iterator[Path]:
    """A temporary folder that is removed when the ``with`` block ends, however it ends (an
    error, Ctrl-C included)::

        with temporary_directory("fedtheory-verify-") as scratch:
            ...  # write into scratch
    """
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as name:
        yield Path(name)
