"""What every experiment returns: a small result object (dataclass fields, numpydoc attributes),
with a short ``repr``, ``to_dict()`` (the JSON form the figures' sidecars keep) and
``to_json()``, never a nested dict a reader has to guess the keys of."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from fedtheory.io import dumps, jsonable

__all__ = ["ExperimentResult"]


def _plain(value: Any) -> Any:
    """Dataclasses (nested, in dicts and lists) as dicts of their fields, in field order."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class ExperimentResult:
    """Mixin of the experiments' result dataclasses (declared ``@dataclass(repr=False)``, so
    the short ``repr`` below is theirs)."""

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values (arrays as lists, non-finite numbers as None)."""
        return jsonable(_plain(self))

    def to_json(self) -> str:
        """The result as JSON text (the convention of :func:`fedtheory.io.dumps`)."""
        return dumps(self.to_dict())

    def _summary(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._summary()})"
