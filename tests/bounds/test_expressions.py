"""A bound spec is data: its expressions are parsed by a whitelist walk of Python's syntax tree and
evaluated in float64, and no text of a spec ever runs as code.

An audit hook (:func:`sys.addaudithook`) watches every parse and evaluation: no ``exec`` (what
``eval``, ``exec`` and ``lambdify`` fire), no ``compile`` but :func:`ast.parse`'s own, no
import, file open, process start, pickle lookup or input may occur. Hypothesis drives random
Unicode text and a grammar of hostile Python expressions through the parser; the exploit class
of the hostile-input audit (full-width letters that Python folds into ASCII names, sympy methods
that evaluate a string) is tried through each field, by the API and by the command line.
"""

from __future__ import annotations

import math
import sys
import threading
import tomllib
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fedtheory.bounds import CONSTANTS, BoundSpec, check, load_spec
from fedtheory.bounds.constants import LR_CONSTANTS
from fedtheory.bounds.expressions import (
    FUNCTIONS,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_LENGTH,
    Expression,
    parse_expression,
)
from fedtheory.cli import main
from fedtheory.errors import AssumptionError, FedTheoryError

ALLOWED = tuple(CONSTANTS)

# --- the audit hook ------------------------------------------------------------------------------
#: Audit events that mean code ran, a module was imported, a file opened or a process started.
FORBIDDEN = (
    "exec",
    "import",
    "open",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "subprocess.Popen",
    "pickle.find_class",
    "builtins.input",
    "ctypes.",
    "code.__new__",
    "function.__new__",
    "socket.",
    "os.remove",
    "os.rename",
    "shutil.",
    "marshal.loads",
)

_watch = threading.local()


def _hook(event: str, args: tuple) -> None:
    seen = getattr(_watch, "events", None)
    if seen is None:
        return
    if event == "compile":  # ast.parse compiles to a tree only, under this file name
        if len(args) < 2 or args[1] != "<unknown>":
            seen.append((event, repr(args)[:200]))
    elif event.startswith(FORBIDDEN):
        seen.append((event, repr(args)[:200]))


sys.addaudithook(_hook)  # cannot be removed; silent unless a test watches


class Watched:
    """``with Watched() as w:`` records the forbidden audit events of the block in ``w.events``."""

    def __enter__(self) -> Watched:
        self.events: list = []
        _watch.events = self.events
        return self

    def __exit__(self, *exc) -> None:
        _watch.events = None


def _values(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {n: float(v) for n, v in zip(ALLOWED, rng.uniform(0.1, 2.0, len(ALLOWED)), strict=True)}


def _parse_watched(text, kind: str = "value", allowed=ALLOWED):
    """Parse and evaluate ``text`` under the hook: the Expression or the AssumptionError, and
    the forbidden events seen (none, or the test fails)."""
    with Watched() as w:
        try:
            e = parse_expression(text, allowed, "the bound", kind=kind)
            out = e(_values())
            assert isinstance(out, bool if kind == "condition" else float)
        except AssumptionError as exc:
            e = exc
    assert w.events == [], w.events
    return e


# Warm up: whatever sympy or numpy load on their first use is loaded before any watch.
for _text in (
    "(1 - eta*mu_f)**2 + sqrt(L)*log(N, 2) - min(eta, 1/L) + floor(K/2)",
    "eta <= 1/L_f and 0 < K < N",
    "exp(-eta) + abs(mu) + ceiling(d) + max(1, 2)*pi",
):
    _e = parse_expression(_text, ALLOWED, "warm-up", kind="condition" if "<" in _text else "value")
    _ = _e(_values()), str(_e.sympy), _e.free_symbols
try:
    parse_expression("x.y", ALLOWED, "warm-up")
except AssumptionError:
    pass


# --- the grammar: what is accepted, and equal to sympy's value ------------------------------------
def test_what_a_paper_writes_is_read_and_valued_in_float64():
    v = _values()
    cases = {
        "(1 - eta*mu_f)**2": (1 - v["eta"] * v["mu_f"]) ** 2,
        "(1 - eta*mu_f)^2": (1 - v["eta"] * v["mu_f"]) ** 2,  # ^ is a power, as typed from a PDF
        "1 - eta*mu*K*p_min/2": 1 - v["eta"] * v["mu"] * v["K"] * v["p_min"] / 2,
        "sqrt(L/mu) * log(N, 2)": math.sqrt(v["L"] / v["mu"]) * math.log(v["N"], 2),
        "min(eta, 1/L) + Max(1, K)": min(v["eta"], 1 / v["L"]) + max(1, v["K"]),
        "-eta + +mu": -v["eta"] + v["mu"],
        "min(eta, sqrt(-eta))": math.nan,  # not real: NaN, never an error
        "1e-3 * D2": 1e-3 * v["D2"],
        "pi * d": math.pi * v["d"],
        "floor(K) + ceiling(N) + abs(-sigma) + exp(-eta)": math.floor(v["K"])
        + math.ceil(v["N"])
        + v["sigma"]
        + math.exp(-v["eta"]),
    }
    for text, want in cases.items():
        e = _parse_watched(text)
        assert isinstance(e, Expression), e
        assert e(v) == pytest.approx(want, rel=1e-15, nan_ok=True), text


ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(
    [
        *(ROOT / "fedtheory" / "bounds" / "papers").glob("*.toml"),
        *(ROOT / "docs" / "examples").glob("*.toml"),
    ]
)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_spec_is_read_by_the_parser(path):
    """The papers' bound files and the documented examples (their D2, zeta2, ^, sqrt): each
    expression parses and evaluates under the audit hook, and the spec loads."""
    d = tomllib.loads(path.read_text(encoding="utf-8"))
    allowed = (*ALLOWED, *([d["constant"]] if "constant" in d else []))
    conditions = d.get("condition", [])
    texts = [(d["bound"], "value", allowed)]
    texts += [
        (t, "condition", allowed)
        for t in ([conditions] if isinstance(conditions, str) else conditions)
    ]
    if isinstance(d.get("lr"), str):
        texts.append((d["lr"], "value", tuple(LR_CONSTANTS)))
    for text, kind, names in texts:
        assert isinstance(_parse_watched(text, kind, names), Expression), (path.name, text)
    assert load_spec(path).bound == d["bound"]  # outside the watch: an own algorithm's import


@pytest.mark.parametrize("text", ["D2", "rho", "c", "1*D2", "zeta2", "3", "0.5"])
def test_a_single_constant_is_a_bound(text):
    """A bound that is one constant (``D2``, ``rho``, ``1*D2``) is a value, not a relation
    (sympy's Symbol is a Boolean, which the old check took for a relation)."""
    e = parse_expression(text, (*ALLOWED, "c"), "the bound")
    assert e.kind == "value" and e.names <= {"D2", "rho", "c", "zeta2"}
    spec = BoundSpec(
        algorithm="fedavg",
        lr="1/L_f",
        quantity="stationary_mse",
        bound=text,
        constant="c" if text == "c" else None,
        clients=(4,),
    )
    assert spec.bound_expr.text == text


def test_a_single_constant_bound_is_checked_end_to_end():
    spec = {
        "algorithm": "fedavg",
        "clients": 4,
        "local_steps": 2,
        "lr": "1/(2*L)",
        "quantity": "stationary_mse",
        "bound": "D2",
        "noise": 0.1,
        "class": {"dim": 2, "L": 4.0, "mu": 1.0},
    }
    res = check(spec, search=6, refine=False)
    assert res.worst is not None and all(e.stated == e.constants["D2"] for e in res.instances)


def test_conditions_are_comparisons_joined_by_and():
    v = {"eta": 0.1, "L_f": 4.0, "K": 2.0, "N": 8.0}
    for text, want in [
        ("eta <= 1/L_f", True),
        ("eta <= 1/L_f and K >= 3", False),
        ("0 < eta < 1/L_f < K", True),
        ("eta == 0.1", True),
        ("eta > 1", False),
        ("eta <= sigma", False),
    ]:  # (sigma missing: NaN, not met)
        e = parse_expression(text, ALLOWED, "the condition", kind="condition")
        assert e(v) is want, text
    for text in ["eta", "1", "eta + 1", "sqrt(eta)"]:
        with pytest.raises(AssumptionError, match="must be an inequality"):
            parse_expression(text, ALLOWED, "the condition", kind="condition")


_NAMES = st.sampled_from(["eta", "K", "N", "mu", "L", "L_f", "mu_f", "D2", "p_min", "sigma"])
_NUMS = st.one_of(st.integers(1, 50).map(str), st.floats(0.01, 20).map(lambda x: f"{x:.6g}"))


@st.composite
def _valid(draw, depth: int = 0) -> str:
    if depth > 3 or draw(st.integers(0, 2)) == 0:
        return draw(st.one_of(_NAMES, _NUMS))
    kind = draw(st.integers(0, 4))
    a = draw(_valid(depth + 1))
    if kind == 0:
        op = draw(st.sampled_from(["+", "-", "*", "/"]))
        return f"({a} {op} {draw(_valid(depth + 1))})"
    if kind == 1:
        return f"({a})**{draw(st.integers(0, 4))}"
    if kind == 2:
        return f"-({a})"
    if kind == 3:
        f = draw(st.sampled_from(["sqrt", "exp", "abs", "log"]))
        return f"{f}({a})"
    return f"min({a}, {draw(_valid(depth + 1))})"


@given(_valid())
@settings(max_examples=150, deadline=None)
def test_the_float64_value_is_sympys_value_of_the_same_tree(text):
    """The evaluator and the sympy tree are built from one walk: they agree (to float64 rounding;
    NaN where sympy's value is not real, e.g. sqrt or log of a negative number)."""
    e = _parse_watched(text)
    assert isinstance(e, Expression)
    assert e.names <= set(ALLOWED)
    v = _values(1)
    with np.errstate(all="ignore"):
        got = e(v)
    try:
        values = {sympy.Symbol(n, real=True): sympy.Float(x, 30) for n, x in v.items()}
        exact = complex(e.sympy.xreplace(values).doit().evalf(30))
    except (TypeError, ValueError):  # sympy cannot order a complex or infinite value (zoo)
        assume(False)  # no reference; min(eta, sqrt(-eta)) is NaN: a named test says so
        return
    if math.isfinite(got) and abs(exact) < 1e300:
        assert exact.imag == 0 and got == pytest.approx(exact.real, rel=1e-9, abs=1e-12)
    elif not math.isnan(got):  # inf: an overflow of float64
        assert abs(exact) > 1e300 or exact != exact


# --- everything else is refused naming it -------------------------------------------------------
@pytest.mark.parametrize(
    "text, message",
    [
        ("η*L", "character 'η' (U+03B7, GREEK SMALL LETTER ETA) at position 0"),
        ("ｅｔａ", "U+FF45, FULLWIDTH LATIN SMALL LETTER E"),
        ("eta\x00", "U+0000"),
        ("e", "unknown symbol(s) e;"),
        ("e1", "unknown symbol(s) e1;"),
        ("1 - eta*lambda_min", "unknown symbol(s) lambda_min"),
        ("sqrt", "uses the function sqrt as a value"),
        ("log", "uses the function log as a value"),
        ("eta.subs(eta, 1)", "attribute access"),
        ("eta[0]", "a subscript"),
        ("getattr(eta, 'subs')(1)", "is not a function's bare name"),
        ("sqrt(2)(3)", "calls 'sqrt(2)', which is not a function's bare name"),
        ("(lambda: 1)()", "a lambda"),
        ("[sqrt][0](2)", "a subscript"),
        ("sqrt(x=1)", "a keyword argument"),
        ("sqrt(*K)", "a starred argument"),
        ("lambda: 1", "a lambda"),
        ("'eta'", "the str 'eta'"),
        ("b'eta'", "the bytes"),
        ("[k for k in K]", "a comprehension"),
        ("(eta, K)", "a tuple"),
        ("eta if K else mu", "an if-else"),
        ("eta // 2", "the operator //"),
        ("eta % 2", "the operator %"),
        ("eta or mu", "'or'"),
        ("not eta", "not"),
        ("True", "the bool True"),
        ("1j", "the complex 1j"),
        ("1e999", "beyond float64"),
        ("12345678901234567890123", "more than 20 digits"),
        ("print(eta)", "calls print, which is not one of the functions"),
        ("__import__('os')", "calls __import__"),
        ("sqrt(1, 2)", "calls sqrt with 2 arguments"),
        ("min()", "calls min with 0 arguments"),
        ("eta <= 1", "comparison where a value is expected"),
        ("10**10**10", "exponent 10 ** 10 = 1e+10"),
        ("9**9**9**9", "exponent 9 ** 9"),
        ("floor(10**10**8)", "exponent 10 ** 8"),
        ("2**2**2**2**2**2", "exponent 2 ** 2 ** 2 ** 2"),
        ("eta +", "is not an expression"),
        ("", "is empty"),
        ("+".join(["eta"] * 100000), f"more than the {MAX_LENGTH}"),
        ("*".join(["eta"] * 3000), f"more than the {MAX_LENGTH}"),
        ("(" * 3000 + "eta" + ")" * 3000, f"more than the {MAX_LENGTH}"),
        ("(" * 150 + "eta" + ")" * 150, f"nests parentheses 150 deep, more than the {MAX_DEPTH}"),
        ("-" * 500 + "eta", f"nested more than {MAX_DEPTH} deep"),
        ("+".join(["eta"] * 300), f"nested more than {MAX_DEPTH} deep"),
    ],
)
def test_everything_outside_the_grammar_is_one_typed_error_naming_it(text, message):
    err = _parse_watched(text)
    assert isinstance(err, AssumptionError)
    assert message in str(err) and "\n" not in str(err)


def test_the_exponent_limit_is_on_numbers_only():
    assert isinstance(_parse_watched(f"2**{MAX_EXPONENT}"), Expression)
    assert isinstance(_parse_watched(f"2**{MAX_EXPONENT + 1}"), AssumptionError)
    e = _parse_watched("(1 - eta*mu)**(K*N)")  # an exponent of names is evaluated in float64
    assert isinstance(e, Expression)
    huge = parse_expression("10**(K*1000)", ALLOWED, "the bound")
    assert huge({"K": 1.0}) == math.inf  # an overflow is inf, never a huge integer


# --- fuzz: random text and hostile Python ---------------------------------------------------------
@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_random_unicode_text_parses_or_is_refused_and_runs_nothing(text):
    for kind in ("value", "condition"):
        out = _parse_watched(text, kind)
        if isinstance(out, Expression):
            assert out.names <= set(ALLOWED)
            assert {str(s) for s in out.free_symbols} <= set(ALLOWED)


_ATOMS = st.sampled_from(
    [
        "eta",
        "K",
        "x",
        "os",
        "sys",
        "__import__",
        "__builtins__",
        "__class__",
        "exec",
        "eval",
        "open",
        "sympify",
        "S",
        "Symbol",
        "subs",
        "lambdify",
        "1",
        "2.5",
        "'touch PWNED'",
        "b'x'",
        "\"__import__('os').system('touch PWNED')\"",
        "None",
        "...",
        "1j",
    ]
)
_FULL_WIDTH = str.maketrans({c: chr(ord(c) + 0xFEE0) for c in "abcdefghijklmnopqrstuvwxyz"})


@st.composite
def _hostile(draw, depth: int = 0) -> str:
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(_ATOMS)
    a, b = draw(_hostile(depth + 1)), draw(_hostile(depth + 1))
    name = draw(
        st.sampled_from(
            [
                "subs",
                "system",
                "__class__",
                "__globals__",
                "evalf",
                "func",
                "__subclasses__",
                "replace",
                "xreplace",
                "atoms",
            ]
        )
    )
    form = draw(
        st.sampled_from(
            [
                "{a}.{n}",
                "{a}.{n}({b})",
                "{a}({b})",
                "{a}({n}={b})",
                "{a}[{b}]",
                "lambda: {a}",
                "lambda {n}: {a}",
                "({a}, {b})",
                "[{a} for {n} in {b}]",
                "{a} + {b}",
                "{a} ** {b}",
                "-{a}",
                "{a} < {b}",
                "{a} and {b}",
                "f({a}, *{b})",
                "{{{a}: {b}}}",
                "f'{{{a}}}'",
                "({n} := {a})",
                "{a} if {b} else {a}",
                '{a}.{n}("{b}")',
                "getattr({a}, '{n}')",
            ]
        )
    )
    text = form.format(a=a, b=b, n=name)
    if draw(st.integers(0, 4)) == 0:  # full-width letters, which Python folds into ASCII names
        text = text.translate(_FULL_WIDTH)
    return text


@given(_hostile())
@settings(max_examples=300, deadline=None)
def test_hostile_python_parses_or_is_refused_and_runs_nothing(text):
    for kind in ("value", "condition"):
        out = _parse_watched(text, kind)
        if isinstance(out, Expression):
            assert out.names <= set(ALLOWED)


def test_the_audit_hook_sees_what_the_old_parser_did():
    """The watch is not blind: sympy's parse_expr, which the spec used to call, fires ``exec``."""
    from sympy.parsing.sympy_parser import parse_expr  # noqa: PLC0415  (the old way, on purpose)

    with Watched() as w:
        parse_expr("eta + 1")
    assert any(event == "exec" for event, _ in w.events)


# --- the audit's exploit class, through each field, by the API and the command line ---------------
def _payloads(marker: Path) -> list[str]:
    cmd = f"touch {marker}"
    run = f"__import__('os').system('{cmd}')"
    return [
        f'eta.ｓｕｂｓ(eta, "{run}")',  # full-width letters: .subs once folded
        f'eta.subs(eta, "{run}")',
        f"ｅｔａ.subs('{run}')",
        f"Symbol('x').subs(\"{run}\")",
        f'sympify("{run}")',
        f'S("{run}")',
        run,
        f'eval("{run}")',
        f'exec("{run}")',
        f"(lambda: {run})()",
        f"getattr(eta, 'subs')(\"{run}\")",
        "eta.__class__.__mro__[-1].__subclasses__()",
        "open('/etc/passwd')",
        f'eta.ｅｖａｌｆ(subs={{eta: "{run}"}})',
    ]


BASE = {
    "algorithm": "fedavg",
    "clients": 3,
    "local_steps": 1,
    "lr": "1/L_f",
    "quantity": "mean_square_rate",
    "bound": "(1 - eta*mu_f)**2",
    "condition": "eta <= 1/L_f",
    "class": {"dim": 2, "L": 4.0, "mu": 1.0},
}
FIELDS = ("bound", "lr", "condition")


@pytest.mark.parametrize("field", FIELDS)
def test_the_exploit_class_through_each_field_by_the_api_runs_nothing(field, tmp_path):
    marker = tmp_path / "PWNED"
    for payload in _payloads(marker):
        with Watched() as w:
            with pytest.raises(FedTheoryError) as exc:
                check({**BASE, field: payload}, search=2, refine=False)
        assert w.events == [] and not marker.exists(), payload
        assert "\n" not in str(exc.value)


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize("field", FIELDS)
def test_the_exploit_class_through_each_field_by_the_cli_exits_2_and_runs_nothing(
    field, tmp_path, capsys
):
    marker = tmp_path / "PWNED"
    for k, payload in enumerate(_payloads(marker)):
        spec = {**BASE, field: payload}
        lines = [
            f"{key} = {_toml_string(v) if isinstance(v, str) else v}"
            for key, v in spec.items()
            if key != "class"
        ]
        lines += ["[class]", "dim = 2", "L = 4.0", "mu = 1.0"]
        path = tmp_path / f"spec{k}.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        code = main(
            ["bound", str(path), "--search", "2", "--seeds", "0", "--out-dir", str(tmp_path)]
        )
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (payload, err)
        assert not marker.exists(), payload
        assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".toml") == []


def test_the_functions_table_holds_no_string_taking_callable():
    """Every function an expression may call takes numbers: none of them parses a string."""
    for name, (build, _, _, numeric) in FUNCTIONS.items():
        assert build.__module__.startswith("sympy"), name
        with np.errstate(all="ignore"):
            assert np.isfinite(numeric(*([1.5] * (2 if name == "log" else 1)))), name


def test_lr_may_not_use_eta():
    assert "eta" not in LR_CONSTANTS
    with pytest.raises(AssumptionError, match="unknown symbol"):
        BoundSpec.from_dict({**BASE, "lr": "eta/2"})
