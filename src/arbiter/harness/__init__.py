"""Offline runs: run a dataset through a system under test, measure, gate and report."""
