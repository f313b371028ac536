"""The parallel arithmetic of a Megatron-backend job, from its arguments.

DP = world / (TP*PP*CP); the expert grid: expert-DP = world / (ETP*EP*PP) with ETP defaulting
to TP; micro-batches per step m = GBS / (MBS*DP); pipeline bubble share (PP-1) / (v*m + PP-1)
with v virtual chunks. A size that is unknown (or does not divide) leaves what depends on it
unknown (None), and the reason is kept as a problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from advisor.core.values import as_number


def _int(args: Mapping[str, object], flag: str, default: int | None) -> int | None:
    if flag not in args:
        return default
    value = as_number(args[flag])
    return int(value) if value is not None and float(value).is_integer() else None


@dataclass
class Layout:
    world: int | None
    tp: int | None
    pp: int | None
    cp: int | None
    ep: int | None
    etp: int | None
    layers: int | None
    vpp_chunks: int | None
    dp: int | None = None
    expert_dp: int | None = None
    mbs: int | None = None
    gbs: int | None = None
    micro_batches: int | None = None
    bubble_ratio: float | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)  # (flag to point at, message)

    def as_config(self) -> dict[str, object]:
        """The `layout` section conditions read (`config: layout.dp`); unknown values are None."""
        return {
            "world": self.world,
            "tp": self.tp,
            "pp": self.pp,
            "cp": self.cp,
            "ep": self.ep,
            "etp": self.etp,
            "dp": self.dp,
            "expert_dp": self.expert_dp,
            "layers": self.layers,
            "vpp_chunks": self.vpp_chunks,
            "micro_batch_size": self.mbs,
            "global_batch_size": self.gbs,
            "micro_batches": self.micro_batches,
            "bubble_ratio": self.bubble_ratio,
        }


def bubble(pp: int, micro_batches: int, chunks: int = 1) -> float:
    """Share of the step the 1F1B schedule idles in fill and drain."""
    return (pp - 1) / (chunks * micro_batches + pp - 1) if pp > 1 else 0.0


def _chunks(args: Mapping[str, object], layers: int | None, pp: int | None) -> int | None:
    per_stage = _int(args, "num-layers-per-virtual-pipeline-stage", None)
    if "num-layers-per-virtual-pipeline-stage" in args and per_stage is None:
        return None
    if per_stage:
        if layers is None or pp is None or layers % pp or (layers // pp) % per_stage:
            return None
        return (layers // pp) // per_stage
    return _int(args, "num-virtual-stages-per-pipeline-rank", 1)


def layout_of(args: Mapping[str, object], world: int | None) -> Layout:
    tp = _int(args, "tensor-model-parallel-size", 1)
    pp = _int(args, "pipeline-model-parallel-size", 1)
    layers = _int(args, "num-layers", None)
    out = Layout(
        world=world,
        tp=tp,
        pp=pp,
        cp=_int(args, "context-parallel-size", 1),
        ep=_int(args, "expert-model-parallel-size", 1),
        etp=_int(args, "expert-tensor-parallel-size", tp),
        layers=layers,
        vpp_chunks=_chunks(args, layers, pp),
        mbs=_int(args, "micro-batch-size", None),
    )
    if None not in (world, out.tp, out.pp, out.cp):
        assert world is not None and out.tp and out.pp and out.cp
        model = out.tp * out.pp * out.cp
        if world % model:
            out.problems.append(
                (
                    "tensor-model-parallel-size",
                    f"world size {world} is not divisible by TP*PP*CP = "
                    f"{out.tp}*{out.pp}*{out.cp} = {model}",
                )
            )
        else:
            out.dp = world // model
    if None not in (world, out.etp, out.ep, out.pp):
        assert world is not None and out.etp and out.ep and out.pp
        experts = out.etp * out.ep * out.pp
        if world % experts:
            out.problems.append(
                (
                    "expert-model-parallel-size",
                    f"world size {world} is not divisible by ETP*EP*PP = "
                    f"{out.etp}*{out.ep}*{out.pp} = {experts}",
                )
            )
        else:
            out.expert_dp = world // experts
    gbs_default = out.mbs * out.dp if out.mbs is not None and out.dp is not None else None
    out.gbs = _int(args, "global-batch-size", gbs_default)
    if None not in (out.gbs, out.mbs, out.dp):
        assert out.gbs is not None and out.mbs and out.dp
        if out.gbs % (out.mbs * out.dp):
            out.problems.append(
                (
                    "global-batch-size",
                    f"global batch {out.gbs} is not divisible by micro batch x DP = "
                    f"{out.mbs}*{out.dp} = {out.mbs * out.dp}",
                )
            )
        else:
            out.micro_batches = out.gbs // (out.mbs * out.dp)
    if out.pp is not None and out.micro_batches is not None and out.vpp_chunks is not None:
        out.bubble_ratio = round(bubble(out.pp, out.micro_batches, out.vpp_chunks), 4)
    uneven = (
        "num-layer-list",
        "decoder-first-pipeline-num-layers",
        "decoder-last-pipeline-num-layers",
    )
    if layers is not None and out.pp and layers % out.pp and not any(f in args for f in uneven):
        out.problems.append(
            ("num-layers", f"{layers} layers do not split into {out.pp} pipeline stages")
        )
    return out
