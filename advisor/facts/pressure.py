"""Memory pressure of the job, and what its peak is made of (seed 000: attribute first).

The peak comes from what measured it, best first: the profile's allocator (memory_record.csv,
MEMORY_RECORD), the training log's max_memory_*, and only then `advisor estimate`; an
out-of-memory error in the log is a demand at least as large as the device. The device's memory
comes from the device the profile recorded (NPU_INFO, a trace's deviceProperties) looked up in
rules/devices.yaml, else from --device; without either the pressure is unknown, never zero.

The attribution says which remedy fits: `static` (what stays resident: parameters, gradients,
optimizer states) or `dynamic` (what a step raises and frees: activations, logits,
temporaries), from the profile's curve when it was recorded, else from the estimate's largest
part. `memory.footprint` joins the two into the one value footprint remedies are gated on.
"""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.estimate import device_entry, named_devices
from advisor.inputs.thresholds import FactThresholds
from advisor.model import JOB_SCOPE, FactSet

GIB = 1024**3
WRITES = (
    "memory.device_bytes",
    "memory.peak_bytes",
    "memory.pressure_ratio",
    "memory.attribution",
    "memory.footprint",
)
# the measured peaks, best first: what the whole process held on the device is what must fit,
# else what the allocator held (reserved)
PEAKS = (
    (
        "memory.process_peak_bytes",
        "the whole process on the device (profile, APP: allocator pool, communication buffers, runtime)",
    ),
    ("memory.reserved_peak_bytes", "reserved by the allocator (profile)"),
    ("log.memory_reserved_peak_bytes", "max_memory_reserved (log)"),
    ("memory.allocated_peak_bytes", "allocated (profile; reserved not recorded)"),
    ("log.memory_allocated_peak_bytes", "max_memory_allocated (log; reserved not logged)"),
)
STATIC_PARTS = ("weights", "gradients", "optimizer")


def _device_memory(facts: FactSet, device: str | None, out: Recorder) -> float | None:
    candidates = named_devices(facts, device)
    for name, source, why in candidates:
        entry = device_entry(name)
        if entry is not None and isinstance(entry.get("memory_gib"), int | float):
            gib = float(entry["memory_gib"])
            note = f"{why} ({name}): {entry['name']}, {gib:g} GiB in rules/devices.yaml"
            out.add("memory.device_bytes", int(gib * GIB), source, note)
            return gib * GIB
    named = f" ({', '.join(c[0] for c in candidates)} is not in rules/devices.yaml)"
    out.miss(
        "memory.device_bytes",
        "no device the table knows: pass --device (910B, A3, H100...)"
        + (named if candidates else ""),
    )
    return None


def _peak(facts: FactSet, out: Recorder) -> float | None:
    for fact_id, what in PEAKS:
        fact = facts.get(fact_id)
        if fact is not None and isinstance(fact.value, int | float):
            out.add("memory.peak_bytes", int(fact.value), fact.source, f"{what}: {fact_id}")
            return float(fact.value)
    total = facts.get("memory.estimate.total_bytes")
    if total is not None and isinstance(total.value, int | float):
        note = "advisor estimate per rank (nothing measured it: profile_memory or a log)"
        out.add("memory.peak_bytes", int(total.value), total.source, note)
        return float(total.value)
    out.miss(
        "memory.peak_bytes",
        "no measured peak: profile with profile_memory=True, pass --log, or --model-config",
    )
    return None


def _pressure(facts: FactSet, peak: float | None, device: float | None, out: Recorder) -> None:
    ooms = facts.get("log.out_of_memory_errors")
    if ooms is not None and isinstance(ooms.value, int) and ooms.value > 0:
        # the demand reached the device at least once: whatever the logged peaks say
        ratio = max(1.0, peak / device) if peak is not None and device else 1.0
        note = f"{ooms.value} out-of-memory error(s) in the log ({ooms.note}): at least 100%"
        out.add("memory.pressure_ratio", ratio, ooms.source, note)
        return
    if peak is None or not device:
        missing = "the device's memory" if peak is not None else "the peak"
        out.miss("memory.pressure_ratio", f"unknown: {missing} is not known")
        return
    out.add(
        "memory.pressure_ratio",
        peak / device,
        "memory.peak_bytes / memory.device_bytes",
        f"{peak / GIB:.1f} of {device / GIB:.0f} GiB",
    )


def _attribution(facts: FactSet, thresholds: FactThresholds, out: Recorder) -> str | None:
    static, dynamic = facts.get("memory.static_bytes"), facts.get("memory.dynamic_bytes")
    if (
        static is not None
        and dynamic is not None
        and isinstance(static.value, int | float)
        and isinstance(dynamic.value, int | float)
        and static.value + dynamic.value > 0
    ):
        share = dynamic.value / (static.value + dynamic.value)
        part = "dynamic" if share >= thresholds.memory_dynamic_share else "static"
        note = (
            f"{share:.0%} of the allocated peak rises and is freed within the window "
            f"(dynamic from {thresholds.memory_dynamic_share:.0%}): "
            + (
                "activations, logits, temporaries"
                if part == "dynamic"
                else "held high: parameters, gradients, optimizer states"
            )
        )
        out.add("memory.attribution", part, static.source, note)
        return part
    dominant = facts.get("memory.estimate.dominant")
    if dominant is not None and isinstance(dominant.value, str):
        part = "static" if dominant.value in STATIC_PARTS else "dynamic"
        note = f"advisor estimate: {dominant.value} is the largest part per rank"
        out.add("memory.attribution", part, dominant.source, note)
        return part
    out.miss(
        "memory.attribution",
        "neither a memory curve (profile_memory=True) nor an estimate (--model-config)",
    )
    return None


def _footprint(
    facts: FactSet,
    part: str | None,
    device: float | None,
    thresholds: FactThresholds,
    out: Recorder,
) -> None:
    ratio = out.facts.get("memory.pressure_ratio")
    if ratio is None:
        out.miss("memory.footprint", "memory pressure unknown: pass --device (and --log)")
        return
    threshold = thresholds.memory_pressure_ratio
    if ratio.value < threshold:
        note = f"peak at {ratio.value:.0%} of the device (treated from {threshold:.0%})"
        out.add("memory.footprint", "fits", ratio.source, note)
        return
    static = _static_bytes(facts)
    if static is not None and device and static >= device * threshold:
        note = (
            f"the resident part alone ({static / GIB:.1f} GiB) fills "
            f"{static / device:.0%} of the device: only a new layout makes room"
        )
        out.add("memory.footprint", "layout", ratio.source, note)
        return
    if part is None:
        out.miss("memory.footprint", "under pressure, but the peak is not attributed")
        return
    out.add(
        "memory.footprint",
        part,
        ratio.source,
        f"peak at {ratio.value:.0%} of the device; the {part} part dominates",
    )


def _static_bytes(facts: FactSet) -> float | None:
    """What stays resident: the profile's floor, else the estimate's states."""
    measured = facts.value("memory.static_bytes")
    if isinstance(measured, int | float):
        return float(measured)
    parts = [facts.value(f"memory.estimate.{p}_bytes") for p in STATIC_PARTS]
    if all(isinstance(p, int | float) for p in parts):
        return float(sum(parts))
    return None


def memory_pressure(facts: FactSet, device: str | None, thresholds: FactThresholds) -> None:
    """Add the job's pressure and attribution facts (replacing earlier ones)."""
    out = Recorder(JOB_SCOPE)
    device_bytes = _device_memory(facts, device, out)
    peak = _peak(facts, out)
    _pressure(facts, peak, device_bytes, out)
    part = _attribution(facts, thresholds, out)
    _footprint(facts, part, device_bytes, thresholds, out)
    facts.facts = [f for f in facts.facts if not (f.id in WRITES and f.scope == JOB_SCOPE)]
    facts.missing = [m for m in facts.missing if not (m.id in WRITES and m.scope == JOB_SCOPE)]
    facts.facts.extend(out.facts.values())
    facts.missing.extend(out.missing.values())
