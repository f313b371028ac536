"""The services behind each command: orchestration only."""
