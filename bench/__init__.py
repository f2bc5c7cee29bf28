"""Benchmarks: speed and memory of the parts (retrieval, rollout, parsing, data synthesis, tournaments), each run as
`python -m bench.NAME`, numbers in bench/RESULTS.md. The modules without a command line (corpus, memory, overhead,
pareto, plaid, results, search_speed, stopwatch) do the measuring and build the tables behind the scripts. The scripts
that reproduce learning and quality claims live in experiments/."""
