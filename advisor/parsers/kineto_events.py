"""Decode a PyTorch profiler (Kineto) trace into the few event lists the step model needs.

Every generation since PyTorch 1.8 is read: event categories are mapped to their role by the
taxonomy (`kineto_categories`), so the legacy Operator / Runtime / Kernel / Memcpy / Memset
names and the current cpu_op / cuda_runtime / kernel / gpu_memcpy / gpu_memset ones give the
same lists. An event whose timestamp or duration is not a finite non-negative number is
dropped and counted; the caller reports how many.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.inputs import limits
from advisor.inputs.taxonomy import Taxonomy
from advisor.model import InputError
from advisor.parsers.bounds import MAX_DURATION_US, BadValues

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


def load(path: Path) -> dict[str, Any]:
    """The trace's top-level object (a bare event list is wrapped as traceEvents)."""
    try:
        raw = _read_limited(path)
        data = json.loads(raw)
    except OSError as exc:
        raise InputError(
            str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    except (EOFError, gzip.BadGzipFile) as exc:
        raise InputError(str(path), f"truncated or damaged gzip file ({exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        where = (
            f"at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            if isinstance(exc, json.JSONDecodeError)
            else f"({exc})"
        )
        raise InputError(str(path), f"invalid JSON {where}") from None
    except RecursionError:
        raise InputError(str(path), "JSON nested too deeply") from None
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise InputError(
            str(path),
            "expected a profile directory or a PyTorch profiler trace (this JSON has no traceEvents)",
        )
    return data


def _read_limited(path: Path) -> bytes:
    """The trace's bytes, decompressed when gzipped, refused beyond the size limit as soon as
    it is crossed (never after expanding a bomb)."""
    limit = limits.trace_max_bytes()
    if not path.name.endswith(".gz"):
        if path.stat().st_size > limit:
            raise InputError(str(path), _too_large(limit))
        return path.read_bytes()
    ratio_cap = max(64 * 1024**2, limits.gzip_max_ratio() * path.stat().st_size)
    chunks: list[bytes] = []
    total = 0
    with gzip.open(path, "rb") as handle:
        while chunk := handle.read(1 << 24):
            total += len(chunk)
            if total > limit:
                raise InputError(str(path), _too_large(limit))
            if total > ratio_cap:
                raise InputError(
                    str(path),
                    f"expands more than {limits.gzip_max_ratio()}x (ADVISOR_MAX_GZIP_RATIO): "
                    "a gzip bomb?",
                )
            chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> str:
    return (
        f"decodes to more than {limit:,} bytes (ADVISOR_MAX_TRACE_BYTES): a gzip bomb, or a "
        "trace to cut with a shorter profiler schedule"
    )


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


def _times(event: dict[str, Any], center: float) -> tuple[float, float] | None:
    """(start, end) in microseconds, or None when the event cannot be placed on the timeline:
    not a number, a negative or over-long duration, a timestamp far outside the trace."""
    start = _number(event.get("ts"))
    duration = _number(event.get("dur", 0.0))
    if start is None or duration is None or not 0.0 <= duration <= MAX_DURATION_US:
        return None
    if abs(start - center) > MAX_SPAN_US:
        return None
    return start, start + duration


def _center(events: list[Any]) -> float:
    """The median timestamp of a sample of the events: every real event lies near it."""
    sample = [
        t
        for e in events[:: max(1, len(events) // 1000)]
        if isinstance(e, dict) and (t := _number(e.get("ts"))) is not None
    ]
    sample.sort()
    return sample[len(sample) // 2] if sample else 0.0


def extract(
    data: dict[str, Any], taxonomy: Taxonomy, path: Path, bad: BadValues | None = None
) -> KinetoEvents:
    bad = bad or BadValues()
    out = KinetoEvents()
    roles = taxonomy.kineto_roles
    comm_re = taxonomy.operator_classes["communication"]
    step_re = taxonomy.step
    center = _center(data["traceEvents"])
    for index, event in enumerate(data["traceEvents"]):
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        out.events += 1
        role = roles.get(str(event.get("cat")))
        if role is None:
            continue
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
            continue
        start, end = times
        name = str(event.get("name", ""))
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        if role in ("kernel", "memory"):
            _add_device_op(out, event, args, name, start, end, role, comm_re)
        elif role == "runtime":
            correlation = args.get("correlation")
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
        else:  # annotation
            m = step_re.fullmatch(name)
            if m:
                out.steps.append(HostWindow(int(m.group(1)), start, end))
            elif taxonomy.dataloader.fullmatch(name):
                out.loader.append((start, end))
    out.ops.sort(key=lambda op: (op.start, op.end))
    out.steps = _distinct_steps(out.steps)
    return out


def _add_device_op(
    out: KinetoEvents,
    event: dict[str, Any],
    args: dict[str, Any],
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
    elif comm_re.fullmatch(kernel):
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
    correlation = args.get("correlation")
    if not isinstance(correlation, int | str) or isinstance(correlation, bool):
        correlation = None
    stream = f"{event.get('pid')}:{event.get('tid')}"
    out.ops.append(DeviceOp(start, end, kernel, kind, stream, correlation, group, collective))


def _distinct_steps(windows: list[HostWindow]) -> list[HostWindow]:
    """One window per step number (nested or repeated markers: the widest), in time order."""
    best: dict[int, HostWindow] = {}
    for w in windows:
        known = best.get(w.number)
        if known is None or w.end - w.start > known.end - known.start:
            best[w.number] = w
    return sorted(best.values(), key=lambda w: w.start)
