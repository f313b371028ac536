"""Plain data read from a profile, before any fact is derived. Times in microseconds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from advisor.parsers.traces.steps import TraceData


@dataclass(frozen=True, slots=True)
class StepRow:
    """One row of step_trace_time.csv."""

    step: int | None
    computing: float
    comm_not_overlapped: float
    overlapped: float
    communication: float
    free: float
    preparing: float | None
    bubble: float | None
    # memcpy/memset time neither compute nor communication hides; None where the source counts
    # memory operations as computing (torch_npu's step_trace_time.csv)
    memory: float | None = None

    @property
    def total(self) -> float:
        """Step wall time: preparation + the device's busy window (compute, exposed comm, exposed
        memory operations, idle)."""
        return (
            self.computing
            + self.comm_not_overlapped
            + (self.memory or 0.0)
            + self.free
            + (self.preparing or 0.0)
        )


@dataclass(slots=True)
class KernelGroup:
    """Kernels of one type on one core kind in one step, aggregated from kernel_details.csv."""

    step: int | None
    op_type: str
    core: str
    example_name: str
    count: int = 0
    total_us: float = 0.0
    small_count: int = 0
    small_us: float = 0.0
    pmu_us: float = 0.0  # duration of the rows that carry pipe-utilisation columns
    compute_pipe_us: float = 0.0  # duration x (aic_mac_ratio or aiv_vec_ratio)
    mte2_pipe_us: float = 0.0  # duration x (aic_mte2_ratio or aiv_mte2_ratio)
    mte2_bound_us: float = 0.0  # duration of rows whose mte2 ratio exceeds the compute ratio


@dataclass(slots=True)
class OpDetail:
    """Kernels of one type on one core kind with one input dtype list in one step: what the
    operator analyzers read besides the kernel groups (AI-CPU dtypes, dynamic-shape state)."""

    step: int | None
    op_type: str
    core: str
    input_dtypes: str
    count: int = 0
    total_us: float = 0.0
    dynamic_count: int = 0  # rows whose OP State is "dynamic"
    dynamic_us: float = 0.0


@dataclass(slots=True)
class BlockDimGroup:
    """Kernels of one type on one core kind launched with one block dim (and mix block dim) in
    one step: how many cores each kernel asked for, what the block-dim analyzer reads."""

    step: int | None
    op_type: str
    core: str
    block_dim: int
    mix_block_dim: int | None  # None: the export has no Mix Block Dim or the cell is N/A
    count: int = 0
    total_us: float = 0.0


@dataclass(slots=True)
class SequenceCount:
    """One fusion pattern's unfused kernel sequences found in one step, and their time."""

    count: int = 0
    total_us: float = 0.0


@dataclass(frozen=True)
class KernelTable:
    groups: list[KernelGroup]
    has_pmu: bool
    has_step_ids: bool
    rows: int
    # per (step, type, core, input dtypes); None where the source has no such columns
    details: list[OpDetail] | None = None
    # the source records each kernel's OP State (static / dynamic)
    has_op_state: bool = False
    # (step, first kernel start, last kernel end) in the profiler's clock (us), in time order;
    # read only when the profile recorded memory (the windows its curve is read in)
    step_spans: tuple[tuple[int, float, float], ...] = ()
    # (step, fusion pattern) -> its unfused sequences; None: the source's launch order not read
    sequences: dict[tuple[int | None, str], SequenceCount] | None = None
    # per (step, type, core, block dim, mix block dim); None: the source has no Block Dim
    block_dims: list[BlockDimGroup] | None = None
    # each kernel's type by its start in the trace's clock (trace_view.json's relative
    # microseconds; the database's from its origin): the operator of a device task the queue
    # times name. None: the source has no start column, or more kernels than KERNEL_TYPES_MAX
    types_at: dict[float, str] | None = None
    # the other device tasks' kinds by start (the database's TASK.taskType: EVENT_WAIT, SDMA,
    # Notify Wait...); None: not recorded (kernel_details.csv lists kernels only)
    task_kinds_at: dict[float, str] | None = None


# kernels whose type is kept by start: beyond it (a dict entry is ~100 bytes) not kept
KERNEL_TYPES_MAX = 1_000_000


@dataclass(frozen=True)
class OpStat:
    op_type: str
    core: str
    count: int
    total_us: float


@dataclass(slots=True)
class CommStep:
    """communication.json, one step: op kind -> elapse/wait ms, link -> size MB / time ms."""

    step: int | None
    has_wait: bool = True  # PyTorch traces show NCCL kernels but not how long they waited
    elapse_ms: dict[str, float] = field(default_factory=dict)
    wait_ms: dict[str, float] = field(default_factory=dict)
    link_size_mb: dict[str, float] = field(default_factory=dict)
    link_time_ms: dict[str, float] = field(default_factory=dict)
    # communication group (as the profile names it) -> op kind -> elapse ms
    group_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    # link type -> each op's (transit size MB, transit time ms): small-transfer analysis
    transfers: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    # link type -> transfer size MB -> [count, transit time ms] (the ops' Size Distribution)
    packets: dict[str, dict[float, list[float]]] = field(default_factory=dict)
    # op kind -> transit / synchronization ms (communication.json's Communication Time Info)
    transit_ms: dict[str, float] = field(default_factory=dict)
    sync_ms: dict[str, float] = field(default_factory=dict)
    # communication group -> [elapse, wait, transit, synchronization] ms
    group_split: dict[str, list[float]] = field(default_factory=dict)
    # each op's RDMA transit: (op name, group, RDMA transit time ms)
    rdma_ops: list[tuple[str, str | None, float]] = field(default_factory=list)

    def split(self, kind: str, group: str | None, times: tuple[float | None, ...]) -> None:
        """One op's (elapse, wait, transit, synchronization) ms: transit and synchronization
        per kind, all four per group (elapse and wait per kind are counted by `add` and the
        readers). None: the source does not record that time."""
        elapse, wait, transit, sync = times
        if transit is not None:
            self.transit_ms[kind] = self.transit_ms.get(kind, 0.0) + transit
        if sync is not None:
            self.sync_ms[kind] = self.sync_ms.get(kind, 0.0) + sync
        if group:
            slot = self.group_split.setdefault(group, [0.0, 0.0, 0.0, 0.0])
            slot[0] += elapse or 0.0
            slot[1] += wait or 0.0
            slot[2] += transit or 0.0
            slot[3] += sync or 0.0

    def add(self, kind: str, elapse_ms: float, group: str | None) -> None:
        self.elapse_ms[kind] = self.elapse_ms.get(kind, 0.0) + elapse_ms
        if group:
            kinds = self.group_ms.setdefault(group, {})
            kinds[kind] = kinds.get(kind, 0.0) + elapse_ms


@dataclass(frozen=True)
class CollectiveSize:
    """One collective's data volume as the database export's COMMUNICATION_OP records it:
    element count and data type (the size HCCL_BUFFSIZE is compared with)."""

    name: str
    group: str | None
    count: int
    dtype: str


@dataclass
class LinkStat:
    """One link's totals from a communication matrix (source rank -> destination rank)."""

    src: int
    dst: int
    transport: str
    size_mb: float = 0.0
    time_ms: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.src}-{self.dst}"

    @property
    def bandwidth_gbps(self) -> float:
        # MB / ms = GB / s
        return self.size_mb / self.time_ms if self.time_ms > 0 else 0.0


@dataclass(frozen=True)
class ProcessGroup:
    """A communication group the profiler recorded: its framework name and global ranks."""

    name: str
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class ModuleMemory:
    """npu_module_mem.csv / NPU_MODULE_MEM: the device's memory by the module that reserved it,
    sampled by the driver (APP: the framework's allocator pool; HCCL, RUNTIME, GE...: the parts
    outside it)."""

    peaks: dict[str, float]  # each module's highest reserved MiB
    total_peak_mb: float  # the highest sum over every module at one sample time


@dataclass(frozen=True)
class MemorySummary:
    allocated_peak_mb: float
    reserved_peak_mb: float
    allocated_at_reserved_peak_mb: float
    component: str
    samples: int
    # the lowest allocated of the window: what stays resident through every step (parameters,
    # optimizer states); the peak above it is what a step raises and frees (seed 003's curve)
    allocated_floor_mb: float | None = None
    # read per step window (the steady steps, the first dropped as warm-up): the lowest
    # allocated of any step, the largest rise within one step, and the steps it was read over;
    # None when the profile gives no step windows (then the floor is the whole profile's)
    step_rise_mb: float | None = None
    window_steps: tuple[int, ...] = ()
    # the whole process on the device (component APP: the allocator's pool, communication
    # buffers, the runtime's own memory): its highest reserved, when recorded
    process_peak_mb: float | None = None
    # the samples' own columns: "MB" (memory_record.csv, MEMORY_RECORD, read as MiB) or
    # "bytes" (a PyTorch trace's [memory] events, exact)
    recorded_in: str = "MB"
    # when the allocated peak was sampled (us, the profiler's clock), when the file says
    peak_time_us: float | None = None
    # operator name -> MiB it holds live at the allocated peak (operator_memory.csv / OP_MEMORY),
    # largest first; empty when the profile records no operator memory
    holders: tuple[tuple[str, float], ...] = ()


@dataclass
class RankProfile:
    path: Path
    output_dir: Path | None
    framework: str
    rank: int | None = None
    level: str | None = None
    level_source: str = ""
    torch_npu_version: str | None = None
    cann_version: str | None = None
    framework_version: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    world_size: int | None = None
    # parallel degrees the profiler recorded (torch_npu distributed_args), by their own names
    layout: dict[str, int] = field(default_factory=dict)
    # group key as the profile spells it -> the group (torch_npu parallel_group_info, Kineto
    # distributedInfo.pg_config)
    process_groups: dict[str, ProcessGroup] = field(default_factory=dict)
    step_rows: list[StepRow] | None = None
    kernels: KernelTable | None = None
    op_stats: list[OpStat] | None = None
    comm: list[CommStep] | None = None
    memory: MemorySummary | None = None
    # npu_module_mem.csv / NPU_MODULE_MEM: each module's highest reserved MiB and their highest
    # sum at one sample
    module_memory: ModuleMemory | None = None
    # the database export's NPU_MEM app rows: the whole process's device memory the driver
    # sampled (what the text export writes as memory_record.csv's APP rows), highest MiB
    process_sampled_peak_mb: float | None = None
    trace: TraceData | None = None
    links: list[LinkStat] | None = None  # communication_matrix.json totals per link
    # each collective's element count and data type (database export); None: not recorded
    collective_sizes: list[CollectiveSize] | None = None
    # AI Core frequency samples in MHz (the database export's AICORE_FREQ); None: not recorded
    aicore_freq_mhz: list[float] | None = None
    # torch_npu's GC detection (profiler_info's gc_detect_threshold, ms): the collections
    # longer than it are in trace_view.json; gc_detect_off: the profile says it was not set
    gc_detect_ms: float | None = None
    gc_detect_off: bool = False
    inputs: list[Path] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)  # file name -> why it was not read
    # text-export file name -> what was read in its place (a database export's table)
    sources: dict[str, str] = field(default_factory=dict)
    origin: str | None = None  # the single file every fact came from (PyTorch traces)
    device: str | None = None
    device_source: str = ""  # where the device name was read (a trace's deviceProperties, NPU_INFO)
    # the device's AI Core (cube) and vector core counts as the profile records them
    # (PROF_*/device_*/info.json's DeviceInfo ai_core_num, aiv_num); None: not recorded
    ai_cores: int | None = None
    vector_cores: int | None = None
    cores_source: str = ""
    # how the framework was recognised (a directory suffix, a trace's schema)
    framework_source: str = ""
    # the accelerator platform: ascend, cuda or rocm
    platform: str = "ascend"
    # no step markers: the trace is one window and per-step facts are withheld
    stepless: bool = False
    # problems the reader worked around (dropped events, a missing step marker)
    warnings: list[str] = field(default_factory=list)
    # file name -> rows or events dropped because their values could not be right
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.path.name


@dataclass(frozen=True)
class ClusterStepRow:
    """One rank's row of cluster_step_trace_time.csv (msprof-analyze cluster output)."""

    rank: int
    row: StepRow


@dataclass(frozen=True)
class ClusterStage:
    """A Type=stage row of cluster_step_trace_time.csv: a pipeline stage's ranks and times."""

    ranks: tuple[int, ...]
    row: StepRow


@dataclass
class ProfileData:
    """msprof-analyze's cluster output of a profile folder (the ranks are read one by one)."""

    root: Path
    cluster_rows: list[ClusterStepRow] | None = None
    cluster_stages: list[ClusterStage] | None = None
    cluster_source: Path | None = None
    cluster_comm: dict[int, list[CommStep]] | None = None
    cluster_comm_source: Path | None = None
    cluster_links: list[LinkStat] | None = None
    cluster_links_source: Path | None = None
