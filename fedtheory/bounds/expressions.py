"""The expressions of a bound spec, parsed without evaluating any of their text.

A bound, a step size ``lr`` and a condition are text a reader types from a paper. They are read
by :func:`parse_expression`, which never hands the text to ``eval``, ``sympify`` or
``parse_expr`` (sympy's parser evaluates its input as Python, and a string-taking sympy method
reached from it evaluates that string with full built-ins):

1. the text is refused when it is longer than :data:`MAX_LENGTH`, holds a character outside
   printable ASCII (the character and its position are named: an expression of the constants
   needs none, and Python would fold full-width letters into ASCII names), or nests parentheses
   deeper than :data:`MAX_DEPTH`;
2. ``^`` becomes ``**`` (a power, as typed from a PDF) and :func:`ast.parse` reads the text in
   ``eval`` mode into a syntax tree: a tree, not code; nothing of it runs;
3. a walk of the tree admits only the grammar below and refuses anything else naming the
   construct (attribute access, subscripts, keyword arguments, lambdas, strings, starred
   arguments, comprehensions, ...), trees of more than :data:`MAX_NODES` nodes or
   :data:`MAX_DEPTH` levels, and integer literals of more than :data:`MAX_INT_DIGITS` digits;
4. the sympy tree is built from the walked nodes with ``evaluate=False`` (``10**10**10`` stays
   a tree of three integers), and a constant exponent above :data:`MAX_EXPONENT` in absolute
   value is refused;
5. numbers are computed by a float64 evaluator compiled from the same walked tree (NumPy
   scalars: an overflow is inf, an undefined value such as sqrt(-1) NaN), never by
   ``lambdify``.

Grammar (``value`` is a bound or a step size; ``condition`` a condition)::

    value      := number | name | value op value | (+|-) value | func(value, ...)
                  | (value)
    op         := + | - | * | / | ** | ^
    condition  := value cmp value [cmp value ...] [and condition]
    cmp        := < | <= | > | >= | ==

``number`` is a decimal integer or float literal (``3``, ``0.5``, ``1e-3``); ``name`` one of the
allowed names (the constants of :data:`~fedtheory.bounds.constants.CONSTANTS` and the spec's free
constant) or ``pi``; ``func`` one of :data:`FUNCTIONS`, called by its bare name with positional
arguments.
"""

from __future__ import annotations

import ast
import math
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from fedtheory.errors import AssumptionError

#: Longest expression accepted (characters); a bound typed from a paper has a few dozen.
MAX_LENGTH = 2000
#: Deepest nesting of parentheses and of the syntax tree.
MAX_DEPTH = 100
#: Most nodes of the syntax tree.
MAX_NODES = 1000
#: Most digits of an integer literal (larger numbers are written as floats: 1e20).
MAX_INT_DIGITS = 20
#: Largest absolute value of an exponent that holds no name (``10**10**10`` is refused).
MAX_EXPONENT = 10_000

#: The functions an expression may call, by name: (sympy builder, least and most arguments,
#: float64 evaluator).
FUNCTIONS: dict[str, tuple[Callable, int, int | None, Callable]] = {
    "sqrt": (sympy.sqrt, 1, 1, np.sqrt),
    "log": (sympy.log, 1, 2, lambda x, b=None: np.log(x) if b is None else np.log(x) / np.log(b)),
    "exp": (sympy.exp, 1, 1, np.exp),
    "min": (sympy.Min, 1, None, lambda *a: np.min(np.array(a))),
    "max": (sympy.Max, 1, None, lambda *a: np.max(np.array(a))),
    "Min": (sympy.Min, 1, None, lambda *a: np.min(np.array(a))),
    "Max": (sympy.Max, 1, None, lambda *a: np.max(np.array(a))),
    "abs": (sympy.Abs, 1, 1, np.abs),
    "Abs": (sympy.Abs, 1, 1, np.abs),
    "ceiling": (sympy.ceiling, 1, 1, np.ceil),
    "floor": (sympy.floor, 1, 1, np.floor),
}
#: Named numbers an expression may use besides the allowed names.
NUMBERS: dict[str, tuple[Any, float]] = {"pi": (sympy.pi, math.pi)}

_BINARY = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
}
_COMPARE = {
    ast.Lt: (sympy.Lt, np.less),
    ast.LtE: (sympy.Le, np.less_equal),
    ast.Gt: (sympy.Gt, np.greater),
    ast.GtE: (sympy.Ge, np.greater_equal),
    ast.Eq: (sympy.Eq, np.equal),
}
#: What a refused construct is called in a message.
_CONSTRUCTS = {
    ast.Attribute: "attribute access (.name)",
    ast.Subscript: "a subscript ([...])",
    ast.Slice: "a slice",
    ast.Lambda: "a lambda",
    ast.Starred: "a starred argument (*x)",
    ast.keyword: "a keyword argument (name=...)",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.List: "a list ([...])",
    ast.Tuple: "a tuple (a, b)",
    ast.Set: "a set ({...})",
    ast.Dict: "a dict ({...})",
    ast.IfExp: "an if-else expression",
    ast.NamedExpr: "an assignment (:=)",
    ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Not: "not",
    ast.Invert: "the operator ~",
    ast.Or: "'or' (conditions are joined by 'and')",
    ast.And: "'and' (which joins conditions, not values)",
    ast.FloorDiv: "the operator //",
    ast.Mod: "the operator %",
    ast.MatMult: "the operator @",
    ast.BitAnd: "the operator & (join conditions with 'and')",
    ast.BitOr: "the operator |",
    ast.LShift: "the operator <<",
    ast.RShift: "the operator >>",
    ast.NotEq: "the comparison !=",
    ast.Is: "the comparison 'is'",
    ast.IsNot: "the comparison 'is not'",
    ast.In: "the comparison 'in'",
    ast.NotIn: "the comparison 'not in'",
}


@dataclass(frozen=True)
class Expression:
    """A parsed expression: its text, the sympy tree and a float64 evaluator.

    Attributes
    ----------
    text : str
        The text as given (stripped).
    kind : {"value", "condition"}
    sympy : sympy.Basic
        The tree, built with ``evaluate=False`` (a relation, or an ``And`` of relations, for a
        condition).
    names : frozenset of str
        The allowed names it uses.
    """

    text: str
    kind: str
    sympy: Any
    names: frozenset
    _evaluate: Callable[[Mapping[str, float]], Any] = field(repr=False, compare=False)

    @property
    def free_symbols(self) -> set:
        """The sympy symbols of :attr:`sympy` (the names it uses)."""
        return set(self.sympy.free_symbols)

    def __call__(self, values: Mapping[str, float]) -> Any:
        """The value (a float, inf on overflow, NaN where undefined) or, for a condition,
        whether it holds (False where a side is NaN), with ``values`` for the names (a name
        missing from ``values`` is NaN)."""
        with np.errstate(all="ignore"):
            out = self._evaluate(values)
        return bool(out) if self.kind == "condition" else float(out)


def _refuse(what: str, src: str, why: str) -> AssumptionError:
    return AssumptionError(f"{what} {src!r} {why}")


def _check_text(src: str, what: str) -> None:
    """Length, characters and parenthesis depth, before the parser sees the text."""
    if len(src) > MAX_LENGTH:
        raise AssumptionError(
            f"{what} is {len(src)} characters long, more than the {MAX_LENGTH} an expression "
            "may have"
        )
    for i, ch in enumerate(src):
        if not (" " <= ch <= "~" or ch in "\t\n\r"):
            name = unicodedata.name(ch, "a control character")
            raise AssumptionError(
                f"{what} {src[:60]!r} has the character {ch!r} (U+{ord(ch):04X}, {name}) at "
                f"position {i}: expressions are ASCII (the constants' ASCII names, digits, "
                "+ - * / ^ ** ( ) , < <= > >= == and)"
            )
    depth = deepest = 0
    for ch in src:
        depth += (ch == "(") - (ch == ")")
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise AssumptionError(
            f"{what} nests parentheses {deepest} deep, more than the {MAX_DEPTH} an expression may"
        )


def _check_tree(tree: ast.AST, src: str, what: str) -> None:
    """Node count and depth of the tree, without recursion."""
    stack, nodes = [(tree, 1)], 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise _refuse(what, src[:60], f"has more than {MAX_NODES} terms and operators")
        if depth > MAX_DEPTH:
            raise _refuse(what, src[:60], f"is nested more than {MAX_DEPTH} deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


class _Builder:
    """One walk of a checked tree: the sympy tree and the float64 evaluator of every node."""

    def __init__(self, src: str, what: str, allowed: tuple[str, ...]) -> None:
        self.src, self.what = src, what
        self.symbols = {n: sympy.Symbol(n, real=True) for n in allowed}
        self.used: set[str] = set()
        self.unknown: list[str] = []

    def refuse(self, why: str) -> AssumptionError:
        return _refuse(self.what, self.src, why)

    def construct(self, node: ast.AST) -> AssumptionError:
        name = _CONSTRUCTS.get(type(node))
        if name is None and isinstance(node, ast.Constant):
            name = f"the {type(node.value).__name__} {node.value!r}"
        return self.refuse(
            f"uses {name or type(node).__name__}, which an expression may not (allowed: numbers, "
            "the constants, + - * / ** ^, calls of " + ", ".join(FUNCTIONS) + ")"
        )

    # -- values ---------------------------------------------------------------------------
    def value(self, node: ast.AST) -> tuple[Any, Callable]:
        if isinstance(node, ast.Constant):
            return self.number(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            s, f = self.value(node.operand)
            if isinstance(node.op, ast.UAdd):
                return s, f
            return sympy.Mul(sympy.S.NegativeOne, s, evaluate=False), lambda v: np.negative(f(v))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Compare):
            raise self.refuse("has a comparison where a value is expected (it must be a value)")
        if isinstance(node, ast.BoolOp):
            raise self.construct(node.op)
        raise self.construct(node)

    def number(self, node: ast.Constant) -> tuple[Any, Callable]:
        v = node.value
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.construct(node)
        if isinstance(v, int):
            if len(str(abs(v))) > MAX_INT_DIGITS:
                raise self.refuse(
                    f"has an integer of more than {MAX_INT_DIGITS} digits (write it as a float, "
                    "e.g. 1e30)"
                )
            s, x = sympy.Integer(v), np.float64(v)
        else:
            if not math.isfinite(v):
                raise self.refuse("has a number beyond float64 (it reads as inf)")
            s, x = sympy.Float(v), np.float64(v)
        return s, lambda _v: x

    def name(self, node: ast.Name) -> tuple[Any, Callable]:
        n = node.id
        if n in self.symbols:
            self.used.add(n)
            return self.symbols[n], lambda v: np.float64(v.get(n, math.nan))
        if n in NUMBERS:
            s, x = NUMBERS[n]
            return s, lambda _v: np.float64(x)
        if n in FUNCTIONS:
            raise self.refuse(f"uses the function {n} as a value: call it, e.g. {n}(x)")
        self.unknown.append(n)
        return sympy.Symbol(n), lambda v: np.float64(math.nan)

    def binary(self, node: ast.BinOp) -> tuple[Any, Callable]:
        op = type(node.op)
        if op not in _BINARY:
            raise self.construct(node.op)
        (a, fa), (b, fb) = self.value(node.left), self.value(node.right)
        if op is ast.Pow and not self.names_in(node.right):
            with np.errstate(all="ignore"):
                e = float(fb({}))
            if not abs(e) <= MAX_EXPONENT:
                raise self.refuse(
                    f"has the exponent {ast.unparse(node.right)} = {e:.3g}, larger than the "
                    f"{MAX_EXPONENT} in absolute value an exponent of numbers may be"
                )
        if op is ast.Add:
            s = sympy.Add(a, b, evaluate=False)
        elif op is ast.Sub:
            s = sympy.Add(a, sympy.Mul(sympy.S.NegativeOne, b, evaluate=False), evaluate=False)
        elif op is ast.Mult:
            s = sympy.Mul(a, b, evaluate=False)
        elif op is ast.Div:
            s = sympy.Mul(a, sympy.Pow(b, sympy.S.NegativeOne, evaluate=False), evaluate=False)
        else:
            s = sympy.Pow(a, b, evaluate=False)
        ufunc = _BINARY[op]
        return s, lambda v: ufunc(fa(v), fb(v))

    @staticmethod
    def names_in(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id not in NUMBERS for n in ast.walk(node))

    def call(self, node: ast.Call) -> tuple[Any, Callable]:
        if type(node.func) in _CONSTRUCTS:  # x.subs(...), (lambda: ...)(), [f][0](...)
            raise self.construct(node.func)
        if not isinstance(node.func, ast.Name):  # getattr(x, "subs")(...), (1 + 2)(3)
            raise self.refuse(
                f"calls {ast.unparse(node.func)[:40]!r}, which is not a function's bare name "
                f"(the functions: {', '.join(FUNCTIONS)})"
            )
        name = node.func.id
        if name not in FUNCTIONS:
            raise self.refuse(
                f"calls {name}, which is not one of the functions {', '.join(FUNCTIONS)}"
            )
        if node.keywords:
            raise self.construct(node.keywords[0])
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.construct(a)
        build, least, most, numeric = FUNCTIONS[name]
        n = len(node.args)
        if n < least or (most is not None and n > most):
            want = f"{least}" if least == most else f"{least} to {most or 'any number of'}"
            raise self.refuse(f"calls {name} with {n} arguments; it takes {want}")
        parts = [self.value(a) for a in node.args]
        fs = [f for _, f in parts]
        return build(*(s for s, _ in parts), evaluate=False), lambda v: numeric(*(f(v) for f in fs))

    # -- conditions -----------------------------------------------------------------------
    def condition(self, node: ast.AST) -> tuple[Any, Callable]:
        if isinstance(node, ast.BoolOp):
            if not isinstance(node.op, ast.And):
                raise self.construct(node.op)
            parts = [self.condition(c) for c in node.values]
            fs = [f for _, f in parts]
            return sympy.And(*(s for s, _ in parts), evaluate=False), lambda v: all(
                bool(f(v)) for f in fs
            )
        if not isinstance(node, ast.Compare):
            raise self.refuse(
                "must be an inequality (a comparison such as eta <= 1/L_f, or "
                "several joined by and)"
            )
        sides = [self.value(node.left)] + [self.value(c) for c in node.comparators]
        rels, tests = [], []
        for k, op in enumerate(node.ops):
            if type(op) not in _COMPARE:
                raise self.construct(op)
            rel, ufunc = _COMPARE[type(op)]
            (a, fa), (b, fb) = sides[k], sides[k + 1]
            rels.append(rel(a, b, evaluate=False))
            tests.append(lambda v, u=ufunc, fa=fa, fb=fb: bool(u(fa(v), fb(v))))
        s = rels[0] if len(rels) == 1 else sympy.And(*rels, evaluate=False)
        return s, lambda v: all(t(v) for t in tests)


def parse_expression(
    text: Any, allowed: tuple[str, ...], what: str, *, kind: str = "value"
) -> Expression:
    """Parse ``text`` into an :class:`Expression` of the names ``allowed`` (module docstring:
    the grammar), evaluating none of it.

    Parameters
    ----------
    text : str or number
        The expression (a number stands for itself).
    allowed : tuple of str
        The names it may use (besides ``pi`` and the functions).
    what : str
        What it is, for messages ("the bound", "lr", "the condition").
    kind : {"value", "condition"}
        A value (no comparison in it), or a condition (comparisons, joined by ``and``).

    Raises
    ------
    AssumptionError
        Not a string or number, empty, too long or too deep, a character outside printable
        ASCII (named with its position), text Python's grammar does not read, a construct
        outside the grammar (named), an unknown name (listing the accepted ones), a call with
        the wrong number of arguments, an exponent of numbers beyond :data:`MAX_EXPONENT`.
    """
    if kind not in ("value", "condition"):
        raise AssumptionError(f"kind must be 'value' or 'condition', got {kind!r}")
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise AssumptionError(f"{what} must be a string (or a number), got {text!r}")
    src = (text if isinstance(text, str) else repr(text)).strip()
    if not src:
        raise AssumptionError(f"{what} is empty")
    _check_text(src, what)
    try:
        tree = ast.parse(src.replace("^", "**"), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        why = getattr(exc, "msg", None) or str(exc).splitlines()[0] or type(exc).__name__
        raise _refuse(what, src, f"is not an expression ({why})") from None
    _check_tree(tree, src, what)
    b = _Builder(src, what, tuple(allowed))
    s, f = b.condition(tree) if kind == "condition" else b.value(tree)
    if b.unknown:
        names = sorted(set(b.unknown))
        raise _refuse(
            what,
            src,
            f"uses unknown symbol(s) {', '.join(names)}; accepted: {', '.join(allowed)}, pi and "
            f"the functions {', '.join(FUNCTIONS)}",
        )
    return Expression(src, kind, s, frozenset(b.used), f)
