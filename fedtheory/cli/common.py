"""The command line's one vocabulary, shared by every subcommand.

- ``--json OUT`` writes the subcommand's JSON to OUT; ``--json -`` (or a bare ``--json``) prints
  it to stdout, and then stdout holds the JSON only (tables and progress go to stderr).
- ``--clients/-N`` is the number of clients, ``--clients-per-round/-M`` how many take part in a
  round; older spellings (``--n``, ``--N``, ``--M``) stay as aliases.
- Algorithm names are matched case-insensitively (``FOCUS``, ``focus``, ``HA-Fed``, ``hafed``);
  ``--algorithm FILE.py:NAME`` or ``MODULE:NAME`` loads a user's own algorithm (importing the
  file: running its code, at the user's request) and ``--option NAME=VALUE`` sets an
  algorithm's own option, the same on every command that runs one (:func:`add_algorithm`).
- ``--help`` shows every default and an example.
- ``--max-memory SIZE`` (where a command's memory grows with its input) sets the limit of the
  estimates made before work (default: the memory available); beyond it the command refuses,
  naming the estimate (:func:`fedtheory.validation.check_memory`).

A subcommand module registers itself with :func:`add_parser` and reads its arguments with the
helpers below; it leaves the checking of values to the library, whose errors name the violated
assumption (the CLI turns them into one line and exit status 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

from fedtheory.algorithms.registry import info, resolve_algorithm
from fedtheory.errors import FedTheoryError, UnknownOptionError
from fedtheory.io import check_figure_path, check_output_path, emit_json
from fedtheory.participation import load_vector, model_info
from fedtheory.simulation.settings import SETTINGS
from fedtheory.simulation.spec import PARTICIPATION_SETTINGS

#: "The table's default" (:func:`add_setting`).
_TABLE = object()


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keep the description's and examples' line breaks; show every default (unless the help
    text already states it, or there is none: a flag that is off, an option that is unset)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            action.option_strings
            and "default" not in text.lower()
            and default is not None
            and default is not False
            and default is not argparse.SUPPRESS
            and default != []
        ):
            shown = ",".join(map(str, default)) if isinstance(default, list) else default
            text += f" (default: {shown})"
        return text


def add_parser(
    subparsers: Any, name: str, *, help: str, description: str, examples: list[str]
) -> argparse.ArgumentParser:
    """A subcommand's parser with the shared formatter and an ``examples:`` epilog."""
    epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)
    return subparsers.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=HelpFormatter
    )


def add_json(p: argparse.ArgumentParser, what: str = "the results") -> None:
    """``--json [OUT]``: write ``what`` as JSON to OUT, or to stdout for ``-`` or no OUT."""
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="OUT",
        help=f"write {what} as JSON to OUT ('-' or no OUT: stdout, which then holds only the JSON)",
    )


def json_to_stdout(args: argparse.Namespace) -> bool:
    """True when ``--json`` prints to stdout (human-readable text then goes to stderr)."""
    return getattr(args, "json", None) == "-"


def human_stream(args: argparse.Namespace) -> Any:
    """Where tables and summaries go: stderr when stdout carries the JSON, else stdout."""
    return sys.stderr if json_to_stdout(args) else sys.stdout


def write_json(obj: Any, args: argparse.Namespace) -> None:
    """Write ``obj`` where ``--json`` says (nothing when ``--json`` was not given)."""
    if args.json is not None:
        emit_json(obj, args.json)


#: The flags of every subcommand that name an output file (``out`` only where it is a file:
#: ``simulate --out OUT.npz``).
OUTPUT_FLAGS = ("json", "html", "markdown", "out", "plot", "plot_families")


def _outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(flag, path) of every output file or ``-`` the command line names."""
    out = []
    for name in OUTPUT_FLAGS:
        path = getattr(args, name, None)
        if isinstance(path, str) and not (name == "out" and getattr(args, "command", "") == "nn"):
            out.append(("--" + name.replace("_", "-"), path))
    return out


def _same_output(a: str, b: str) -> bool:
    """Whether two output paths name one file (through links and ``..``; /dev/null aside)."""
    if os.devnull in (a, b):
        return False
    ra, rb = os.path.realpath(a), os.path.realpath(b)
    if ra == rb:
        return True
    try:
        return os.path.samefile(a, b)  # hard links
    except OSError:
        return False


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse a bad output path before any computation: ``--json``/``--html``/``--markdown``
    files and ``--plot``/``--plot-families`` figures (format from the suffix), wherever a
    subcommand has them (an hour's run must not end on "cannot write ..."); two outputs to
    stdout (``--json - --markdown -``) would run together, and two outputs naming one file
    (``--json same.out --html same.out``) would keep only the last: both are refused too."""
    outputs = _outputs(args)
    to_stdout = [flag for flag, path in outputs if path == "-"]
    if len(to_stdout) > 1:
        raise FedTheoryError(
            f"{' and '.join(to_stdout)} would both write to stdout: give one of them a file"
        )
    files = [(flag, path) for flag, path in outputs if path != "-"]
    for i, (flag, path) in enumerate(files):
        for other, path2 in files[i + 1 :]:
            if _same_output(path, path2):
                raise FedTheoryError(
                    f"{flag} {path} and {other} {path2} name the same file: one would overwrite "
                    "the other; give each its own file"
                )
    for name in ("json", "html", "markdown"):
        path = getattr(args, name, None)
        if isinstance(path, str) and path != "-":
            check_output_path(path)
    for name in ("plot", "plot_families"):
        path = getattr(args, name, None)
        if isinstance(path, str):
            check_figure_path(path)


def add_max_memory(p: argparse.ArgumentParser) -> None:
    """``--max-memory SIZE``: the limit of the memory estimates made before work (``4G``,
    ``512M``, bytes); the command line runs the command inside
    :func:`fedtheory.validation.max_memory`."""
    p.add_argument(
        "--max-memory",
        metavar="SIZE",
        default=None,
        help="refuse work whose memory estimate exceeds SIZE (4G, 512M, bytes; default: the "
        "memory available)",
    )


def add_setting(
    p: Any,
    name: str,
    *,
    default: Any = _TABLE,
    choices: Any = None,
    aliases: tuple[str, ...] = (),
    type: Any = None,
    note: str = "",
    required: bool = False,
) -> argparse.Action:
    """The flag of the run setting ``name``: its spellings, type, choices, metavar and help are
    :data:`~fedtheory.simulation.settings.SETTINGS`'s (the one declaration of a setting).

    Its default is the table's, except for an algorithm's setting, which is None (passed to the
    algorithm only when given: the algorithm's own default applies, and an algorithm refuses a
    setting it does not read). A command may give its own ``default`` (``--workers``: the
    cores), a narrower list of ``choices`` (``rate``: the models with an exact law), its older
    spellings as ``aliases``, a ``type`` for a list of values and a ``note`` that says what
    the command does with it; the help is the table's.
    """
    s = SETTINGS[name]
    if default is _TABLE:
        default = None if _passed_when_given(s) else s.default
    kw: dict[str, Any] = {"dest": name, "default": default, "help": s.help + note}
    if required:
        kw["required"] = True
    if s.kind == "bool":
        kw["action"] = "store_true"
    elif s.kind == "options":
        kw.update(action="append", default=[] if default is None else default, metavar=s.metavar)
    else:
        kw["type"] = type or _TYPES[s.kind]
        kw["metavar"] = s.metavar
        if s.choices is not None or choices is not None:
            kw["choices"] = tuple(choices if choices is not None else s.choices)
            kw.pop("metavar")
    return p.add_argument(*s.flags, *aliases, **kw)


def add_settings(p: Any, *names: str, table_defaults: bool = False, **defaults: Any) -> None:
    """The flags of the run settings ``names`` (:func:`add_setting`), with a command's own
    defaults by name; ``table_defaults``: an algorithm's settings default to the table's too
    (a command that passes every setting, not only those given)."""
    for name in names:
        if name in defaults:
            add_setting(p, name, default=defaults[name])
        elif table_defaults:
            add_setting(p, name, default=SETTINGS[name].default)
        else:
            add_setting(p, name)


def _passed_when_given(s: Any) -> bool:
    """An algorithm's setting (not the algorithm's name and options): passed when given."""
    return "algorithm" in s.reads and s.name not in ("algorithm", "options")


def given_settings(args: argparse.Namespace, names: Any) -> dict[str, Any]:
    """The settings among ``names`` that the command line gave (not None, not the table's
    default): what a command passes on."""
    out = {}
    for name in names:
        value = getattr(args, name, None)
        if value is not None and (value is not False) and value != SETTINGS[name].default:
            out[name] = value
    return out


def require_settings(args: argparse.Namespace, *names: str) -> None:
    """Refuse in one line when a setting the table marks required was not given."""
    missing(args, *(SETTINGS[n].flags[0] for n in names if SETTINGS[n].required))


def refuse_unread_model_settings(
    args: argparse.Namespace, model: str, *, named: str, spelled: dict | None = None
) -> None:
    """Refuse a participation flag the model ``model`` does not read (its registry entry's
    ``reads``), naming the flag and what the model reads. ``named``: how the command line
    names the model (``"--participation"``, or ``""`` for a positional MODEL); ``spelled``:
    the command's own spelling of a flag, by setting."""
    entry = model_info(model)
    spelled = spelled or {}
    flags = {
        n: spelled.get(n, SETTINGS[n].flags[0]) for n in PARTICIPATION_SETTINGS if hasattr(args, n)
    }
    unread = [
        f
        for n, f in flags.items()
        if n in given_settings(args, (n,))
        and SETTINGS[n].key not in entry.reads
        and "algorithm" not in SETTINGS[n].reads
    ]
    if not unread:
        return
    own = [f for n, f in flags.items() if SETTINGS[n].key in entry.reads]
    reads = ", ".join(["-N", *own] if hasattr(args, "clients") else own) or "no other setting"
    if named:
        it = "it" if len(unread) == 1 else "them"
        raise UnknownOptionError(
            f"{', '.join(unread)}: {named} {model} does not read {it} (it reads {reads})"
        )
    raise UnknownOptionError(
        f"{model} participation does not read {', '.join(unread)} (it reads {reads})"
    )


def number_or_file(text: str) -> Any:
    """A number, or the path of a file of numbers (read where the setting is used)."""
    try:
        return float(text)
    except ValueError:
        return text


def add_clients(p: Any, *, note: str = "", default: int | None = None, aliases=()) -> None:
    """``--clients/-N N`` (with older spellings as aliases; ``note``: what the command does
    with it)."""
    add_setting(p, "clients", default=default, aliases=aliases, note=note)


def add_clients_per_round(
    p: Any, *, note: str = "", default: Any = None, aliases=(), type: Any = None
) -> None:
    """``--clients-per-round/-M M`` (with older spellings as aliases; ``type``: a list)."""
    add_setting(p, "clients_per_round", default=default, aliases=aliases, type=type, note=note)


def algorithm_name(text: str) -> str:
    """A registered algorithm named in any case or by its display name, or a user's algorithm
    (``FILE.py:NAME``, ``MODULE:NAME``, an installed entry point: imported now,
    :func:`~fedtheory.algorithms.registry.resolve_algorithm`) -> its registry name.

    Raises ``argparse.ArgumentTypeError`` (a one-line usage error, exit 2) naming the choices
    and the near miss, or why the file cannot be loaded.
    """
    try:
        return resolve_algorithm(text).name
    except FedTheoryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_algorithm(p: Any, *, options_group: Any = None, required: bool = False) -> None:
    """``--algorithm NAME`` (a registered name, ``FILE.py:NAME`` or ``MODULE:NAME``:
    :func:`algorithm_name`) and ``--option NAME=VALUE`` (repeatable; in ``options_group`` where
    given): the one way every command names an algorithm and sets its own options
    (:func:`algorithm_options` reads them)."""
    add_setting(p, "algorithm", required=required)
    add_setting(options_group or p, "options")


def algorithm_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--option NAME=VALUE`` strings -> values typed by the algorithm's declared options
    (numbers, true/false, none; an array option reads comma-separated numbers or a .npy / text
    file). Unknown names pass through: ``make_algorithm`` refuses them, listing the valid ones.
    """
    declared = {o.name: o for o in info(args.algorithm).options} if args.algorithm else {}
    out: dict[str, Any] = {}
    for item in args.options:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise FedTheoryError(f"--option takes NAME=VALUE, got {item!r}")
        kind = declared[name].kind if name in declared else str
        out[name] = _parse_option(text, kind if isinstance(kind, tuple) else (kind,))
    return out


def _parse_option(text: str, kinds: tuple) -> Any:
    """``text`` as the first of ``kinds`` it parses as (bool: true/false/1/0)."""
    low = text.strip().lower()
    for kind in kinds:
        if kind is bool and low in ("true", "1", "yes", "false", "0", "no"):
            return low in ("true", "1", "yes")
        if kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                continue
        if kind is str:
            return text
        if kind is np.ndarray and low != "none":
            try:  # comma-separated numbers, else a file
                return np.asarray([float(v) for v in text.split(",")])
            except ValueError:
                return load_vector(text, "option")
    if low == "none":
        return None
    return text  # the option's own check names the expected type


def algorithm_names(text: str) -> list[str]:
    """Comma-separated algorithm names (any case) -> registry names."""
    return [algorithm_name(t) for t in name_list(text)]


def name_list(text: str) -> list[str]:
    """Names, comma separated ("ring,torus"); what they name is checked by their user."""
    vals = [v for v in str(text).replace(" ", "").split(",") if v]
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one name")
    return vals


def int_list(text: str) -> list[int]:
    """Integers, comma separated ("1,2,4,8"), as every list on the command line is given."""
    try:
        vals = [int(v) for v in str(text).replace(" ", "").split(",") if v]
    except ValueError:
        msg = f"expected integers separated by commas, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return vals


def missing(args: argparse.Namespace, *flags: str) -> None:
    """Refuse in one line when any of the required ``flags`` (``"--lr"``) was not given."""
    absent = [f for f in flags if getattr(args, f.lstrip("-").replace("-", "_")) is None]
    if absent:
        raise FedTheoryError(f"missing {', '.join(absent)} (see fedtheory {args.command} --help)")


#: The command-line type of each kind of setting (:attr:`~fedtheory.simulation.settings.Setting.kind`).
_TYPES = {
    "int": int,
    "float": float,
    "str": str,
    "path": str,
    "rate": number_or_file,
    "names": name_list,
    "algorithm": algorithm_name,
}
