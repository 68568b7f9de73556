"""The one reader of users' array files (``.npy``, ``.npz``, text), told apart by their first
bytes, validated with one line naming the file; and of their TOML specs (:func:`read_toml`).
"""

from __future__ import annotations

import errno
import os
import tomllib
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fedtheory.errors import FedTheoryError
from fedtheory.io.writing import named_error

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


#: Largest TOML spec read (bytes): a spec is a few hundred bytes, a sweep's lists a few more.
MAX_TOML_BYTES = 1 << 20


def read_toml(path: str | os.PathLike, *, what: str = "a TOML spec") -> dict[str, Any]:
    """The table of a user's TOML file (a bound spec, a sweep spec): data, never code.

    Raises
    ------
    FileNotFoundError
        No such file (``filename`` is ``path`` as given).
    FedTheoryError
        A folder, a file larger than :data:`MAX_TOML_BYTES`, not UTF-8 text, not valid TOML
        (the message names the line), or arrays and tables nested too deeply for the reader.
    """
    given = os.fsdecode(os.fspath(path))
    p = check_input_file(given)
    size = p.stat().st_size
    if size > MAX_TOML_BYTES:
        raise FedTheoryError(
            f"{given} has {size} bytes, more than the {MAX_TOML_BYTES} {what} may have"
        )
    try:
        with open(p, "rb") as fh:  # a pipe (<(...)) is read too, up to the same size
            data = fh.read(MAX_TOML_BYTES + 1)
    except OSError as exc:
        raise FedTheoryError(f"cannot read {given}: {exc.strerror or exc}") from None
    if len(data) > MAX_TOML_BYTES:
        raise FedTheoryError(f"{given} is longer than the {MAX_TOML_BYTES} bytes {what} may have")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise FedTheoryError(f"{given} is not a text file; expected {what}") from None
    except tomllib.TOMLDecodeError as exc:
        raise FedTheoryError(f"{given} is not valid TOML: {exc}") from None
    except RecursionError:
        raise FedTheoryError(f"{given} nests arrays or tables too deeply to be {what}") from None


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
            try:
                import scipy.sparse as sp  # noqa: PLC0415  (0.1-0.3 s of SciPy at start-up; sparse inputs only)

                return sp.csr_array(sp.load_npz(p))
            except (ValueError, KeyError) as exc:
                raise FedTheoryError(
                    f"cannot read {what} from {given}: not a scipy.sparse.save_npz archive ({exc})"
                ) from None
        delimiter = "," if p.suffix.lower() == ".csv" else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            try:
                arr = np.loadtxt(p, delimiter=delimiter, ndmin=1)
            except ValueError:
                why = _text_problem(p, delimiter)
                if why is None:
                    raise
                raise FedTheoryError(f"cannot read {what} from {given}: {why}") from None
    except FedTheoryError:
        raise
    except UnicodeDecodeError:
        raise FedTheoryError(
            f"cannot read {what} from {given}: it is neither .npy nor text (binary content)"
        ) from None
    except (ValueError, EOFError, zipfile.BadZipFile, OSError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, zipfile.BadZipFile) and exc.errno:
            raise named_error(exc, given) from None
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FedTheoryError(f"cannot read {what} from {given}: {reason}") from None
    if arr.size == 0:
        raise FedTheoryError(f"cannot read {what} from {given}: the file holds no numbers")
    return arr


def _text_problem(path: Path, delimiter: str | None) -> str | None:
    """Where numeric text goes wrong, in the file's own line numbers: a field that is not a
    number, or a line with another count of numbers than the first (None: nothing found)."""
    width, first = None, 0
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            fields = [f.strip() for f in text.split(delimiter)]
            for k, f in enumerate(fields, start=1):
                try:
                    float(f)
                except ValueError:
                    return f"line {number}, field {k} is {f[:40]!r}, not a number"
            if width is None:
                width, first = len(fields), number
            elif len(fields) != width:
                n = len(fields)
                return (
                    f"line {number} has {n} number{'s' * (n != 1)}, line {first} has {width}: "
                    "every row of a matrix has the same length"
                )
    return None


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
