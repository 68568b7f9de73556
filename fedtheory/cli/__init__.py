"""The ``fedtheory`` command line.

Each subcommand lives in its own module of this package and exposes ``register(subparsers)``,
which adds an ``argparse`` parser whose ``func`` default receives the parsed arguments and returns
an exit status. Bad input never shows a traceback: a :class:`~fedtheory.errors.FedTheoryError`
(or an ``OSError`` for files) becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys

from fedtheory._version import __version__
from fedtheory.cli.common import check_outputs
from fedtheory.errors import FedTheoryError
from fedtheory.io import working
from fedtheory.validation import did_you_mean, max_memory

# Modules of fedtheory.cli that define subcommands, in the order --help lists them.
SUBCOMMANDS: tuple[str, ...] = (
    "verify",
    "spectral",
    "figures",
    "simulate",
    "sweep",
    "study",
    "participation",
    "nn",
    "rate",
    "bound",
)


class UsageError(FedTheoryError):
    """A command line argparse refuses (unknown flag, missing value, bad choice)."""


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line (exit 2) instead of the whole usage block, and
    the near miss of a misspelt choice or flag suggested (``did you mean '--rounds'?``)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message}{self._near_miss(message)} (see {self.prog} --help)")

    def _near_miss(self, message: str) -> str:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            return did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
        stray = re.search(r"unrecognized arguments: (\S+)", message)
        if stray and stray.group(1).startswith("-"):
            return did_you_mean(stray.group(1), self._flags())
        return ""

    def _flags(self) -> list[str]:
        """Every option string of this parser and of its subcommands' parsers."""
        flags = list(self._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    flags += list(sub._option_string_actions)
        return flags


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``fedtheory`` parser; with ``command`` (a name of :data:`SUBCOMMANDS`) only that
    subcommand is registered, so a command imports what it uses and nothing else (the claim
    catalog, sympy and the experiments are half the start-up of every other command)."""
    parser = Parser(
        prog="fedtheory",
        description=(
            "Check convergence claims of federated optimization numerically: spectral gaps and "
            "theorem conditions, participation models as stochastic matrices, exact vectorized "
            "simulators on problems with known answers, and a catalog of paper claims."
        ),
    )
    parser.add_argument("--version", action="version", version=f"fedtheory {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if command not in SUBCOMMANDS else (command,):
        importlib.import_module(f"fedtheory.cli.{name}").register(sub)
    return parser


#: Whether the last :func:`main` ended on Ctrl-C (the ``fedtheory`` command then exits at once,
#: :mod:`fedtheory.__main__`).
interrupted = False


def fail(message: str) -> int:
    """Print one line naming what is wrong and return the error exit status."""
    print(f"fedtheory: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    global interrupted
    interrupted = False
    argv = sys.argv[1:] if argv is None else list(argv)
    # The first word that is not an option names the subcommand (the top level has only
    # --help and --version); anything else builds the whole parser, for its help or its error.
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        # A command imports what it uses here (verify: the claim catalog, seconds on a loaded
        # machine): a log hears of it after 10 s, a quick start says nothing; Ctrl-C there is
        # one line too.
        with working(f"fedtheory {command}: starting", announce=False):
            parser = build_parser(command)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        check_outputs(args)
        with max_memory(getattr(args, "max_memory", None), source="--max-memory"):
            return int(args.func(args) or 0)
    except FedTheoryError as exc:
        return fail(str(exc))
    except BrokenPipeError:  # the reader went away (``fedtheory ... | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except FileNotFoundError as exc:
        return fail(f"no such file: {exc.filename}")
    except OSError as exc:
        return fail(f"{exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "))
    except KeyboardInterrupt:  # the work is stopped; the files it wrote cleaned up on the way
        interrupted = True
        return fail("interrupted")
    except MemoryError as exc:  # a safety net: sizes beyond memory are refused up front
        return fail(f"out of memory{': ' + str(exc) if str(exc) else ''}")


if __name__ == "__main__":
    sys.exit(main())
