"""One run of the user's job for `advisor tune`: the command run with bash in the config's folder,
its output kept in a log, its exit code and the log's word on why it failed, and the profile it
wrote (only the rank folders newer than its start: profilers leave earlier runs' folders in
place). A run past its time limit is killed with its whole process group; so is a run that is
interrupted (Ctrl-C), after which the interrupt goes on to the loop."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.checked_data import load_valid
from advisor.core.resources import rules_dir
from advisor.model import InputError
from advisor.parsers.ascend.locate import is_rank_dir

KILL_GRACE_S = 5.0  # between SIGTERM and SIGKILL of a run's process group
SEARCH_DEPTH = 3  # rank folders are searched this deep below the profile folder (node/rank)
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")


@dataclass(frozen=True)
class TuneData:
    """rules/tune.yaml: where each dialect's profile goes, and the failure signatures."""

    profile_locations: dict[str, dict[str, Any]]
    failures: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]


@cache
def tune_data() -> TuneData:
    path = rules_dir() / "tune.yaml"
    data = load_valid(path, "tune-rules.schema.json")
    failures = tuple(
        (str(f["cause"]), tuple(re.compile(p, re.IGNORECASE) for p in f["patterns"]))
        for f in data["failures"]
    )
    return TuneData(dict(data["profile_locations"]), failures)


@dataclass(frozen=True)
class RunResult:
    """What one run left: its log, exit code (None: killed), the profile it wrote."""

    number: int
    log: Path
    exit_code: int | None
    started_ns: int
    profile: Path | None = None
    failure: str | None = None  # out-of-memory, hccl-timeout, nan, crashed, timeout
    timed_out: bool = False

    @property
    def failed(self) -> bool:
        return self.failure is not None


def failure_cause(log_text: str) -> str | None:
    """The cause a log names for a failed run (None: it names none)."""
    for cause, patterns in tune_data().failures:
        if any(p.search(log_text) for p in patterns):
            return cause
    return None


def profile_location(dialect: str, effective: dict[str, object] | None, run_dir: Path) -> Path:
    """Where the config says the profile goes, resolved against the run folder."""
    where = tune_data().profile_locations.get(dialect)
    if where is None:
        raise InputError("--profile", f"a {dialect} config does not say where its profile goes")
    for key in where["keys"]:
        value = _lookup(effective or {}, str(key))
        if isinstance(value, str) and value:
            found = Path(value)
            break
    else:
        default = where.get("default")
        if default is None:
            raise InputError(
                "--profile",
                f"the config sets none of {', '.join(where['keys'])}: give the profile folder "
                "with --profile",
            )
        found = Path(str(default))
    if where.get("below"):
        found = found / str(where["below"])
    return found if found.is_absolute() else run_dir / found


def _lookup(data: object, dotted: str) -> object:
    """A value by its dotted path (a Megatron flag keeps its dashes: args.--profile-save-path)."""
    head, _, rest = dotted.partition(".")
    if head.startswith("--"):
        head, rest = dotted, ""
    try:
        value = data[head] if hasattr(data, "__getitem__") else None
    except (KeyError, TypeError, IndexError):
        return None
    return _lookup(value, rest) if rest else value


def run_job(command: str, cwd: Path, log: Path, number: int, timeout_s: float | None) -> RunResult:
    """Run the command with bash in `cwd`, stdout and stderr into `log`. On a timeout or an
    interrupt the run's process group is killed (then the interrupt is raised again)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.time_ns()
    with log.open("wb") as out:
        try:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed as one
            )
        except OSError as exc:
            raise InputError("--run", f"cannot start bash: {exc.strerror or exc}") from None
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return RunResult(number, log, None, started, failure="timeout", timed_out=True)
        except BaseException:  # Ctrl-C (KeyboardInterrupt) or a signal turned into one
            kill_group(proc)
            raise
    if code != 0:
        text = log.read_text(encoding="utf-8", errors="replace")
        return RunResult(number, log, code, started, failure=failure_cause(text) or "crashed")
    return RunResult(number, log, code, started)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the run's process group, SIGKILL to what is left after a grace period; returns
    once no process of the group runs any more (a child left behind could still write the
    files about to be restored), or after the second grace period."""
    group = proc.pid  # the run's session leader: its pid is the group's id
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            break
        if _group_ends(proc, group, KILL_GRACE_S):
            break
    proc.wait()


def _group_ends(proc: subprocess.Popen[bytes], group: int, within: float) -> bool:
    deadline = time.monotonic() + within
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=within)
    while _group_alive(group):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _group_alive(group: int) -> bool:
    """Whether a process of the group still runs (zombies, dead and waiting to be reaped, do
    not count). Linux's /proc says; elsewhere a signal 0 to the group does."""
    proc_root = Path("/proc")
    if not (proc_root / "self" / "stat").is_file():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc_root.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(group) and fields[0] != "Z":
            return True
    return False


def new_profile(root: Path, started_ns: int, into: Path) -> Path | None:
    """The profile this run wrote: its rank folders (or PyTorch traces) under `root` modified
    after it started. One is returned as is; several are linked into `into`, so that no earlier
    run's folder is read with them."""
    if not root.is_dir():
        return None
    found = [p for p in _outputs(root, SEARCH_DEPTH) if p.stat().st_mtime_ns >= started_ns]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    into.mkdir(parents=True, exist_ok=True)
    for number, path in enumerate(sorted(found)):
        link = into / f"{number:04d}_{path.name}"
        if not link.exists():
            link.symlink_to(path.resolve(), target_is_directory=path.is_dir())
    return into


def _outputs(folder: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return found
    for child in children:
        if (child.is_dir() and is_rank_dir(child)) or (
            child.is_file() and child.name.endswith(TRACE_SUFFIXES)
        ):
            found.append(child)
        elif child.is_dir() and depth > 1:
            found.extend(_outputs(child, depth - 1))
    return found
