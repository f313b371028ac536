"""The release a repository's files are written for: `--target product@version`, else read
from the repository (MindSpeed-LLM's setup.py, MindFormers' package version). Policies whose
claim depends on the release name it in `targets` (`mindspeed-llm<26`); a product whose
release is unknown is taken as its newest (master)."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.model import DataError

Version = tuple[int, ...]
Target = dict[str, Version]  # product -> version
_VERSION = re.compile(r"__version__\s*=\s*['\"]([0-9][0-9.]*)")
# product -> (the file whose __version__ is its release, a text that file holds only in the
# product's own repository)
_MARKERS = {
    "mindspeed-llm": ("setup.py", "__package_name__ = 'mindspeed_llm'"),
    "mindformers": ("mindformers/__init__.py", "__version__"),
}
_CONSTRAINT = re.compile(r"^([a-z-]+)(==|>=|<=|<|>)([0-9][0-9.]*)$")


def version(text: str) -> Version:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def parse_target(text: str) -> tuple[str, Version]:
    """`mindspeed-llm@2.2.0` -> ("mindspeed-llm", (2, 2, 0)); DataError when malformed."""
    product, at, release = text.partition("@")
    if not at or product not in _MARKERS or not re.fullmatch(r"[0-9]+(\.[0-9]+)*", release):
        raise DataError(
            f"--target {text!r}: expected PRODUCT@VERSION with PRODUCT one of {', '.join(_MARKERS)}",
        )
    return product, version(release)


def repository_target(root: Path) -> Target:
    """The releases a repository's own files say it is (nothing when it says none)."""
    found: Target = {}
    for product, (version_file, marker) in _MARKERS.items():
        try:
            text = (root / version_file).read_text(encoding="utf-8", errors="replace")[:20000]
        except OSError:
            continue
        m = _VERSION.search(text)
        if m and marker in text:
            found[product] = version(m.group(1))
    return found


def holds(constraints: tuple[str, ...], target: Target) -> bool:
    """Whether a rule's `targets` constraints hold for the target (an unknown release: the
    newest)."""
    for constraint in constraints:
        m = _CONSTRAINT.match(constraint)
        if m is None:
            continue
        product, op, bound = m.group(1), m.group(2), version(m.group(3))
        have = target.get(product)
        if have is None:
            if op in ("<", "<=", "=="):
                return False  # the newest release is past any bound written
            continue
        ok = {
            "==": have == bound,
            ">=": have >= bound,
            "<=": have <= bound,
            "<": have < bound,
            ">": have > bound,
        }[op]
        if not ok:
            return False
    return True
