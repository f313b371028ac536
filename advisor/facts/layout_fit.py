"""Which FSDP2 layout fits the device, by the estimate's arithmetic (seed 003: when the resident
part alone does not fit, the layout is the remedy).

Candidates keep the parallel arithmetic: fsdp_size and cp_size divide the world size, and the
sequence divides by cp_size. They are preferred in the order that costs least step time:
sharding the states further first (communication only), then context parallelism (its
communication overlaps attention), then full recompute (a third more compute); within each,
the smallest change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.facts.estimate import ModelShape, Training, memory_parts

GIB = 1024**3
CP_SIZES = (1, 2, 4, 8)
# beyond the job's devices: how many it would take, fully sharded with recompute
MAX_DEVICES = 16384


@dataclass(frozen=True)
class Fit:
    train: Training
    total_bytes: float
    static_bytes: float

    def describe(self, base: Training) -> str:
        changes = []
        if self.train.fsdp != base.fsdp:
            changes.append(f"fsdp_size {base.fsdp} -> {self.train.fsdp}")
        if self.train.recompute != base.recompute:
            changes.append("recompute on")
        if self.train.cp != base.cp:
            changes.append(f"cp_size {base.cp} -> {self.train.cp}")
        return f"{', '.join(changes) or 'as configured'}: {self.total_bytes / GIB:.1f} GiB per rank"


def _measure(model: ModelShape, train: Training) -> Fit:
    parts = memory_parts(model, train)
    static = parts["weights"] + parts["gradients"] + parts["optimizer"]
    return Fit(train, static + parts["activations"], static)


def _candidates(train: Training, world: int) -> list[Training]:
    sizes = [f for f in range(max(1, train.fsdp), world + 1) if world % f == 0]
    out: list[Training] = []
    for recompute in dict.fromkeys((train.recompute, True)):
        for cp in (c for c in CP_SIZES if c >= train.cp):
            if world % cp or train.seq % cp:
                continue
            out.extend(replace(train, fsdp=f, recompute=recompute, cp=cp) for f in sizes)
    return sorted(out, key=lambda t: (t.recompute != train.recompute, t.cp, t.fsdp))


def fitting_layout(model: ModelShape, train: Training, budget_bytes: float) -> Fit | None:
    """The least costly layout on the job's devices whose per-rank estimate is within budget."""
    for candidate in _candidates(train, max(train.world, train.fsdp)):
        fit = _measure(model, candidate)
        if fit.total_bytes <= budget_bytes:
            return fit
    return None


def devices_needed(model: ModelShape, train: Training, budget_bytes: float) -> Fit | None:
    """Fully sharded with recompute, the fewest devices (a power of two) within budget."""
    devices = 1
    while devices <= MAX_DEVICES:
        fit = _measure(model, replace(train, fsdp=devices, world=devices, recompute=True))
        if fit.total_bytes <= budget_bytes:
            return fit
        devices *= 2
    return None


def _devices(count: int) -> str:
    return f"{count} device{'s' if count != 1 else ''}"


def layout_advice(model: ModelShape, train: Training, device_bytes: float, share: float) -> str:
    """One sentence: the configured layout fits, which one does, or how many devices it takes."""
    budget = device_bytes * share
    now = _measure(model, train)
    within = f"{share:.0%} of {device_bytes / GIB:.0f} GiB"
    if now.total_bytes <= budget:
        return f"fits: {now.total_bytes / GIB:.1f} GiB per rank within {within}"
    found = fitting_layout(model, train, budget)
    if found is not None:
        return (
            f"does not fit {within}; on {_devices(train.world)} this fits: {found.describe(train)}"
        )
    static = _measure(model, replace(train, fsdp=max(train.world, train.fsdp))).static_bytes
    more = devices_needed(model, train, budget)
    tail = (
        f"it fits on {more.train.fsdp} devices fully sharded with recompute "
        f"({more.total_bytes / GIB:.1f} GiB per rank)"
        if more is not None
        else "no number of devices fits it by this estimate"
    )
    return (
        f"does not fit {within} on {_devices(train.world)}: the resident part alone is "
        f"{static / GIB:.1f} GiB per rank fully sharded; {tail}"
    )
