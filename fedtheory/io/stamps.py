"""Provenance of an output: when, from which git commit, with which library versions."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second (``2026-11-26T22:20:05+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def git_commit(folder: str | os.PathLike | None = None) -> str | None:
    """The commit checked out in the git work tree holding ``folder`` (default: the package's
    own folder), with ``+dirty`` when tracked files differ from it; None outside a git tree or
    without git."""
    where = os.fspath(folder) if folder is not None else os.path.dirname(__file__)
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = head.stdout.strip()
    return commit + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def library_versions(names: tuple[str, ...] = ("numpy", "scipy", "matplotlib")) -> dict:
    """``{"fedtheory": ..., name: version}`` of the installed libraries among ``names`` (read
    from the installed distributions; nothing is imported)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    from fedtheory._version import __version__  # noqa: PLC0415  (leaf module)

    out = {"fedtheory": __version__}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    out["python"] = sys.version.split()[0]
    return out


def provenance(libraries: tuple[str, ...] = ("numpy", "scipy", "matplotlib")) -> dict:
    """``{"date", "commit", "versions"}`` of an output made now: UTC date (:func:`utc_now`),
    the git commit when run from a git work tree (:func:`git_commit`), library versions
    (:func:`library_versions`)."""
    return {"date": utc_now(), "commit": git_commit(), "versions": library_versions(libraries)}
