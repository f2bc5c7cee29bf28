"""Experiments: the scripts that reproduce the project's claims about learning and quality (does GRPO teach the
judge to search, does its selection move a model, what a hostile candidate earns), each run as
`python -m experiments.NAME`. Their results are the fragments in experiments/results/ (tables rendered from a run's
JSON in experiments/results/data/), assembled into bench/RESULTS.md by `python -m plumbing.results`. Speed and
memory live in bench/."""
