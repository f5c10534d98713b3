"""Benchmarks: `python -m bench` runs every bench/bench_*.py module (not part of the test suite)."""
