"""Parameters, training FLOPs, MFU and per-rank memory from a Hugging Face model config plus the
training config (the arithmetic of KNOWLEDGE.md section 9)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.facts.base import Recorder
from advisor.model import JOB_SCOPE, FactSet, InputError

BYTES_WEIGHT = 2  # bf16 / fp16 parameters
BYTES_GRAD = 2
BYTES_ADAM = 8  # fp32 m and v
BYTES_MASTER = 4  # fp32 master copy
# Activation bytes per token per layer without recompute: 34 h for a 16-bit transformer layer
# (Korthikanti et al.; their extra 5 a s term is the attention score matrix, which fused
# attention never stores); with full recompute only the layer input (2 h) is kept.
ACT_LINEAR, ACT_RECOMPUTE = 34, 2


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool
    experts: int
    experts_per_token: int
    moe_intermediate: int
    moe_layers: int
    qk_norm: bool
    attention_bias: bool


def _int(cfg: dict[str, Any], key: str, path: Path, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(str(path), f"'{key}' must be an integer in a Hugging Face model config")
    return value


def load_model_config(path: Path) -> ModelShape:
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(str(path), "JSON nested too deeply") from None
    if not isinstance(cfg, dict):
        raise InputError(str(path), "a model config must be a JSON object")
    hidden = _int(cfg, "hidden_size", path)
    heads = _int(cfg, "num_attention_heads", path)
    layers = _int(cfg, "num_hidden_layers", path)
    experts = int(
        cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts") or 0
    )
    sparse_step = int(cfg.get("decoder_sparse_step") or 1)
    dense_only = set(cfg.get("mlp_only_layers") or [])
    moe_layers = sum(
        1 for i in range(layers) if experts and i not in dense_only and (i + 1) % sparse_step == 0
    )
    return ModelShape(
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", path, heads),
        head_dim=_int(cfg, "head_dim", path, hidden // heads),
        intermediate=_int(cfg, "intermediate_size", path),
        vocab=_int(cfg, "vocab_size", path),
        tied=bool(cfg.get("tie_word_embeddings", False)),
        experts=experts,
        experts_per_token=int(cfg.get("num_experts_per_tok") or 0),
        moe_intermediate=int(cfg.get("moe_intermediate_size") or cfg.get("intermediate_size") or 0),
        moe_layers=moe_layers,
        qk_norm=str(cfg.get("model_type", "")).startswith("qwen3"),
        attention_bias=bool(cfg.get("attention_bias", False)),
    )


def parameter_counts(m: ModelShape) -> tuple[int, int]:
    """(total, active per token) parameters of a decoder-only transformer."""
    q = m.hidden * m.heads * m.head_dim
    kv = 2 * m.hidden * m.kv_heads * m.head_dim
    o = m.heads * m.head_dim * m.hidden
    bias = (m.heads + 2 * m.kv_heads) * m.head_dim if m.attention_bias else 0
    norms = 2 * m.hidden + (2 * m.head_dim if m.qk_norm else 0)
    attention = q + kv + o + bias + norms
    dense_mlp = 3 * m.hidden * m.intermediate
    expert = 3 * m.hidden * m.moe_intermediate
    router = m.hidden * m.experts
    dense_layers = m.layers - m.moe_layers
    embeddings = m.vocab * m.hidden * (1 if m.tied else 2) + m.hidden  # + final norm
    total = (
        embeddings
        + m.layers * attention
        + dense_layers * dense_mlp
        + m.moe_layers * (m.experts * expert + router)
    )
    active = (
        embeddings
        + m.layers * attention
        + dense_layers * dense_mlp
        + m.moe_layers * (m.experts_per_token * expert + router)
    )
    return total, active


@dataclass(frozen=True)
class Training:
    seq: int
    micro_batch: int
    grad_accum: int
    world: int
    fsdp: int
    cp: int
    ep: int
    recompute: bool


def training_from_config(config: dict[str, Any] | None, world: int | None) -> Training:
    return training_and_assumptions(config, world)[0]


# what the estimate assumes for a training setting no config states
ASSUMED = {
    ("data", "cutoff_len"): 2048,
    ("training", "per_device_train_batch_size"): 8,
    ("training", "gradient_accumulation_steps"): 1,
    ("parallel", "cp_size"): 1,
    ("parallel", "ep_size"): 1,
    ("parallel", "recompute"): False,
}


def training_and_assumptions(
    config: dict[str, Any] | None, world: int | None
) -> tuple[Training, list[str]]:
    """The training shape, and each value that was assumed because nothing stated it."""
    assumed: list[str] = []

    def get(section: str, key: str, default: Any) -> Any:
        body = (config or {}).get(section) or {}
        value = body.get(key) if isinstance(body, dict) else None
        if value is None:
            assumed.append(f"{section}.{key} = {default}")
            return default
        return value

    fsdp = int(get("parallel", "fsdp_size", world or 1))
    train = Training(
        seq=int(get("data", "cutoff_len", ASSUMED[("data", "cutoff_len")])),
        micro_batch=int(get("training", "per_device_train_batch_size", 8)),
        grad_accum=int(get("training", "gradient_accumulation_steps", 1)),
        world=world or fsdp,
        fsdp=fsdp,
        cp=int(get("parallel", "cp_size", 1)),
        ep=int(get("parallel", "ep_size", 1)),
        recompute=str(get("parallel", "recompute", False)).lower() in ("true", "1", "yes"),
    )
    return train, assumed


def _devices() -> list[dict[str, Any]]:
    path = rules_dir() / "devices.yaml"
    raw = load_valid(path, "devices.schema.json")
    devices: list[dict[str, Any]] = raw["devices"]
    return devices


@dataclass(frozen=True)
class LinkPeaks:
    """One device's link peaks from rules/devices.yaml: GB/s of one link per link type."""

    name: str
    match: str
    peaks: dict[str, float]
    source: str


def link_peaks() -> list[LinkPeaks]:
    """The devices whose link peaks rules/devices.yaml states."""
    return [
        LinkPeaks(
            str(e["name"]),
            str(e["match"]),
            {str(k): float(v) for k, v in e["links"].items()},
            str(e["links_source"]),
        )
        for e in _devices()
        if "links" in e
    ]


def device_entry(device: str) -> dict[str, Any] | None:
    """The row of rules/devices.yaml whose pattern the device name matches (None: none does)."""
    for entry in _devices():
        if re.search(entry["match"], device, re.IGNORECASE):
            return entry
    return None


def device_cores(device: str) -> dict[str, Any] | None:
    """The `cores` row of rules/devices.yaml whose pattern the device name matches: its AI Core
    and vector core counts (None: no row, the counts are not publicly stated for that name)."""
    raw = load_valid(rules_dir() / "devices.yaml", "devices.schema.json")
    for entry in raw.get("cores", []):
        if re.search(entry["match"], device, re.IGNORECASE):
            return dict(entry)
    return None


def named_devices(facts: FactSet, device: str | None) -> list[tuple[str, str, str]]:
    """The device names to look up, most direct evidence first: the one the profile recorded,
    then the one given with --device; each with its source and why it is used."""
    recorded = facts.get("profile.device")
    named = []
    if recorded is not None and isinstance(recorded.value, str):
        named.append((recorded.value, recorded.source, "the device the profile recorded"))
    if device:
        named.append((device, "--device", "the device named on the command line"))
    return named


def known_device(device: str) -> dict[str, Any]:
    """The device's row; a name the table does not know is refused, naming the known ones."""
    entry = device_entry(device)
    if entry is None:
        known = ", ".join(e["name"] for e in _devices())
        raise InputError(
            "--device",
            f"unknown device '{device}' (known: {known}; the table is rules/devices.yaml)",
        )
    return entry


def device_memory_gib(device: str) -> float | None:
    """The device's memory from rules/devices.yaml (None when the table does not say)."""
    entry = device_entry(device)
    memory = entry.get("memory_gib") if entry is not None else None
    return float(memory) if isinstance(memory, int | float) else None


def peak_tflops(device: str) -> tuple[float | None, str]:
    """The device's dense peak and where it comes from; None when the table knows the device
    but states no public peak for it (then MFU needs --peak-tflops)."""
    devices = _devices()
    for entry in devices:
        if re.search(entry["match"], device, re.IGNORECASE):
            peak = entry.get("peak_tflops")
            if not isinstance(peak, int | float):
                return None, str(entry["name"])
            return float(peak), f"{entry['name']} ({entry['source']})"
    known = ", ".join(e["name"] for e in devices)
    raise InputError("--device", f"unknown device '{device}' (known: {known}); pass --peak-tflops")


def memory_parts(model: ModelShape, train: Training, total: int | None = None) -> dict[str, float]:
    """Bytes per rank of weights, gradients, optimizer states and activations."""
    if total is None:
        total = parameter_counts(model)[0]
    shard = max(1, train.fsdp)
    expert_params = model.moe_layers * model.experts * 3 * model.hidden * model.moe_intermediate
    dense_params = total - expert_params
    # experts are split by ep and then sharded over the remaining FSDP group
    per_rank = dense_params / shard + expert_params / shard
    seq_local = train.seq / max(1, train.cp)
    per_token_layer = (ACT_RECOMPUTE if train.recompute else ACT_LINEAR) * model.hidden
    return {
        "weights": per_rank * BYTES_WEIGHT,
        "gradients": per_rank * BYTES_GRAD,
        "optimizer": per_rank * (BYTES_ADAM + BYTES_MASTER),
        "activations": per_token_layer * seq_local * train.micro_batch * model.layers,
    }


def estimate(
    model: ModelShape,
    train: Training,
    step_ms: float | None = None,
    peak: float | None = None,
    peak_source: str = "",
    source: str = "model config",
) -> FactSet:
    out = Recorder(JOB_SCOPE)
    warnings: list[str] = []
    total, active = parameter_counts(model)
    out.add(
        "model.params",
        total,
        source,
        "embeddings, attention (with q/k norms for Qwen3), MLP or experts, norms",
    )
    out.add(
        "model.active_params",
        active,
        source,
        f"{model.experts_per_token} of {model.experts} experts per token"
        if model.experts
        else "dense: all parameters",
    )
    attention = 12 * train.seq * model.head_dim * model.heads * model.layers
    flops = 6 * active + attention
    out.add(
        "model.flops_per_token",
        flops,
        source,
        "6 x active parameters + 12 x seq x head_dim x heads x layers (model FLOPs)",
    )
    if train.recompute:
        out.add(
            "model.hardware_flops_per_token",
            8 * active + attention * 8 // 6,
            source,
            "full recompute runs the forward twice: 8 N (hardware FLOPs)",
        )
    tokens_per_step = (
        train.micro_batch * train.grad_accum * train.world // max(1, train.cp) * train.seq
    )
    if step_ms and peak:
        achieved = flops * tokens_per_step / (step_ms / 1000.0) / train.world
        mfu = achieved / (peak * 1e12)
        note = f"{tokens_per_step} tokens per step over {train.world} devices in {step_ms:.1f} ms; peak {peak:g} TFLOPS"
        if mfu > 1.0:
            # no device computes above its peak: a wrong step time, batch, world size or device
            note += "; above 100%: an input is wrong (step time, batch, world size or device)"
            warnings.append(
                f"mfu.estimated {mfu:.0%} is above 100%: check the step time, the batch and "
                "world size of the config, and the device (--device, --peak-tflops)"
            )
        out.add("mfu.estimated", mfu, peak_source or "peak table", note)
    elif step_ms:
        warnings.append(
            f"no MFU: rules/devices.yaml states no peak TFLOPS for {peak_source} (no public figure); pass --peak-tflops"
        )
    shard = max(1, train.fsdp)
    weights, grads, optimizer, activations = memory_parts(model, train, total).values()
    seq_local = train.seq / max(1, train.cp)
    note = f"sharded over fsdp_size {shard}"
    out.add(
        "memory.estimate.weights_bytes",
        int(weights),
        source,
        f"{BYTES_WEIGHT} bytes/parameter, {note}",
    )
    out.add(
        "memory.estimate.gradients_bytes",
        int(grads),
        source,
        f"{BYTES_GRAD} bytes/parameter, {note}",
    )
    out.add(
        "memory.estimate.optimizer_bytes",
        int(optimizer),
        source,
        f"Adam m+v fp32 and fp32 master copy: {BYTES_ADAM + BYTES_MASTER} bytes/parameter, {note}",
    )
    out.add(
        "memory.estimate.activations_bytes",
        int(activations),
        source,
        "full recompute: layer inputs only"
        if train.recompute
        else f"34 h bytes per token per layer (fused attention), micro-batch {train.micro_batch}, seq {seq_local:g} per rank",
    )
    parts = {
        "weights": weights,
        "gradients": grads,
        "optimizer": optimizer,
        "activations": activations,
    }
    out.add(
        "memory.estimate.total_bytes",
        int(sum(parts.values())),
        source,
        "largest part: " + max(parts, key=lambda k: parts[k]),
    )
    out.add(
        "memory.estimate.dominant",
        max(parts, key=lambda k: parts[k]),
        source,
        "the part a memory remedy should target first",
    )
    result = FactSet(inputs=[source])
    result.facts = list(out.facts.values())
    result.warnings.extend(warnings)
    return result
