"""The training log rank 0 prints, in the FSDP2 backend's format: one iteration line per logged
step (step time, tokens/s with log_throughput, loss, grad norm, peak memory), and the NPU
out-of-memory error as torch_npu raises it."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TextIO

from simjob.response import Memory, Recipe


@dataclass(frozen=True)
class Iteration:
    number: int
    step_ms: float
    started: datetime


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S")


def loss_at(recipe: Recipe, number: int) -> float:
    """The loss curve does not depend on the performance settings: the same data, seed and
    global batch give the same loss (only the noise seed moves it)."""
    shape = recipe.loss
    noise = random.Random(f"loss:{recipe.seed}:{number}").gauss(0.0, shape["noise"])
    return shape["floor"] + shape["start"] * math.exp(-shape["decay"] * number) + noise


def iteration_line(
    recipe: Recipe, it: Iteration, total: int, world: int, seq_len: int, lr: float, throughput: bool
) -> str:
    global_batch = recipe.samples * recipe.micro_batches * world
    tokens = global_batch * seq_len
    grad_norm = 1.2 + 3.0 * math.exp(-0.2 * it.number)
    memory = recipe.memory
    parts = [
        f"consumed samples: {global_batch * it.number:>10}",
        f"consumed tokens: {tokens * it.number:>12}",
        f"elapsed time per iteration (ms): {it.step_ms:.2f}",
    ]
    if throughput:
        parts.append(f"tokens/s: {tokens / (it.step_ms / 1000.0):.2f}")
    parts += [
        f"learning rate: {lr:E}",
        f"global batch size: {global_batch:>5}",
        f"lm loss: {loss_at(recipe, it.number):E}",
        f"grad norm: {grad_norm:.3f}",
        f"max_memory_allocated(GB): {memory.allocated_gib:.2f}",
        f"max_memory_reserved(GB): {memory.reserved_gib:.2f}",
    ]
    at = _stamp(it.started + timedelta(milliseconds=it.step_ms))
    head = f"INFO [{at}] >>  iteration {it.number:>8}/{total:>8} | "
    return head + " | ".join(parts) + " |"


def start_lines(started: datetime, world: int, out: TextIO) -> None:
    print(f"INFO [{_stamp(started)}] >> Training backend: mindspeed_fsdp", file=out)
    print(f"INFO [{_stamp(started)}] >> world size: {world}, fsdp size: {world}", file=out)


def out_of_memory(memory: Memory, started: datetime, out: TextIO) -> None:
    """The error torch_npu raises when an allocation does not fit: the step's peak is refused."""
    total = memory.usable_gib
    allocated = min(memory.allocated_gib, total)
    reserved = min(memory.reserved_gib, total)
    asked = max(0.01, memory.reserved_gib - total)
    free = max(0.0, total - reserved)
    print(f"INFO [{_stamp(started)}] >> start training", file=out)
    print("Traceback (most recent call last):", file=out)
    print('  File "train_fsdp2.py", line 41, in <module>', file=out)
    print("    main()", file=out)
    print(
        f"RuntimeError: NPU out of memory. Tried to allocate {asked:.2f} GiB (NPU 0; "
        f"{total:.2f} GiB total capacity; {allocated:.2f} GiB already allocated; "
        f"{allocated:.2f} GiB current active; {free:.2f} GiB free; {reserved:.2f} GiB reserved "
        "in total by PyTorch) If reserved memory is >> allocated memory try setting "
        "max_split_size_mb to avoid fragmentation.",
        file=out,
    )
