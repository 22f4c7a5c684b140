"""Unit tests of the benchmark harness (benchmarks/hdfsrdma_bench):
parsing, statistics, targets and results, without a cluster or network.

    python3 -m unittest discover -s benchmarks/tests -t benchmarks
"""
