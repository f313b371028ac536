"""What one side of a comparison ran: the work it did per step (tokens, samples) and the
baseline conditions a fair comparison holds fixed (global batch, world size, sequence length,
precision, dataset, seed, parallel layout), from its facts and the config it ran with.

A change that alters the work per step (gradient accumulation, context parallelism, the
micro-batch) makes step times incomparable: the comparison then judges time per token, or per
sample when tokens are not known, and says which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from advisor.core.values import as_number, get_path, values_equal
from advisor.model import FactSet, Value


class Unit(Enum):
    """The unit a comparison was judged in."""

    step = "step"
    token = "token"
    sample = "sample"


# Dotted config keys of each dialect (FSDP2 YAML, a Megatron script's `args`/`layout`,
# MindFormers YAML) where a condition is stated; the first key present wins.
CONDITION_KEYS: dict[str, tuple[str, ...]] = {
    "seq_length": ("data.cutoff_len", "args.seq-length", "model.model_config.seq_length"),
    "precision": (
        "training.bf16",
        "training.fp16",
        "args.bf16",
        "args.fp16",
        "model.model_config.compute_dtype",
    ),
    "dataset": (
        "data.dataset",
        "args.data-path",
        "train_dataset.data_loader.dataset_dir",
    ),
    "seed": ("training.seed", "args.seed", "seed"),
}
# the layout's sizes that are batch sizes, not the parallel layout
_BATCH_SIZES = ("global_batch", "micro_batch", "microbatches")
CONDITIONS = ("global_batch", "world_size", "seq_length", "precision", "dataset", "seed")


@dataclass(frozen=True)
class Work:
    """The work of one step on one side, each amount with where it came from."""

    tokens: float | None = None
    tokens_source: str = ""
    samples: float | None = None
    samples_source: str = ""


@dataclass(frozen=True)
class SideShape:
    work: Work
    conditions: dict[str, Value] = field(default_factory=dict)
    layout: dict[str, int] = field(default_factory=dict)


def _number(facts: FactSet, fact_id: str) -> float | None:
    value = facts.value(fact_id)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int(value: object) -> int | None:
    number = as_number(value)
    return int(number) if number is not None and number.is_integer() and number > 0 else None


def _layout(
    facts: FactSet, config: Mapping[str, Any] | None, config_layout: Mapping[str, tuple[str, ...]]
) -> dict[str, int]:
    """The parallel sizes that ran (job.parallel_sizes of the profile or the log), else the ones
    the config states (under the taxonomy's `parallel_layout` keys)."""
    for fact_id in ("job.parallel_sizes", "log.parallel_sizes"):
        value = facts.value(fact_id)
        if isinstance(value, Mapping):
            return {str(k): v for k, v in value.items() if isinstance(v, int)}
    sizes: dict[str, int] = {}
    for short, keys in config_layout.items():
        stated = next((v for k in keys if (v := _int(get_path(config, k))) is not None), None)
        if stated is not None:
            sizes[short] = stated
    return sizes


def _world_size(facts: FactSet, config: Mapping[str, Any] | None) -> tuple[int | None, str]:
    recorded = _int(facts.value("profile.world_size"))
    if recorded is not None:
        return recorded, "profile.world_size"
    for key in ("layout.world", "parallel.fsdp_size"):
        # FSDP2's fsdp_size is the world size on one sharding group (as the estimate reads it)
        stated = _int(get_path(config, key))
        if stated is not None:
            return stated, key
    return None, ""


def _global_batch(
    layout: dict[str, int], config: Mapping[str, Any] | None, world: int | None
) -> tuple[int | None, str]:
    """Samples per optimizer step: stated, or the per-device batch x accumulation x data ranks."""
    if layout.get("global_batch"):
        return layout["global_batch"], "parallel sizes: global_batch"
    stated = _int(get_path(config, "layout.global_batch_size"))
    if stated is not None:
        return stated, "layout.global_batch_size"
    per_device = _int(get_path(config, "training.per_device_train_batch_size"))
    if per_device is not None and world is not None:
        accumulation = _int(get_path(config, "training.gradient_accumulation_steps")) or 1
        cp = _int(get_path(config, "parallel.cp_size")) or 1  # CP ranks share one sample
        source = "per_device_train_batch_size x gradient_accumulation_steps x world / cp_size"
        return per_device * accumulation * max(1, world // cp), source
    batch = _int(get_path(config, "runner_config.batch_size"))
    dp = _int(get_path(config, "parallel_config.data_parallel"))
    if batch is not None and dp is not None:
        micro = _int(get_path(config, "parallel_config.micro_batch_num")) or 1
        accumulation = _int(get_path(config, "runner_config.gradient_accumulation_steps")) or 1
        source = "batch_size x data_parallel x micro_batch_num x gradient_accumulation_steps"
        return batch * dp * micro * accumulation, source
    return None, ""


def _stated(config: Mapping[str, Any] | None, keys: tuple[str, ...]) -> Value:
    for key in keys:
        value = get_path(config, key)
        if isinstance(value, str | int | float | bool):
            return value
    return None


def side_shape(
    facts: FactSet,
    config: Mapping[str, Any] | None,
    config_layout: Mapping[str, tuple[str, ...]] | None = None,
) -> SideShape:
    layout = _layout(facts, config, config_layout or {})
    world, _ = _world_size(facts, config)
    batch, batch_source = _global_batch(layout, config, world)
    conditions: dict[str, Value] = {"global_batch": batch, "world_size": world}
    for condition, keys in CONDITION_KEYS.items():
        conditions[condition] = _stated(config, keys)
    seq = _int(conditions["seq_length"])
    rate, step_ms = _number(facts, "log.tokens_per_s"), _number(facts, "log.step_time_ms")
    if rate is not None and step_ms is not None and rate > 0:
        # the log's own count: what ran, whatever the config says
        tokens: float | None = rate * step_ms / 1000.0
        tokens_source = "log tokens/s x step time"
    elif batch is not None and seq is not None:
        tokens, tokens_source = float(batch * seq), "global batch x sequence length"
    else:
        tokens, tokens_source = None, ""
    work = Work(tokens, tokens_source, None if batch is None else float(batch), batch_source)
    parallel = {k: v for k, v in layout.items() if k not in _BATCH_SIZES}
    return SideShape(work, conditions, parallel)


# two amounts of work per step closer than this are the same work: a count from the log's
# tokens/s x step time carries the noise of both medians
SAME_WORK = 0.02


def _differs(a: float, b: float) -> bool:
    return abs(a - b) > SAME_WORK * max(abs(a), abs(b))


def judging_unit(base: Work, cand: Work) -> tuple[Unit, float, float, str]:
    """The unit to judge in, and each side's amount of it per step (1 for a step).

    Tokens when both sides know them and they differ (the log's count is what ran, whatever the
    configs say); else samples when both sides know them and they differ; else the step."""
    if base.tokens is not None and cand.tokens is not None:
        if not _differs(base.tokens, cand.tokens):
            return Unit.step, 1.0, 1.0, ""
        source = base.tokens_source
        if cand.tokens_source != source:
            source = f"{source} (baseline), {cand.tokens_source} (candidate)"
        return Unit.token, base.tokens, cand.tokens, source
    samples = base.samples, cand.samples
    if samples[0] is not None and samples[1] is not None and _differs(samples[0], samples[1]):
        return Unit.sample, samples[0], samples[1], base.samples_source
    return Unit.step, 1.0, 1.0, ""


def differing_conditions(base: SideShape, cand: SideShape) -> list[tuple[str, Value, Value]]:
    """The baseline conditions known on both sides that differ: (condition, baseline, candidate)."""
    out: list[tuple[str, Value, Value]] = []
    for condition in CONDITIONS:
        b, c = base.conditions.get(condition), cand.conditions.get(condition)
        if b is not None and c is not None and not values_equal(b, c):
            out.append((condition, b, c))
    shared = sorted(set(base.layout) & set(cand.layout))
    changed = [k for k in shared if base.layout[k] != cand.layout[k]]
    if changed:
        out.append(
            (
                "parallel_layout",
                ", ".join(f"{k}={base.layout[k]}" for k in changed),
                ", ".join(f"{k}={cand.layout[k]}" for k in changed),
            )
        )
    return out
