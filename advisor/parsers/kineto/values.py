"""Judging a PyTorch trace event's values: numbers, its place on the timeline, kernel names,
and plain-JSON events turned into the typed struct the extractor reads."""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from advisor.parsers.bounds import MAX_DURATION_US
from advisor.parsers.kineto.columns import NO_CORRELATION
from advisor.parsers.kineto.stream import ARG_FIELDS, UNSET, KinetoArgs, KinetoEvent

# a profiling session lasts minutes: an event a day away from the others is corruption
MAX_SPAN_US = 86_400e6
_COLLECTIVE_PREFIX = re.compile(r"^(nccl|rccl)(Dev)?Kernel_")


@functools.lru_cache(maxsize=65536)
def short_name(kernel: str) -> str:
    """`void at::native::vectorized_elementwise_kernel<4, ...>(...)` -> the kernel's own name."""
    text = kernel.removeprefix("void ").replace("(anonymous namespace)::", "").strip()
    cut = min((i for i in (text.find("<"), text.find("(")) if i > 0), default=len(text))
    return text[:cut].strip() or kernel[:60]


def collective_name(kernel: str) -> str:
    """`ncclDevKernel_AllReduce_Sum_f32_RING_LL` -> `AllReduce_Sum_f32_RING_LL` (for its kind)."""
    return _COLLECTIVE_PREFIX.sub("", kernel)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def timeline_span(ts: object, dur: object, center: float) -> tuple[float, float] | None:
    """(start, end) in microseconds, or None when the event cannot be placed on the timeline:
    not a number, a negative or over-long duration, a timestamp far outside the trace."""
    start = (
        ts if ts.__class__ is float and math.isfinite(ts) else _number(None if ts is UNSET else ts)
    )
    duration = dur if dur.__class__ is float else 0.0 if dur is UNSET else _number(dur)
    if start is None or duration is None or not 0.0 <= duration <= MAX_DURATION_US:
        return None
    if abs(start - center) > MAX_SPAN_US:
        return None
    return start, start + duration


def center_of(events: list[Any]) -> float:
    """The median timestamp of a sample of the events (the first block's, when the trace is
    read in blocks): every real event lies near it."""
    sample = [
        t
        for e in events[:: max(1, len(events) // 1000)]
        if isinstance(e, dict | KinetoEvent) and (t := _number(e.get("ts"))) is not None
    ]
    sample.sort()
    return sample[len(sample) // 2] if sample else 0.0


def typed_event(event: dict[str, Any]) -> KinetoEvent:
    """A plain-JSON event (from a block the typed decoder refused) as the typed struct."""
    raw_args = event.get("args")
    args = None
    if isinstance(raw_args, dict):
        # every argument the typed decoder keeps (a copy's bytes, a memory sample's totals...)
        args = KinetoArgs(
            **{
                field_name: raw_args[key]
                for key, field_name in ARG_FIELDS.items()
                if key in raw_args
            }
        )
    values = {k: event[k] for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur") if k in event}
    return KinetoEvent(**values, args=args)


def process_group(args: KinetoArgs, key: str) -> tuple[str, list[int]] | None:
    """A collective's process group from its arguments: (description, ranks); None when they
    name no rank."""
    raw_ranks = "" if args.group_ranks is UNSET else args.group_ranks
    ranks = [int(r) for r in re.findall(r"-?\d+", str(raw_ranks))]
    if not ranks:
        return None
    description = args.group_description
    return str(key if description is UNSET or not description else description), ranks


# correlation ids that are not small non-negative integers are numbered from here
INTERNED_CORRELATION = 1 << 62


def interned_correlation(value: Any, odd: dict[str, int]) -> int:
    """A correlation id as a 64-bit key: small non-negative integers as they are, other
    integers and strings numbered apart in `odd` (5 and "5" stay different ids)."""
    if value.__class__ is int and 0 <= value < INTERNED_CORRELATION:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | str):
        return NO_CORRELATION
    text = f"{type(value).__name__}:{value}"
    known = odd.get(text)
    if known is None:
        known = odd[text] = INTERNED_CORRELATION + len(odd)
    return known
