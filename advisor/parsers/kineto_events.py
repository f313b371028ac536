"""Decode a PyTorch profiler (Kineto) trace into the few event lists the step model needs.

Every generation since PyTorch 1.8 is read: event categories are mapped to their role by the
taxonomy (`kineto_categories`), so the legacy Operator / Runtime / Kernel / Memcpy / Memset
names and the current cpu_op / cuda_runtime / kernel / gpu_memcpy / gpu_memset ones give the
same lists. An event whose timestamp or duration is not a finite non-negative number is
dropped and counted; the caller reports how many.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.inputs.taxonomy import Taxonomy
from advisor.parsers.bounds import MAX_DURATION_US, BadValues
from advisor.parsers.kineto_stream import UNSET, KinetoArgs, KinetoEvent

COMPUTE, COMMUNICATION, MEMORY = "compute", "communication", "memory"
# a profiling session lasts minutes: an event a day away from the others is corruption
MAX_SPAN_US = 86_400e6
_COLLECTIVE_PREFIX = re.compile(r"^(nccl|rccl)(Dev)?Kernel_")


@dataclass(frozen=True)
class DeviceOp:
    """One kernel, memcpy or memset on the device (times in microseconds)."""

    start: float
    end: float
    name: str  # the kernel's short name
    kind: str  # compute | communication | memory
    stream: str
    correlation: int | str | None
    group: str | None  # the process group of a collective kernel
    # what a collective does, for its kind: the trace's "Collective name" argument (PyTorch
    # 2.x; ROCm's RCCL kernels are all ncclDevKernel_Generic) or the kernel name
    collective: str = ""


@dataclass
class HostWindow:
    number: int
    start: float
    end: float


@dataclass
class KinetoEvents:
    ops: list[DeviceOp] = field(default_factory=list)
    launches: dict[int | str, float] = field(default_factory=dict)  # correlation -> host time
    steps: list[HostWindow] = field(default_factory=list)
    sync: list[tuple[float, float]] = field(default_factory=list)
    malloc: list[tuple[float, float]] = field(default_factory=list)
    free: list[float] = field(default_factory=list)
    loader: list[tuple[float, float]] = field(default_factory=list)
    events: int = 0
    dropped: int = 0
    # group key -> (description, ranks) learnt from collective kernels' arguments
    kernel_groups: dict[str, tuple[str, list[int]]] = field(default_factory=dict)


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


def _times(event: Any, center: float) -> tuple[float, float] | None:
    """(start, end) in microseconds, or None when the event cannot be placed on the timeline:
    not a number, a negative or over-long duration, a timestamp far outside the trace."""
    if event.__class__ is KinetoEvent:
        ts, dur = event.ts, event.dur
        start = ts if ts.__class__ is float else _number(None if ts is UNSET else ts)
        duration = dur if dur.__class__ is float else 0.0 if dur is UNSET else _number(dur)
    else:
        start = _number(event.get("ts"))
        duration = _number(event.get("dur", 0.0))
    if start is None or duration is None or not 0.0 <= duration <= MAX_DURATION_US:
        return None
    if abs(start - center) > MAX_SPAN_US:
        return None
    return start, start + duration


def _center(events: list[Any]) -> float:
    """The median timestamp of a sample of the events (the first block's, when the trace is
    read in blocks): every real event lies near it."""
    sample = [
        t
        for e in events[:: max(1, len(events) // 1000)]
        if isinstance(e, dict | KinetoEvent) and (t := _number(e.get("ts"))) is not None
    ]
    sample.sort()
    return sample[len(sample) // 2] if sample else 0.0


def extract(
    blocks: Iterable[list[Any]], taxonomy: Taxonomy, path: Path, bad: BadValues | None = None
) -> KinetoEvents:
    """The events the facts need, from the trace's event blocks (kineto_stream)."""
    bad = bad or BadValues()
    out = KinetoEvents()
    roles = taxonomy.kineto_roles
    center: float | None = None
    index = -1
    for block in blocks:
        if center is None:
            center = _center(block)
        for event in block:
            index += 1
            # the typed events of a block read by attribute; odd ones (plain JSON) by .get
            if event.__class__ is KinetoEvent:
                if event.ph != "X":
                    continue
                cat = event.cat
            elif isinstance(event, dict):
                if event.get("ph") != "X":
                    continue
                cat = event.get("cat")
            else:
                continue
            out.events += 1
            role = roles.get(cat if cat.__class__ is str else str(cat))
            if role is not None:
                _take(out, event, role, index, center, taxonomy, path, bad)
    out.ops.sort(key=lambda op: (op.start, op.end))
    out.steps = _distinct_steps(out.steps)
    return out


def _take(
    out: KinetoEvents,
    event: Any,
    role: str,
    index: int,
    center: float,
    taxonomy: Taxonomy,
    path: Path,
    bad: BadValues,
) -> None:
    """One event of a known role into what the facts need (kernels, launches, host calls,
    step markers)."""
    times = _times(event, center)
    if times is None:
        name = event.get("name")
        bad.reject(
            path,
            f"event #{index} ({str(name)[:60]!r})",
            f"ts={event.get('ts')!r}, dur={event.get('dur')!r}",
            "not a place on the timeline (finite, non-negative, within a day of the trace)",
        )
        out.dropped += 1
        return
    start, end = times
    typed = event.__class__ is KinetoEvent
    raw_name = event.name if typed else event.get("name", "")
    name = raw_name if raw_name.__class__ is str else "" if raw_name is UNSET else str(raw_name)
    if role == "annotation":
        m = taxonomy.step.fullmatch(name)
        if m:
            out.steps.append(HostWindow(int(m.group(1)), start, end))
        elif taxonomy.dataloader.fullmatch(name):
            out.loader.append((start, end))
    elif role in ("kernel", "memory"):
        comm_re = taxonomy.operator_classes["communication"]
        _add_device_op(out, event, _args(event), name, start, end, role, comm_re)
    elif role == "runtime":
        args = _args(event)
        correlation = args.correlation if args.__class__ is KinetoArgs else args.get("correlation")
        if isinstance(correlation, int | str) and not isinstance(correlation, bool):
            out.launches[correlation] = start
        if taxonomy.sync_calls.fullmatch(name):
            out.sync.append((start, end))
        elif taxonomy.malloc_calls.fullmatch(name):
            out.malloc.append((start, end))
        elif taxonomy.free_calls.fullmatch(name):
            out.free.append(start)
    elif role == "sync":
        out.sync.append((start, end))


_NO_ARGS = KinetoArgs()


def _args(event: Any) -> Any:
    """The event's args: a dict or the typed KinetoArgs (both have .get; no args: empty)."""
    if event.__class__ is KinetoEvent:
        return event.args if event.args is not None else _NO_ARGS
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _add_device_op(
    out: KinetoEvents,
    event: Any,
    args: Any,
    name: str,
    start: float,
    end: float,
    role: str,
    comm_re: re.Pattern[str],
) -> None:
    kernel = short_name(name) if role == "kernel" else name
    group = None
    collective = ""
    if role == "memory":
        kind = MEMORY
    elif _is_communication(comm_re, kernel):
        kind = COMMUNICATION
        named = args.get("Collective name")
        collective = str(named) if isinstance(named, str) and named else collective_name(kernel)
        key = args.get("Process Group Name")
        if key is not None:
            group = str(key)
            if group not in out.kernel_groups:
                ranks = [
                    int(r) for r in re.findall(r"-?\d+", str(args.get("Process Group Ranks", "")))
                ]
                if ranks:
                    description = str(args.get("Process Group Description") or group)
                    out.kernel_groups[group] = (description, ranks)
    else:
        kind = COMPUTE
    typed = args.__class__ is KinetoArgs
    correlation = args.correlation if typed else args.get("correlation")
    if not isinstance(correlation, int | str) or isinstance(correlation, bool):
        correlation = None
    if event.__class__ is KinetoEvent:
        pid = None if event.pid is UNSET else event.pid
        tid = None if event.tid is UNSET else event.tid
        stream = f"{pid}:{tid}"
    else:
        stream = f"{event.get('pid')}:{event.get('tid')}"
    out.ops.append(DeviceOp(start, end, kernel, kind, stream, correlation, group, collective))


@functools.lru_cache(maxsize=65536)
def _is_communication(pattern: re.Pattern[str], kernel: str) -> bool:
    return pattern.fullmatch(kernel) is not None


def _distinct_steps(windows: list[HostWindow]) -> list[HostWindow]:
    """One window per step number (nested or repeated markers: the widest), in time order."""
    best: dict[int, HostWindow] = {}
    for w in windows:
        known = best.get(w.number)
        if known is None or w.end - w.start > known.end - known.start:
            best[w.number] = w
    return sorted(best.values(), key=lambda w: w.start)
