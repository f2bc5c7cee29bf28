"""Benchmarks: speed and memory of the parts (retrieval, rollout, parsing, data synthesis, tournaments), each run as
`python -m bench.NAME`, numbers in bench/RESULTS.md. The scripts that reproduce learning and quality claims live in
experiments/."""
