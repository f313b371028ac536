"""profiler_info_<rank>.json and profiler_metadata.json: the profile's own description (rank,
level, versions, environment, parallel sizes and groups)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.model import InputError
from advisor.parsers.ascend import files
from advisor.parsers.profile_data import ProcessGroup, RankProfile

_INFO_FILE = re.compile(r"profiler_info(?:_(\d+))?\.json")


def _nested(data: Any, key: str) -> Any:
    """First value of `key` anywhere in nested dicts (profiler_info layouts vary by version)."""
    if isinstance(data, dict):
        if key in data:
            return data[key]
        for value in data.values():
            found = _nested(value, key)
            if found is not None:
                return found
    return None


def apply_info(rank: RankProfile, info: Any, info_path: Path) -> None:
    m = _INFO_FILE.fullmatch(info_path.name)
    rank_id = _nested(info, "rank_id")
    if isinstance(rank_id, int) and rank_id >= 0:
        rank.rank = rank_id
    elif m and m.group(1) is not None:
        rank.rank = int(m.group(1))
    level = _nested(info, "_profiler_level") or _nested(info, "profiler_level")
    if isinstance(level, str) and level:
        rank.level = level.replace("Level_none", "LevelNone")
        rank.level_source = info_path.name
    _apply_gc_detection(rank, info)
    for key, attr in (("torch_npu_version", "torch_npu_version"), ("cann_version", "cann_version")):
        value = _nested(info, key)
        if value:
            setattr(rank, attr, str(value))
    for key in ("ms_version", "mindspore_version"):
        value = _nested(info, key)
        if value:
            rank.framework_version = str(value)
            if rank.framework != "mindspore":
                rank.framework = "mindspore"
                rank.framework_source = f"{info_path.name} records {key}"


def read_device_info(
    rank: RankProfile, directory: Path, read: Callable[[Path, str, Callable[[Path], Any]], Any]
) -> None:
    """The core counts of the raw PROF_* folder's device description, where the export kept it
    (a simplified export deletes it): what msprof-analyze's block-dim checker reads. `read`
    reads a file as the rank's other files are read (absent, unreadable, skipped)."""
    for path in device_info_files(directory):
        info = read(path, "info.json", files.read_json)
        if info is not None and apply_device_info(rank, info, path):
            return


def device_info_files(directory: Path) -> list[Path]:
    """PROF_*/device_*/info.json.<id> files of a rank directory (not their .done markers)."""
    found = directory.glob("PROF_*/device_*/info.json*")
    return sorted(p for p in found if p.is_file() and not p.name.endswith(".done"))


def apply_device_info(rank: RankProfile, info: Any, path: Path) -> bool:
    """The AI Core and vector core counts of DeviceInfo (ai_core_num, aiv_num); False when the
    file states no AI Core count."""
    devices = info.get("DeviceInfo") if isinstance(info, dict) else None
    for device in devices if isinstance(devices, list) else []:
        cores = _count(device.get("ai_core_num")) if isinstance(device, dict) else None
        if cores is not None:
            rank.ai_cores = cores
            rank.vector_cores = _count(device.get("aiv_num"))
            rank.cores_source = (
                f"{path.parent.parent.name}/{path.parent.name}/{path.name}:DeviceInfo"
            )
            return True
    return False


def _count(value: Any) -> int | None:
    """A positive core count, written as a number or a string of digits; None otherwise."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _apply_gc_detection(rank: RankProfile, info: Any) -> None:
    """gc_detect_threshold (ms) from the experimental config: a number turns GC detection on,
    null leaves it off; absent in versions before the option."""
    config = _nested(info, "experimental_config")
    if not isinstance(config, dict):
        return
    for key in ("_gc_detect_threshold", "gc_detect_threshold"):
        if key not in config:
            continue
        value = config[key]
        if value is None:
            rank.gc_detect_off = True
        elif isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            rank.gc_detect_ms = float(value)
        return


def read_metadata(path: Path) -> Any:
    """profiler_metadata.json, refused when its parallel sizes cannot be right."""
    meta = files.read_json(path)
    dist = meta.get("distributed_args") if isinstance(meta, dict) else None
    if isinstance(dist, dict):
        for key in ("world_size", "rank"):
            value = dist.get(key)
            low = 1 if key == "world_size" else 0
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < low
            ):
                raise InputError(
                    str(path), f"distributed_args.{key} = {value!r} is not a whole number >= {low}"
                )
    return meta


def apply_metadata(rank: RankProfile, meta: Any) -> None:
    env = meta.get("ENV_VARIABLES") if isinstance(meta, dict) else None
    if isinstance(env, dict):
        rank.env = {str(k): str(v) for k, v in env.items() if v is not None}
    dist = meta.get("distributed_args") if isinstance(meta, dict) else None
    if isinstance(dist, dict):
        world = dist.get("world_size")
        if isinstance(world, int):
            rank.world_size = world
        if rank.rank is None and isinstance(dist.get("rank"), int):
            rank.rank = dist["rank"]
        rank.layout = {
            str(k): int(v)
            for k, v in dist.items()
            if isinstance(v, int | bool) and k not in ("rank", "world_size")
        }
    groups = meta.get("parallel_group_info") if isinstance(meta, dict) else None
    if isinstance(groups, dict):
        rank.process_groups = {
            str(key): ProcessGroup(str(info.get("group_name") or key), ranks)
            for key, info in groups.items()
            if isinstance(info, dict) and (ranks := _ranks(info.get("global_ranks"))) is not None
        }


def _ranks(value: object) -> tuple[int, ...] | None:
    if isinstance(value, list) and all(isinstance(r, int) for r in value):
        return tuple(sorted(value))
    return None
