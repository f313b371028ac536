"""Synthetic torch_npu profiles with known ground truth, for tests, examples and benchmarks."""

from tests.synth.scenario import PRESETS, Scenario
from tests.synth.writer import Written, write_cluster, write_pipeline, write_profile

__all__ = ["PRESETS", "Scenario", "Written", "write_cluster", "write_pipeline", "write_profile"]
