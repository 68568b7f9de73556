import ast
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, settings

from fedtheory.backend import gpu_available

os.environ.setdefault("FEDTHEORY_NO_PROGRESS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def modules_loaded_by():
    """``loaded(code, names)``: which of the top-level module ``names`` (or dotted names) a fresh
    interpreter has imported after running ``code`` (start-up cost and optional extras)."""

    def loaded(code: str, names: tuple[str, ...]) -> list[str]:
        probe = f"{code}\nimport sys\nprint(sorted(n for n in {names!r} if n in sys.modules))"
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        )
        return ast.literal_eval(out.stdout.strip().splitlines()[-1])

    return loaded


@pytest.fixture(autouse=True)
def _registry_put_back():
    """Every test leaves the algorithm registry as it found it: an algorithm a test registers
    (loading a spec that names ``docs/examples/fednova.py:fednova`` registers it) is not seen by
    the next test in the same process, whose own copy of the file under another module name
    would otherwise be refused as a second registration of the same name."""
    from fedtheory.algorithms import registry  # noqa: PLC0415  (only this fixture needs it)

    saved = dict(registry._REGISTRY), dict(registry._ALIASES)
    before = set(sys.modules)
    yield
    if registry._REGISTRY != saved[0] or registry._ALIASES != saved[1]:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved[0])
        registry._ALIASES.clear()
        registry._ALIASES.update(saved[1])
    for name in set(sys.modules) - before:
        if name.startswith("fedtheory_user_"):
            del sys.modules[name]


@pytest.fixture
def own_algorithms():
    """Load ``docs/examples/NAME.py`` algorithms (``load("fednova")`` -> (registry name, the
    file's module)); the registry and the user modules are put back afterwards, so algorithms
    registered by a test (and the examples) are seen by that test only."""
    from pathlib import Path  # noqa: PLC0415  (only this fixture needs them)

    from fedtheory.algorithms import registry  # noqa: PLC0415

    examples = Path(__file__).resolve().parents[1] / "docs" / "examples"
    saved = dict(registry._REGISTRY), dict(registry._ALIASES)
    before = set(sys.modules)

    def load(name: str, attr: str | None = None) -> tuple:
        found = registry.resolve_algorithm(f"{examples / name}.py:{attr or name}")
        return found.name, sys.modules[registry.info(found.name).module]

    load.examples = examples
    yield load
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved[0])
    registry._ALIASES.clear()
    registry._ALIASES.update(saved[1])
    for name in set(sys.modules) - before:
        if name.startswith("fedtheory_user_"):
            del sys.modules[name]
