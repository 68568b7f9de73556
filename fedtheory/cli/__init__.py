"""The ``fedtheory`` command line.

Each subcommand lives in its own module of this package and exposes ``register(subparsers)``,
which adds an ``argparse`` parser whose ``func`` default receives the parsed arguments and returns
an exit status. Bad input never shows a traceback: a :class:`~fedtheory.errors.FedTheoryError`
(or an ``OSError`` for files) becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from fedtheory._version import __version__
from fedtheory.errors import FedTheoryError

# Modules of fedtheory.cli that define subcommands, in the order --help lists them.
SUBCOMMANDS: tuple[str, ...] = (
    "verify",
    "spectral",
    "figures",
    "simulate",
    "study",
    "participation",
    "nn",
    "rate",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fedtheory",
        description=(
            "Check convergence claims of federated optimization numerically: spectral gaps and "
            "theorem conditions, participation models as stochastic matrices, exact vectorized "
            "simulators on problems with known answers, and a catalog of paper claims."
        ),
    )
    parser.add_argument("--version", action="version", version=f"fedtheory {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"fedtheory.cli.{name}").register(sub)
    return parser


def fail(message: str) -> int:
    """Print one line naming what is wrong and return the error exit status."""
    print(f"fedtheory: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except FedTheoryError as exc:
        return fail(str(exc))
    except FileNotFoundError as exc:
        return fail(f"no such file: {exc.filename}")
    except OSError as exc:
        return fail(f"{exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "))
    except KeyboardInterrupt:
        return fail("interrupted")


if __name__ == "__main__":
    sys.exit(main())
