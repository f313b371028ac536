"""Training logs: the iteration lines of MindSpeed-LLM's FSDP2 backend, the Megatron-style
backend and MindSpore Transformers, wherever they sit among other output.

Lines may be interleaved with anything, files rotated (several paths), and the last line cut
mid-write: a value is taken only when its segment is complete (followed by a separator).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from advisor.model import InputError

GB = 1024**3
# Upper bounds past which a logged value is corruption, not a measurement: no training step lasts
# a day, no device runs 100 PFLOP/s or holds 100 TB, MFU is a percentage, and no job reads ten
# billion tokens a second. A value above its bound is dropped with a warning.
MAX_STEP_MS = 86_400e3
MAX_TOKENS_PER_S = 1e10
MAX_MFU = 100.0
MAX_TFLOPS = 1e5
MAX_GB = 1e5

_ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)$")
_MINDFORMERS = re.compile(r"step:\[\s*(\d+)\s*/\s*(\d+)\s*\],(.*)$")
# Megatron's argument dump at start-up: "  micro_batch_size ................ 1"
_ARGUMENT = re.compile(r"^\s*([a-z_][a-z0-9_]*) \.{3,} (\S.*?)\s*$")
# An out-of-memory error as torch_npu ("NPU out of memory. Tried to allocate ..."), PyTorch
# ("CUDA out of memory", torch.OutOfMemoryError) and CANN's allocator ("EL0004", "memory
# allocation failed") print it
_OUT_OF_MEMORY = re.compile(
    r"\b(?:NPU|CUDA|HIP)\s+out of memory|OutOfMemoryError|\bEL0004\b|"
    r"[Mm]emory allocation failed|failed to allocate memory",
    re.IGNORECASE,
)
_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|inf|-inf)"


@dataclass
class Iteration:
    number: int
    total: int
    line: int
    fmt: str  # "fsdp2" | "megatron" | "mindformers"
    step_ms: float | None = None
    tokens_per_s: float | None = None
    mfu: float | None = None  # percent, as logged
    tflops_per_device: float | None = None
    loss: float | None = None
    grad_norm: float | None = None
    loss_scale: float | None = None  # the dynamic loss scale of an fp16 run, as logged
    learning_rate: float | None = None
    allocated_gb: float | None = None
    reserved_gb: float | None = None
    skipped: int | None = None
    nan: int | None = None
    # MindFormers' `overflow cond`: the step overflowed in fp16 and its update was skipped
    overflow: bool | None = None
    # "column: value" of each value out of its range (dropped, and warned about by read_logs)
    rejected: list[str] = field(default_factory=list)


@dataclass
class TrainLog:
    paths: list[Path]
    iterations: list[Iteration] = field(default_factory=list)
    lines_read: int = 0
    arguments: dict[str, str] = field(default_factory=dict)  # the argument dump, when logged
    # "file:line" of each out-of-memory error the log printed
    out_of_memory: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _num(text: str) -> float | None:
    m = re.fullmatch(r"\s*" + _NUMBER + r"\s*[A-Za-z%]*\s*", text)
    if not m:
        return None
    value = m.group(1)
    return float("nan") if value.lower() == "nan" else float(value)


def _measure(value: float | None) -> float | None:
    """A time, rate, size or count a log can mean: finite and non-negative (else unusable)."""
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _bounded(it: Iteration, column: str, value: float | None, limit: float) -> float | None:
    """_measure, and at most `limit`: a larger value is recorded as rejected and dropped."""
    measured = _measure(value)
    if measured is not None and measured > limit:
        it.rejected.append(f"{column}: {measured:g} is above {limit:g}")
        return None
    return measured


def _loss(value: float | None) -> float | None:
    """A loss: finite, or NaN for a diverged step (an overflowed infinity counts as NaN)."""
    if value is None:
        return None
    return value if math.isfinite(value) else float("nan")


def _count(value: float | None) -> int | None:
    measured = _measure(value)
    return int(measured) if measured is not None and measured < 2**53 else None


def _pipe_segments(rest: str) -> dict[str, str]:
    """`key: value |` segments; the last one counts only if its closing '|' was written."""
    parts = rest.split("|")
    complete = parts[:-1]  # the text after the final '|' is empty or cut
    out = {}
    for part in complete:
        key, sep, value = part.partition(":")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def _from_pipes(it: Iteration, segments: dict[str, str]) -> None:
    def get(*names: str) -> float | None:
        for name in names:
            if name in segments:
                return _num(segments[name])
        return None

    step = "elapsed time per iteration (ms)"
    it.step_ms = _bounded(it, step, get(step), MAX_STEP_MS)
    it.tokens_per_s = _bounded(it, "tokens/s", get("tokens/s"), MAX_TOKENS_PER_S)
    it.mfu = _bounded(it, "mfu", get("mfu"), MAX_MFU)
    tflops = "throughput per gpu (tflop/s/gpu)"
    it.tflops_per_device = _bounded(it, tflops, get(tflops), MAX_TFLOPS)
    it.loss = _loss(get("lm loss"))
    it.grad_norm = _measure(get("grad norm"))
    it.loss_scale = _measure(get("loss scale"))
    it.learning_rate = _measure(get("learning rate"))
    allocated, reserved = "max_memory_allocated(gb)", "max_memory_reserved(gb)"
    it.allocated_gb = _bounded(it, allocated, get(allocated), MAX_GB)
    it.reserved_gb = _bounded(it, reserved, get(reserved), MAX_GB)
    it.skipped = _count(get("number of skipped iterations"))
    it.nan = _count(get("number of nan iterations"))


def _from_mindformers(it: Iteration, rest: str) -> None:
    # the segment list ends at '}' or at the throughput; a cut line misses its tail
    segments = {}
    for part in rest.split(","):
        key, sep, value = part.partition(":")
        if sep:
            segments[key.strip().lower()] = value.strip()
    loss = segments.get("loss")
    it.loss = _loss(_num(loss)) if loss is not None else None
    for name, attr in (
        ("global_norm", "grad_norm"),
        ("loss_scale", "loss_scale"),
        ("lr", "learning_rate"),
    ):
        text = segments.get(name)
        if text is not None:
            setattr(it, attr, _measure(_num(text.strip("[] "))))
    overflow = segments.get("overflow cond", "").strip().lower()
    if overflow in ("true", "false"):
        it.overflow = overflow == "true"
    per_step = segments.get("per_step_time")
    if per_step is not None and per_step.endswith("ms"):
        it.step_ms = _bounded(it, "per_step_time", _num(per_step[:-2]), MAX_STEP_MS)
    throughput = segments.get("train_throughput_per_npu")
    if throughput is not None and throughput.rstrip("}").strip().endswith("T"):
        tflops = _num(throughput.rstrip("}").strip()[:-1])
        it.tflops_per_device = _bounded(it, "train_throughput_per_npu", tflops, MAX_TFLOPS)


def parse_line(text: str, line_no: int) -> Iteration | None:
    m = _ITERATION.search(text)
    if m:
        fmt = "fsdp2" if ">>" in text[: m.start()] or "consumed tokens" in text else "megatron"
        it = Iteration(int(m.group(1)), int(m.group(2)), line_no, fmt)
        _from_pipes(it, _pipe_segments(m.group(3)))
        return it
    m = _MINDFORMERS.search(text)
    if m:
        it = Iteration(int(m.group(1)), int(m.group(2)), line_no, "mindformers")
        _from_mindformers(it, m.group(3))
        return it
    return None


def read_logs(paths: list[Path]) -> TrainLog:
    """Iteration records of one or more (rotated) log files, in iteration order."""
    log = TrainLog(paths=list(paths))
    by_number: dict[int, Iteration] = {}
    for path in paths:
        try:
            handle = path.open("r", encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(str(path), f"cannot read: {exc.strerror}") from None
        rejected: list[str] = []
        with handle:
            for line_no, text in enumerate(handle, start=1):
                log.lines_read += 1
                it = parse_line(text.rstrip("\n"), line_no)
                if it is None and (arg := _ARGUMENT.match(text)) is not None:
                    log.arguments[arg.group(1)] = arg.group(2)
                elif it is None and _OUT_OF_MEMORY.search(text):
                    log.out_of_memory.append(f"{path.name}:{line_no}")
                if it is not None:
                    by_number[it.number] = it  # a restarted run's repeat replaces the old line
                    rejected.extend(f"line {line_no}, {why}" for why in it.rejected)
        if rejected:
            log.warnings.append(
                f"{path}: {len(rejected)} value(s) out of range were left out (first: {rejected[0]})"
            )
    if not by_number:
        names = ", ".join(str(p) for p in paths)
        raise InputError(
            names, "no training iteration lines (FSDP2, Megatron or MindFormers format) found"
        )
    log.iterations = [by_number[n] for n in sorted(by_number)]
    return log
