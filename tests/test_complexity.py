"""Every function and method outside the renderers and the command line stays at cyclomatic
complexity C or better (radon's grades: a block of D, 21 or more paths, is split up)."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_rank, cc_visit

PACKAGE = Path(__file__).resolve().parents[1] / "advisor"
EXEMPT = ("render", "cli")  # output formatting and option plumbing: long but flat


def test_no_block_worse_than_c_outside_render_and_cli() -> None:
    worse = []
    files = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in EXEMPT]
    assert len(files) > 50
    for path in files:
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if cc_rank(block.complexity) not in "ABC":
                worse.append(
                    f"{path.relative_to(PACKAGE)}:{block.lineno} {block.name} {block.complexity}"
                )
    assert worse == [], worse
