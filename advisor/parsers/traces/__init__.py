"""The trace engine: Chrome trace-event JSON read out of core, whatever the profiler."""
