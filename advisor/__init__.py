"""advisor: reads training profiles, diagnoses the bottleneck, proposes one next change."""

__version__ = "0.1.0"
