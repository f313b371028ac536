"""What the job's device can do, from rules/devices.yaml: the device the profile recorded
(NPU_INFO, a trace's deviceProperties), else the one named with --device; unknown otherwise."""

from __future__ import annotations

from advisor.facts.base import Recorder
from advisor.facts.estimate import device_entry, named_devices
from advisor.model import JOB_SCOPE, FactSet

WRITES = ("profile.device_bf16",)


def device_capabilities(facts: FactSet, device: str | None) -> None:
    """Add the job's device facts (replacing earlier ones)."""
    out = Recorder(JOB_SCOPE)
    candidates = named_devices(facts, device)
    for name, source, why in candidates:
        entry = device_entry(name)
        if entry is not None and isinstance(entry.get("bf16"), bool):
            note = f"{why} ({name}): {entry['name']}, bf16 {entry['bf16']} in rules/devices.yaml"
            out.add("profile.device_bf16", entry["bf16"], source, note)
            break
    else:
        out.miss(
            "profile.device_bf16",
            "no device rules/devices.yaml knows: pass --device (910B, A3, H100...)",
        )
    facts.facts = [f for f in facts.facts if not (f.id in WRITES and f.scope == JOB_SCOPE)]
    facts.missing = [m for m in facts.missing if not (m.id in WRITES and m.scope == JOB_SCOPE)]
    facts.facts.extend(out.facts.values())
    facts.missing.extend(out.missing.values())
