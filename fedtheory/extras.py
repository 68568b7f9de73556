"""The optional extras of ``pyproject.toml``: which modules each brings, and how to ask for one.

A feature that needs an extra says so before it starts (:func:`require`), and imports a module
of it where it uses it (:func:`import_extra`): one sentence naming the extra and the command
that installs it, a :class:`~fedtheory.errors.MissingExtraError`,
which the command line prints as one line (exit 2) and ``fedtheory verify`` records as "not
run" for the claim that needs it. Nothing here imports an extra at import time.

Examples
--------
>>> from fedtheory.extras import missing, install_hint
>>> install_hint("nn")
"pip install 'fedtheory[nn]'"
>>> missing("nn")  # doctest: +SKIP
[]
"""

from __future__ import annotations

import importlib
from types import ModuleType

from fedtheory.errors import FedTheoryError, MissingExtraError

#: Extra -> the top-level modules it installs (pyproject.toml, [project.optional-dependencies]).
EXTRAS: dict[str, tuple[str, ...]] = {
    "nn": ("mnist1d",),
    "sweep": ("distributed", "zarr", "xarray"),
    "gpu": ("cupy",),
    "pep": ("PEPit", "cvxpy", "clarabel", "scs"),
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'fedtheory[{extra}]'"


def _known(extra: str) -> tuple[str, ...]:
    if extra not in EXTRAS:
        raise FedTheoryError(f"unknown extra {extra!r}: known extras are {', '.join(EXTRAS)}")
    return EXTRAS[extra]


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (empty: the extra is usable).

    A module counts as missing when importing it raises ``ImportError`` (not installed, or
    blocked, e.g. ``sys.modules[name] = None``), so a broken install is reported, not crashed on.
    """
    out = []
    for module in _known(extra):
        try:
            importlib.import_module(module)
        except ImportError:
            out.append(module)
    return out


def require(extra: str, feature: str) -> None:
    """Raise :class:`~fedtheory.errors.MissingExtraError` when ``extra`` is missing, naming
    ``feature`` (e.g. "claim N1 (MNIST-1D)"), the missing modules and the install command."""
    gone = missing(extra)
    if gone:
        raise MissingExtraError(
            f"{feature} needs the optional extra '{extra}' ({', '.join(gone)} not installed): "
            f"{install_hint(extra)}",
            extra=extra,
        )


def import_extra(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` of the optional ``extra`` for ``feature``, or raise
    :class:`~fedtheory.errors.MissingExtraError` in one line naming the missing module and the
    command that installs the extra (``fedtheory sweep needs zarr: pip install
    'fedtheory[sweep]'``)."""
    _known(extra)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(
            f"{feature} needs {exc.name or module}: {install_hint(extra)}", extra=extra
        ) from None
