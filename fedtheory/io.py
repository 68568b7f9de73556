"""Input and output: the one writer of every output file, the one reader of users' array files,
JSON, figures, temporary folders and progress bars.

Output never destroys anything (:func:`write_atomic`, which :func:`emit_json` and
:func:`save_figure` use):

- a regular file or a new path is written to a temporary file in the same folder, flushed to
  disk and renamed over the target, so a reader sees the old file or the new one, never half of
  one; a replaced file keeps its permission bits, and no temporary file is left behind, even
  on Ctrl-C;
- a symbolic link is followed: its target is replaced atomically and the link stays a link;
- a FIFO, a character device (``/dev/null``, a terminal) and any path under ``/dev`` or
  ``/proc`` (``/dev/stdout``, ``/dev/fd/3``) are written directly, never renamed over; ``-`` is
  standard output;
- a folder, a path whose folder does not exist, a socket or a block device is refused with one
  line naming the path as the user gave it (:class:`~fedtheory.errors.FedTheoryError`); an
  operating-system error (permission denied, disk full) is re-raised with that path too.

JSON convention (every JSON fedtheory writes): a non-finite number, i.e. NaN or +-inf (a
diverged seed, a metric that was not recorded), is written as ``null``. Reading it back with
``np.array(d["error"], dtype=float)`` gives NaN there; a reader in any language gets a number or
nothing, never a string such as ``"nan"`` and never the invalid JSON token ``NaN``.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import secrets
import stat
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from tqdm.auto import tqdm

from fedtheory.backend import is_device_array, to_numpy
from fedtheory.errors import FedTheoryError


def jsonable(obj: Any, *, arrays: bool = False) -> Any:
    """Convert NumPy/CuPy scalars and arrays (and nested containers) to plain JSON values.

    The one convention of every JSON fedtheory writes: a non-finite number (NaN, +-inf: a diverged
    seed, a metric that was not recorded) is ``null``, so ``np.array(d["error"], dtype=float)``
    reads it back as NaN and a reader in any language gets a number or nothing, never a string.
    Arrays are converted without a Python-level loop over their elements.

    With ``arrays=True`` numeric arrays stay arrays (on the host, C-contiguous, float32 widened
    to float64 as ``tolist`` would) for an encoder that writes them natively and writes their
    non-finite entries as ``null`` (:func:`dumps` uses orjson's ``OPT_SERIALIZE_NUMPY``): the
    same JSON values without a Python object per element.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v, arrays=arrays) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v, arrays=arrays) for v in obj]
    if is_device_array(obj):
        obj = to_numpy(obj)
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "c":
            raise TypeError("complex arrays have no JSON form")
        if arrays and obj.dtype.kind in "fiub" and obj.ndim > 0:
            wide = {"f": np.float64, "i": np.int64, "u": np.uint64, "b": np.bool_}
            return np.ascontiguousarray(obj, dtype=wide[obj.dtype.kind])
        if obj.dtype.kind == "f" and not np.isfinite(obj).all():
            out = obj.astype(object)
            out[~np.isfinite(obj)] = None
            return out.tolist()
        return obj.tolist()
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps(obj: Any, *, indent: bool = True) -> str:
    """``obj`` as JSON text (the conventions of :func:`jsonable`), indented by two spaces or
    compact.

    Written by orjson, which serializes the arrays natively (about 15x faster than the standard
    encoder on a run's per-seed, per-round metrics); numbers read back as the same doubles. An
    object orjson refuses (an integer beyond 64 bits) goes through the standard encoder.
    """
    option = orjson.OPT_SERIALIZE_NUMPY | (orjson.OPT_INDENT_2 if indent else 0)
    try:
        return orjson.dumps(jsonable(obj, arrays=True), option=option).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(jsonable(obj), indent=2 if indent else None)


# ---------------------------------------------------------------------------------------------
# The one writer.

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


def _named(exc: OSError, given: str) -> OSError:
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
            raise _named(exc, given) from None
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
        raise _named(exc, given) from None
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
        raise _named(exc, given) from None
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
            raise _named(exc, target.given) from None
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
        raise _named(exc, target.given) from None
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
        raise _named(exc, given) from None
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


# ---------------------------------------------------------------------------------------------
# Figures and JSON.


def pyplot() -> Any:
    """``matplotlib.pyplot``, imported on first use.

    matplotlib is a core dependency, but importing pyplot costs about half a second, which every
    command would pay at start-up; so plotting code asks for it here. No backend is forced: a
    notebook keeps its inline backend, and a machine without a display gets matplotlib's
    non-interactive fallback (Agg).
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415  (lazy: half a second at start-up)

    return plt


#: Metadata that would otherwise hold a timestamp or a version, per format (others have none).
_NO_STAMP = {
    "pdf": {"CreationDate": None},
    "png": {"Software": None},
    "svg": {"Date": None},
    "svgz": {"Date": None},
}
#: Formats a figure is never written as: a LaTeX fragment (needs TeX) and raw pixel dumps.
_NOT_FIGURES = ("pgf", "raw", "rgba")


def figure_formats() -> tuple[str, ...]:
    """The file suffixes (without the dot) :func:`save_figure` writes: matplotlib's, less a
    LaTeX fragment (pgf) and raw pixel dumps."""
    from matplotlib.backend_bases import FigureCanvasBase  # noqa: PLC0415  (lazy, as pyplot)

    return tuple(f for f in FigureCanvasBase.get_supported_filetypes() if f not in _NOT_FIGURES)


def check_figure_path(path: str | os.PathLike) -> str:
    """The format of a figure output ``path`` (its suffix; png without one, or for ``-``),
    checked with :func:`check_output_path`, before anything is drawn.

    Raises
    ------
    FedTheoryError
        An unknown suffix (the message lists the supported ones), or a path
        :func:`check_output_path` refuses.
    """
    given = os.fsdecode(os.fspath(path))
    fmt = "png" if given == "-" else (Path(given).suffix.lstrip(".").lower() or "png")
    formats = figure_formats()
    if fmt not in formats:
        raise FedTheoryError(
            f"cannot save a figure as {given}: unknown format .{fmt} "
            f"(use one of {', '.join('.' + f for f in formats)})"
        )
    check_output_path(given)
    return fmt


def figure_bytes(fig: Any, fmt: str = "png", **kw: Any) -> bytes:
    """``fig`` rendered as ``fmt`` (png, pdf, svg, ...); png, pdf and svg without timestamps or
    random ids: same figure, same bytes."""
    plt = pyplot()
    buf = io.BytesIO()
    meta = _NO_STAMP.get(fmt)
    with plt.rc_context({"svg.hashsalt": "fedtheory"}):
        fig.savefig(buf, format=fmt, **({"metadata": meta} if meta else {}), **kw)
    return buf.getvalue()


def save_figure(fig: Any, path: str | os.PathLike, **kw: Any) -> Path:
    """Save ``fig`` to ``path`` (format from its suffix, png without one) through
    :func:`write_atomic`, without timestamps.

    Keywords go to :meth:`matplotlib.figure.Figure.savefig` (``dpi``, ``bbox_inches``, ...).

    Raises
    ------
    FedTheoryError
        See :func:`check_figure_path`; raised before anything is rendered.
    """
    fmt = check_figure_path(path)
    return write_atomic(path, figure_bytes(fig, fmt, **kw))


def emit_json(obj: Any, target: str | os.PathLike | None, *, indent: bool = True) -> None:
    """Write ``obj`` as JSON (non-finite numbers as ``null``) to ``target`` through
    :func:`write_atomic`; ``None`` or ``"-"`` is standard output, always indented (``indent=False``:
    compact, for large files that programs read)."""
    to_stdout = target is None or os.fspath(target) == "-"
    text = dumps(obj, indent=indent or to_stdout)
    write_atomic("-" if to_stdout else target, text + "\n")


def progress(iterable=None, *, total=None, desc=None, disable=False, **kw):
    """A tqdm progress bar on stderr, silent when ``disable`` or stderr is not a terminal."""

    quiet = disable or not sys.stderr.isatty() or os.environ.get("FEDTHEORY_NO_PROGRESS")
    return tqdm(iterable, total=total, desc=desc, disable=bool(quiet), file=sys.stderr, **kw)


# ---------------------------------------------------------------------------------------------
# The one reader of users' array files.

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP = b"PK\x05\x06"


def _sniff(path: Path) -> str:
    """``"npy"``, ``"npz"`` (a zip archive) or ``"text"``, from the file's first bytes."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head.startswith(_NPY_MAGIC):
        return "npy"
    if head.startswith((_ZIP_MAGIC, _EMPTY_ZIP)):
        return "npz"
    return "text"


def check_input_file(path: str | os.PathLike) -> Path:
    """``path`` as a Path when it is an existing readable file.

    Raises
    ------
    FileNotFoundError
        It does not exist (``filename`` is ``path`` as given, so the command line says
        ``no such file: PATH``).
    FedTheoryError
        It is a folder.
    """
    given = os.fsdecode(os.fspath(path))
    p = Path(given)
    if not given.strip() or not p.exists():
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", given)
    if p.is_dir():
        raise FedTheoryError(f"{given} is a folder, not a file")
    return p


def read_array(path: str | os.PathLike, *, what: str = "an array", sparse: bool = False) -> Any:
    """An array from a user's file: ``.npy``, numeric text (``.csv`` comma separated, else
    whitespace; ``#`` comments), or with ``sparse=True`` a ``scipy.sparse.save_npz`` archive.

    The format is recognized from the file's first bytes, so a ``.npy`` renamed ``.txt`` still
    loads; what the file holds (dtype, shape, finiteness) is the caller's to check.

    Raises
    ------
    FileNotFoundError
        The file does not exist (``filename`` is ``path`` as given).
    FedTheoryError
        A folder, an empty file, non-numeric text, binary junk, a damaged ``.npy``, an ``.npz``
        archive where it is not accepted, an object array; the message names ``path`` as given
        and ``what`` was expected.
    """
    p = check_input_file(path)
    given = os.fsdecode(os.fspath(path))
    try:
        kind = _sniff(p)
        if kind == "npy":
            return np.load(p, allow_pickle=False)
        if kind == "npz":
            if not sparse:
                raise FedTheoryError(
                    f"cannot read {what} from {given}: it is an .npz archive; give .npy or text"
                )
            import scipy.sparse as sp  # noqa: PLC0415  (0.1-0.3 s of SciPy at start-up; sparse inputs only)

            try:
                return sp.csr_array(sp.load_npz(p))
            except (ValueError, KeyError) as exc:
                raise FedTheoryError(
                    f"cannot read {what} from {given}: not a scipy.sparse.save_npz archive ({exc})"
                ) from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            arr = np.loadtxt(p, delimiter="," if p.suffix.lower() == ".csv" else None, ndmin=1)
    except FedTheoryError:
        raise
    except UnicodeDecodeError:
        raise FedTheoryError(
            f"cannot read {what} from {given}: it is neither .npy nor text (binary content)"
        ) from None
    except (ValueError, EOFError, zipfile.BadZipFile, OSError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, zipfile.BadZipFile) and exc.errno:
            raise _named(exc, given) from None
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FedTheoryError(f"cannot read {what} from {given}: {reason}") from None
    if arr.size == 0:
        raise FedTheoryError(f"cannot read {what} from {given}: the file holds no numbers")
    return arr


def read_npz(path: str | os.PathLike, *, what: str = "an .npz archive") -> dict[str, np.ndarray]:
    """The arrays of a user's ``.npz`` archive (``numpy.savez``; no pickled objects).

    Raises
    ------
    FileNotFoundError
        The file does not exist (``filename`` is ``path`` as given).
    FedTheoryError
        A folder, an empty file, a single ``.npy`` array, text or binary junk, a damaged archive
        or one holding objects; the message names ``path`` as given and ``what`` was expected.
    """
    p = check_input_file(path)
    given = os.fsdecode(os.fspath(path))
    kind = _sniff(p)
    if kind == "npy":
        raise FedTheoryError(f"{given} is a single .npy array; expected {what}")
    if kind != "npz":
        empty = p.stat().st_size == 0
        raise FedTheoryError(
            f"{given} is {'empty' if empty else 'not a zip archive'}; expected {what}"
        )
    try:
        with np.load(p, allow_pickle=False) as z:
            return {k: np.asarray(z[k]) for k in z.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FedTheoryError(
            f"{given} is not a readable .npz archive ({first}); expected {what}"
        ) from None
