"""Every Markdown file that a message, docstring, notebook or document cites is in the
repository (a message that cites a missing document leaves the reader nowhere)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITED = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.md)\b")
SOURCES = [
    *(ROOT / "fedtheory").rglob("*.py"),
    *(ROOT / "fedtheory").rglob("*.toml"),
    *(ROOT / "notebooks").glob("*.py"),
    *(ROOT / "notebooks").glob("*.ipynb"),
    *(ROOT / "docs").glob("*.md"),
    ROOT / "README.md",
]


def _resolves(name: str, cited_in: Path) -> bool:
    return any((where / name).is_file() for where in (ROOT, ROOT / "docs", cited_in.parent))


def test_the_pattern_finds_citations():
    found = CITED.findall("see docs/stated-bounds.md (reference-values.md), not x.mdx or a/b.md")
    assert found == ["docs/stated-bounds.md", "reference-values.md", "a/b.md"]
    assert not _resolves("no-such-file.md", ROOT / "README.md")


def test_every_cited_markdown_file_exists():
    missing = sorted(
        f"{src.relative_to(ROOT)} cites {name}"
        for src in SOURCES
        for name in set(CITED.findall(src.read_text(encoding="utf-8")))
        if not _resolves(name, src)
    )
    assert not missing, "\n".join(missing)
