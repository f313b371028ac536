"""Stand-in for MindSpeed-LLM's train_fsdp2.py: simulates the training run its config, command
line and environment describe (see response.yaml and README.md) instead of training."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simjob.job import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], dict(os.environ), Path.cwd()))
