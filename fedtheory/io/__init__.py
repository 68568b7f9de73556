"""Input and output: the one writer of every output file, the one reader of users' array files,
JSON, figures, temporary folders and progress bars, one module per concern (:mod:`.writing`,
:mod:`.reading`, :mod:`.jsonout`, :mod:`.figures`, :mod:`.bars`, :mod:`.stamps`); every
name is importable from ``fedtheory.io``.

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
diverged seed, a round that ``record_every`` skipped), is written as ``null``. Reading it back with
``np.array(d["error"], dtype=float)`` gives NaN there; a reader in any language gets a number or
nothing, never a string such as ``"nan"`` and never the invalid JSON token ``NaN``.
"""

from __future__ import annotations

from fedtheory.io.bars import (
    HEARTBEAT,
    LineProgress,
    duration,
    heartbeat_seconds,
    notebook_front_end,
    progress,
    working,
)
from fedtheory.io.figures import (
    check_figure_path,
    figure_bytes,
    figure_formats,
    pyplot,
    save_figure,
)
from fedtheory.io.jsonout import (
    dumps,
    emit_json,
    jsonable,
    renamed,
)
from fedtheory.io.reading import (
    check_input_file,
    read_array,
    read_npz,
    read_toml,
)
from fedtheory.io.stamps import (
    git_commit,
    library_versions,
    provenance,
    utc_now,
)
from fedtheory.io.writing import (
    STREAM_FOLDERS,
    OutputTarget,
    check_output_dir,
    check_output_path,
    temporary_directory,
    write_atomic,
)

__all__ = [
    "HEARTBEAT",
    "LineProgress",
    "OutputTarget",
    "STREAM_FOLDERS",
    "check_figure_path",
    "check_input_file",
    "check_output_dir",
    "check_output_path",
    "dumps",
    "duration",
    "emit_json",
    "figure_bytes",
    "figure_formats",
    "git_commit",
    "heartbeat_seconds",
    "jsonable",
    "library_versions",
    "notebook_front_end",
    "progress",
    "provenance",
    "pyplot",
    "read_array",
    "read_npz",
    "read_toml",
    "renamed",
    "save_figure",
    "temporary_directory",
    "utc_now",
    "working",
    "write_atomic",
]
