"""One name for one idea across the package: a result object's dictionary is ``to_dict``
(``as_dict`` only as the deprecated alias :class:`fedtheory.io.renamed`)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import fedtheory
from fedtheory.analysis.pep import Sizes

PACKAGE = Path(fedtheory.__file__).parent


def test_no_class_defines_as_dict_of_its_own():
    own = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                own += [
                    f"{path.relative_to(PACKAGE)}:{f.lineno} {node.name}.as_dict"
                    for f in node.body
                    if isinstance(f, ast.FunctionDef) and f.name == "as_dict"
                ]
    assert own == []


def test_the_alias_warns_and_returns_to_dict():
    s = Sizes(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert s.as_dict() == s.to_dict() == {"gram": 3, "constraints": 4}
    assert [w.category for w in caught] == [DeprecationWarning]
