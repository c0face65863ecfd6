"""Benchmarks (`trinity bench …`): timings that live outside the test suite."""
