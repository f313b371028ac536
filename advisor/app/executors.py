"""Where the ranks are read: in this process, in a local process pool, or on an existing Dask
cluster. Each maps the same pure function over the ranks and yields results as they finish."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol, TypeVar

from advisor.model import InputError
from advisor.parsers.traces.workers import pool_context

T = TypeVar("T")
R = TypeVar("R")

SCHEDULER_ENV = "ADVISOR_SCHEDULER"
# how long to wait for a Dask scheduler before saying it cannot be reached
SCHEDULER_TIMEOUT_S = 10.0
TIMEOUT_ENV = "ADVISOR_SCHEDULER_TIMEOUT"


def scheduler_timeout() -> float:
    text = os.environ.get(TIMEOUT_ENV)
    if not text:
        return SCHEDULER_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise InputError(TIMEOUT_ENV, f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise InputError(TIMEOUT_ENV, f"expected seconds > 0, got {text!r}")
    return value


class Executor(Protocol):
    name: str

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]: ...

    def close(self) -> None: ...


class InProcess:
    name = "in process"

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        for item in items:
            yield fn(item)

    def close(self) -> None:
        return None


class LocalPool:
    """A process pool on this machine (fork where the platform has it: no re-import)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.name = f"{jobs} local processes"
        self.pool: ProcessPoolExecutor | None = None

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        workers = min(self.jobs, len(items))
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=pool_context())
        futures = [self.pool.submit(fn, item) for item in items]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BrokenProcessPool:
            raise InputError(
                "--jobs", "a worker process died (out of memory?): try fewer --jobs"
            ) from None
        finally:
            self.close()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class DaskCluster:
    """An existing Dask distributed cluster; the profile paths must be readable by its workers
    (shared storage) and advisor installed where they run."""

    def __init__(self, address: str, timeout: float | None = None) -> None:
        timeout = scheduler_timeout() if timeout is None else timeout
        try:
            # imported by name: an optional extra, typed as Any wherever it is installed or not
            self.distributed: Any = importlib.import_module("distributed")
        except ImportError:
            raise InputError(
                address, "a Dask scheduler needs the dask extra: pip install 'advisor[dask]'"
            ) from None
        try:
            self.client: Any = self.distributed.Client(address, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise InputError(
                address, f"cannot reach the Dask scheduler within {timeout:g} s ({exc})"
            ) from None
        self.name = f"the Dask cluster at {address}"

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        futures = self.client.map(fn, list(items), pure=False)
        try:
            for future in self.distributed.as_completed(futures):
                result: R = future.result()
                future.release()
                yield result
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        self.client.close()


# Below this much profile data a process pool costs more (forking, sending summaries back) than
# it saves; an explicit --jobs N uses the pool regardless.
POOL_MIN_BYTES = 16 * 1024 * 1024


def choose_executor(
    jobs: int | None, scheduler: str | None, tasks: int, size_bytes: int | None = None
) -> Executor:
    """--scheduler (or ADVISOR_SCHEDULER) -> Dask; else a local pool of --jobs processes (all
    cores by default) when there is more than one rank and enough data to share out; else this
    process."""
    address = scheduler or os.environ.get(SCHEDULER_ENV) or None
    if address:
        return DaskCluster(address)
    if jobs is not None and jobs < 1:
        raise InputError("--jobs", f"must be at least 1, got {jobs}")
    workers = jobs or os.cpu_count() or 1
    if tasks <= 1 or workers <= 1:
        return InProcess()
    if jobs is None and size_bytes is not None and size_bytes < POOL_MIN_BYTES:
        return InProcess()
    return LocalPool(workers)


def folder_bytes(paths: Sequence[os.PathLike[str]], stop_at: int = POOL_MIN_BYTES) -> int:
    """Bytes of the files under `paths`, counted until `stop_at` is reached (a large cluster
    is not walked whole just to learn that it is large)."""
    total = 0
    for root in paths:
        if os.path.isfile(root):  # a PyTorch profiler trace
            total += os.stat(root).st_size
            if total >= stop_at:
                return total
            continue
        for folder, _, names in os.walk(root):
            for name in names:
                try:
                    total += os.stat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
                if total >= stop_at:
                    return total
    return total
