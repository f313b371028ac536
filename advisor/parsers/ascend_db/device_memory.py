"""The process's device memory in the database export: NPU_MODULE_MEM (each module's reserved
memory, as npu_module_mem.csv) and NPU_MEM's app rows (the whole process, which the database's
MEMORY_RECORD leaves out and the text export writes as memory_record.csv's APP rows)."""

from __future__ import annotations

from advisor.parsers.ascend_db.sqlite import Database
from advisor.parsers.profile_data import ModuleMemory

BYTES_PER_MB = 1024.0 * 1024.0


def module_memory(db: Database) -> ModuleMemory | None:
    """NPU_MODULE_MEM as npu_module_mem.csv: each module's highest reserved MiB (ENUM_MODULE
    names the modules) and the highest sum over the modules at one sample time."""
    if not db.has("NPU_MODULE_MEM", "moduleId", "totalReserved") or not db.has(
        "ENUM_MODULE", "id", "name"
    ):
        return None
    sql = (
        "SELECT m.name, MAX(n.totalReserved) FROM NPU_MODULE_MEM n "
        "JOIN ENUM_MODULE m ON m.id = n.moduleId GROUP BY m.name"
    )
    peaks = {
        str(name): reserved / BYTES_PER_MB
        for name, reserved in db.rows("NPU_MODULE_MEM", sql)
        if isinstance(reserved, int | float) and reserved >= 0
    }
    if not peaks:
        return None
    totals: list[float] = []
    if db.has("NPU_MODULE_MEM", "timestampNs"):
        # a module sampled twice at one time counts once
        sql = (
            "SELECT MAX(total) FROM (SELECT SUM(reserved) AS total FROM (SELECT timestampNs, "
            "moduleId, MAX(totalReserved) AS reserved FROM NPU_MODULE_MEM "
            "WHERE totalReserved >= 0 GROUP BY timestampNs, moduleId) GROUP BY timestampNs)"
        )
        totals = [t for (t,) in db.rows("NPU_MODULE_MEM", sql) if isinstance(t, int | float)]
    # without timestamps the modules cannot be added up at one instant: the sum of their peaks
    # is then the bound
    total = totals[0] / BYTES_PER_MB if totals else sum(peaks.values())
    return ModuleMemory(peaks, total)


def process_memory(db: Database, strings: dict[int, str]) -> float | None:
    """NPU_MEM's app rows: the whole process's device memory (HBM bytes) the driver sampled,
    what the text export writes as memory_record.csv's APP rows; highest MiB."""
    if not db.has("NPU_MEM", "type", "hbm"):
        return None
    app = [key for key, name in strings.items() if name.lower() == "app"]
    if not app:
        return None
    marks = ", ".join("?" for _ in app)
    sql = f"SELECT MAX(hbm) FROM NPU_MEM WHERE type IN ({marks})"
    found = [v for (v,) in db.rows("NPU_MEM", sql, tuple(app)) if isinstance(v, int | float)]
    return found[0] / BYTES_PER_MB if found and found[0] > 0 else None
