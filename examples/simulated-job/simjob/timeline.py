"""Play a recipe step by step: when the host launches each kernel, when the device runs it, when
each collective runs, and the step's true breakdown.

The host launches kernels one at a time; a kernel starts when the device is free, the host has
launched it and (the first kernel of a layer) the layer's parameters are gathered. FSDP issues a
layer's all-gather in the pre-forward hook of the layer `prefetch` places earlier, and the
all-gather stream waits for the compute launched before it was issued (FSDP's copy-in waits for
the current stream), so without prefetch every all-gather runs while compute waits. Gradients
are reduce-scattered after each layer's backward on their own stream; the optimizer waits for
the last one. All times are integer nanoseconds, so every figure written is exact.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from simjob.response import KernelSpec, Recipe

NS = 1000  # nanoseconds per microsecond


@dataclass(frozen=True)
class Placed:
    kernel: KernelSpec
    dur: int
    launch: int  # when the host finished launching it
    start: int
    flow_id: int


@dataclass(frozen=True)
class Collective:
    kind: str  # allgather | reducescatter
    name: str  # hcom_allGather__<step>_<n>
    start: int
    dur: int
    issued: int = 0  # when the host issued it
    # an all-gather's FSDP hook: (pass, layer, prefetch) — the hook range FSDP2 records it in
    hook: tuple[str, int, bool] | None = None


@dataclass
class StepTruth:
    computing: int = 0
    communication: int = 0
    exposed: int = 0
    free: int = 0
    preparing: int = 0
    total: int = 0


@dataclass
class StepPlan:
    number: int  # the iteration (1-based)
    start: int
    end: int
    loader: tuple[int, int]
    malloc: list[tuple[int, int]]  # allocator calls to the driver: (start, duration)
    kernels: list[Placed]
    comm: list[Collective]
    sync: list[int]
    truth: StepTruth = field(default_factory=StepTruth)


def _ns(us: float) -> int:
    return round(us * NS)


class _Step:
    """The host, the compute stream and the two communication streams during one step."""

    def __init__(self, recipe: Recipe, number: int, start: int, flow: int, busy_before: int):
        self.recipe = recipe
        self.number = number
        rng = random.Random(f"{recipe.seed}:{number}")
        self.kernel_factor = max(0.5, 1.0 + rng.gauss(0.0, recipe.step_jitter))
        self.launch_ns = _ns(
            recipe.launch_us * max(0.5, 1.0 + rng.gauss(0.0, recipe.launch_jitter))
        )
        self.host = start
        self.device = start  # the end of the compute launched so far
        self.ag_free = start
        self.rs_free = start
        self.flow = flow
        self.kernels: list[Placed] = []
        self.comm: list[Collective] = []
        self.sync: list[int] = []
        self.loader = self._load(busy_before)
        call = _ns(recipe.malloc_us)
        self.malloc = [(self.host + i * call, call) for i in range(recipe.malloc_calls)]
        self.host += recipe.malloc_calls * call

    def _load(self, busy_before: int) -> tuple[int, int]:
        """The data loader's hold on the host: the whole load without workers, else only what
        the workers could not prepare while the previous step ran."""
        r = self.recipe
        if r.workers == 0:
            wait = _ns(r.load_us + r.collate_us)
        else:
            wait = max(0, _ns(r.load_us / r.workers) - busy_before) + _ns(r.collate_us)
        loader = (self.host, self.host + wait)
        self.host += wait
        return loader

    def launch(self, kernel: KernelSpec, ready: int = 0) -> None:
        self.host += self.launch_ns
        dur = max(1, _ns(kernel.us * self.kernel_factor))
        start = max(self.device, self.host, ready)
        self.kernels.append(Placed(kernel, dur, self.host, start, self.flow))
        self.flow += 1
        self.device = start + dur
        if self.recipe.blocking:
            self.sync.append(self.host)
            self.host = self.device + _ns(self.recipe.blocking_sync_us)

    def collective(
        self, kind: str, dur_us: float, free: int, hook: tuple[str, int, bool] | None = None
    ) -> Collective:
        # the collective's stream waits for the compute launched so far and for the host
        start = max(free, self.device, self.host)
        op = "allGather" if kind == "allgather" else "reduceScatter"
        name = f"hcom_{op}__{self.number}_{len(self.comm)}"
        c = Collective(kind, name, start, _ns(dur_us), self.host, hook)
        self.comm.append(c)
        return c

    def gather(self, gathered: dict[int, int], layers: list[int], pass_: str) -> None:
        """The all-gathers of `layers[0]` (its own, unless prefetched) and of the layers after
        it that are prefetched from its hook."""
        for i, layer in enumerate(layers):
            if layer not in gathered:
                hook = (pass_, layer, i > 0)
                c = self.collective("allgather", self.recipe.allgather_us, self.ag_free, hook)
                self.ag_free = c.start + c.dur
                gathered[layer] = self.ag_free

    def layer(self, kernels: tuple[KernelSpec, ...], ready: int) -> None:
        for i, kernel in enumerate(kernels):
            self.launch(kernel, ready if i == 0 else 0)

    def micro_batch(self) -> None:
        r = self.recipe
        order = list(range(r.layers))
        gathered: dict[int, int] = {}
        for i in order:
            self.gather(gathered, order[i : i + 1 + r.forward_prefetch], "forward")
            self.layer(r.forward, gathered[i])
        back = order[::-1]
        gathered = {}
        for i, layer in enumerate(back):
            self.gather(gathered, back[i : i + 1 + r.backward_prefetch], "backward")
            self.layer(r.backward, gathered[layer])
            c = self.collective("reducescatter", r.reducescatter_us, self.rs_free)
            self.rs_free = c.start + c.dur

    def finish(self) -> StepPlan:
        for i, kernel in enumerate(self.recipe.optimizer):
            self.launch(kernel, self.rs_free if i == 0 else 0)
        self.sync.append(self.host)  # loss.item(): the host waits for the device
        end = max(self.device, self.host, self.ag_free, self.rs_free)
        plan = StepPlan(
            number=self.number,
            start=self.loader[0],
            end=end,
            loader=self.loader,
            malloc=self.malloc,
            kernels=self.kernels,
            comm=self.comm,
            sync=self.sync,
        )
        plan.truth = truth(plan)
        return plan


def plan_steps(recipe: Recipe, iterations: int, epoch_start: int = 0) -> list[StepPlan]:
    """Iterations 1..`iterations`, back to back from `epoch_start`."""
    plans: list[StepPlan] = []
    t, flow = epoch_start, 1
    busy = _ns(recipe.load_us)  # before the first step the workers had no head start
    for number in range(1, iterations + 1):
        step = _Step(recipe, number, t, flow, busy)
        for _ in range(recipe.micro_batches):
            step.micro_batch()
        plan = step.finish()
        plans.append(plan)
        busy = plan.end - plan.loader[1]
        t, flow = plan.end, step.flow
    return plans


def union_length(intervals: list[tuple[int, int]]) -> int:
    return sum(b - a for a, b in merge(intervals))


def merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def subtract(
    intervals: list[tuple[int, int]], cover: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The parts of `intervals` that no interval of `cover` covers."""
    out = []
    merged = merge(cover)
    for a, b in merge(intervals):
        cur = a
        for x, y in merged:
            if y <= cur or x >= b:
                continue
            if x > cur:
                out.append((cur, x))
            cur = max(cur, y)
        if cur < b:
            out.append((cur, b))
    return out


def truth(plan: StepPlan) -> StepTruth:
    compute = [(p.start, p.start + p.dur) for p in plan.kernels]
    comm = [(c.start, c.start + c.dur) for c in plan.comm]
    first = min(a for a, _ in compute + comm)
    t = StepTruth()
    t.computing = union_length(compute)
    t.communication = union_length(comm)
    t.exposed = sum(b - a for a, b in subtract(comm, compute))
    t.free = (plan.end - first) - union_length(compute + comm)
    t.preparing = first - plan.start
    t.total = plan.end - plan.start
    return t
