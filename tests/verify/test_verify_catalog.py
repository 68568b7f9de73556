"""docs/claims.md's catalog is generated from the registry, and every claim declares what the
issue's reading of the papers needs: a decision rule, a source, where it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedtheory.errors import FedTheoryError
from fedtheory.verify import all_claims, run
from fedtheory.verify.report import (
    CATALOG_BEGIN,
    CATALOG_END,
    catalog_markdown,
    replace_catalog,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "claims.md"


def test_docs_claims_md_is_the_registry_s_catalog():
    """Edit a claim's docstring, then run ``python -m fedtheory.verify catalog docs/claims.md``:
    the committed catalog must be what the registry generates."""
    text = DOC.read_text()
    assert replace_catalog(text, catalog_markdown()) == text, (
        "docs/claims.md is stale: python -m fedtheory.verify catalog docs/claims.md"
    )
    body = text[text.index(CATALOG_BEGIN) : text.index(CATALOG_END)]
    for c in all_claims():
        assert f"### {c.id} ({c.source})" in body


def test_the_catalog_markers_are_required():
    with pytest.raises(FedTheoryError, match="markers"):
        replace_catalog("# no markers here\n", "x")
    assert replace_catalog(f"a\n{CATALOG_BEGIN}\nold\n{CATALOG_END}\nb", "new\n") == (
        f"a\n{CATALOG_BEGIN}\n\nnew\n\n{CATALOG_END}\nb"
    )


def test_heavy_and_optional_claims_say_where_they_run():
    by_id = {c.id: c for c in all_claims()}
    for cid in ("N1", "N2", "N3", "N4"):
        assert by_id[cid].needs == ("nn",)
    for cid in ("N2", "N3", "N4", "A8", "A10", "A13"):
        assert by_id[cid].tier == "full"


@pytest.mark.parametrize("ids", ["G1,G5,P1,F1,C3", "A1"])
def test_every_row_carries_its_criterion_and_source(ids):
    for r in run(ids):
        assert r.source and r.criterion, r.id
        assert r.to_dict()["criterion"] and r.to_dict()["source"]
