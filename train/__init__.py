"""Entrypoints: the quickstart, GRPO training of the judge, judge export. Only these read argv."""
