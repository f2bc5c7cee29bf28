"""The names of the records a run leaves beside what it made: one pattern for the whole tree.

    <stage folder>/stage.json            the inputs a cached stage was made from (toy.stages reuses the folder while
                                         they match; a quickstart's or an experiment's data, warm-up and GRPO stages)
    <model folder>/<trainer>_run.json    what a trainer's run trained with, beside its checkpoints
                                         (openrm_run, dpo_run, policy_run, rubric_generator_run)
    <experiment out>/results.json        an experiment's numbers; results.md its tables (publishable into
                                         bench/RESULTS.md: plumbing.results)
"""

from __future__ import annotations

STAGE = "stage.json"
RESULTS = "results.json"
TABLES = "results.md"


def run_record(trainer: str) -> str:
    """The run record's file name for `trainer` ("dpo" -> "dpo_run.json")."""
    if not trainer.isidentifier():
        raise ValueError(f"trainer name {trainer!r}: letters, digits and '_' only")
    return f"{trainer}_run.json"
