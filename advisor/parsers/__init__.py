"""Readers of profiler output and training logs. Each turns files into plain data."""
