"""docs/architecture.md is the reference for the structure: it must name every package and
module folder that exists, and every path it names must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "advisor"


def test_the_architecture_names_every_package() -> None:
    text = DOC.read_text(encoding="utf-8")
    packages = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("__init__.py")
        if p.parent != PACKAGE and "__pycache__" not in p.parts
    )
    packages = [str(Path(p).parent) for p in packages]
    assert packages, "no packages found"
    unnamed = [p for p in packages if f"{Path(p).name}/" not in text]
    assert unnamed == [], f"docs/architecture.md does not name: {unnamed}"


def test_every_module_the_architecture_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)`", text))
    assert named, "no module paths found in the document"
    missing = [
        n
        for n in sorted(named)
        if not (PACKAGE / n).is_file()
        and not (ROOT / n).is_file()
        and not any(PACKAGE.glob(f"*/{n}"))
    ]
    assert missing == [], f"named but absent: {missing}"
