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
