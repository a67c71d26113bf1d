"""Benchmarks (not tests: they measure wall time). `python -m bench` runs the index speed benchmark."""
