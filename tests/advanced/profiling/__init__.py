"""Profiling a sharded program: traces, the all-gather a spec put in, and a slower step."""
