"""Experiments: the scripts that reproduce the project's claims about learning and quality (does GRPO teach the
judge to search, does its selection move a model, what a hostile candidate earns), each run as
`python -m experiments.NAME` with its results in bench/RESULTS.md. Speed and memory live in bench/."""
