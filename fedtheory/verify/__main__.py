"""``python -m fedtheory.verify catalog [PATH]``: regenerate the claim catalog of docs/claims.md
(the part between its markers) from the registry's claims and their docstrings."""

from __future__ import annotations

import sys

from fedtheory.verify.report import write_catalog


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] != "catalog" or len(args) > 2:
        print("usage: python -m fedtheory.verify catalog [docs/claims.md]", file=sys.stderr)
        return 2
    path = write_catalog(args[1] if len(args) == 2 else "docs/claims.md")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
