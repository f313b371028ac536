"""The fields of a trace_view.json event the step model reads, as typed msgspec structs.

Decoding materialises only these fields; `args` stays raw bytes until an event needs it (a
process name), so the rest of each event costs nothing.
"""

from __future__ import annotations

import msgspec


class TraceEvent(msgspec.Struct, gc=False):
    # gc=False: millions of short-lived events, no reference cycles; skipping the cyclic GC
    # bookkeeping makes decoding ~35% faster
    ph: str = ""
    name: str = ""
    pid: int | str = 0
    ts: str | float = 0.0
    dur: float | str = 0.0
    cat: str = ""
    id: int | str = 0
    args: msgspec.Raw = msgspec.Raw(b"null")


class ObjectTrace(msgspec.Struct):
    traceEvents: list[TraceEvent] = []


ARRAY_DECODER = msgspec.json.Decoder(list[TraceEvent])
OBJECT_DECODER = msgspec.json.Decoder(ObjectTrace)
ARGS_DECODER = msgspec.json.Decoder(dict[str, object])
