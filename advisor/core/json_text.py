"""Indented JSON text for the machine-readable outputs, fast at any size.

Python's json module encodes with its pure-Python encoder as soon as `indent` is given: about a
second for the 7 MB of facts of a long profile (one fact per rank and per step). Without
`indent` it encodes in C; msgspec then re-indents that compact text, copying every token as it
is, so the result is json.dumps(indent=2)'s byte for byte (Python's float repr and escapes,
non-ASCII kept), checked by the tests on every example's facts. A NaN, which json writes as the
non-JSON `NaN`, is refused by the re-indenter: such a payload is indented by json as before.
"""

from __future__ import annotations

import json
from typing import Any

# below this size the pure-Python indenter costs less than importing msgspec (~5 ms), and
# `check` and `--help` never import it
_LARGE = 256 * 1024


def indented_json(payload: Any) -> str:
    """`json.dumps(payload, indent=2, ensure_ascii=False)`, computed in C where it pays."""
    compact = json.dumps(payload, ensure_ascii=False)
    if len(compact) < _LARGE:
        return json.dumps(payload, indent=2, ensure_ascii=False)
    import msgspec

    try:
        return msgspec.json.format(compact, indent=2)
    except msgspec.DecodeError:
        return json.dumps(payload, indent=2, ensure_ascii=False)
