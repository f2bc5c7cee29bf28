"""Judge-curated DPO preference pairs, as `train/select_preferences.py` runs them: the arguments, and one run that
loads the rows, judges those not yet judged (resumable), curates chosen/rejected and saves the dataset and report.

    report = run(SelectArguments(data="runs/prefs/toy.jsonl", judge="toy-oracle", world_seed=0, out="runs/prefs/sel"))
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.candidate_sets import RATINGS
from eval.predictions import PREDICTION_PRESETS
from eval.selection import ON_TIE, OUTPUT_FORMATS
from openrm.judge_spec import JudgeSpec
from openrm.tournament import TOPOLOGIES
from plumbing.arguments import Collect, parse_pairs

logger = logging.getLogger("openrm.select_preferences")


@dataclass
class SelectArguments(JudgeSpec):
    data: str = field(metadata={"help": "rows of a prompt and >= 2 responses: UltraFeedback raw, binarized "
                                        "(prompt/chosen/rejected) or candidate JSONL; JSON/JSONL/parquet/HF folder"})
    out: str = field(metadata={"help": "output folder (selections.jsonl, run.json, dataset/, report.json/.md)"})
    fields: list[str] = field(default_factory=list, metadata={
        "help": "NAME=FIELD mapping for other files: prompt, chosen, rejected, score_chosen, score_rejected, id "
                "(pairs) or prompt, candidates, ratings, id (sets)", "action": Collect})
    predictions: str | None = field(default=None, metadata={
        "help": "a predictions file as the judge (pairs only): per row id, A = the first candidate wins"})
    predictions_format: str = field(default="openrm", metadata={"help": f"one of {sorted(PREDICTION_PRESETS)}"})
    topology: str = field(default="round_robin", metadata={
        "help": f"tournament for rows of > 2 candidates (best → chosen, worst → rejected): {sorted(TOPOLOGIES)}"})
    on_tie: str = field(default="drop", metadata={
        "help": f"a row the judge leaves undecided (tie or failure): one of {ON_TIE} (keep: the judge's seeded draw)"})
    output_format: str = field(default="auto", metadata={
        "help": f"{OUTPUT_FORMATS}: auto writes chat messages when any input row was chat messages"})
    rating: str = field(default="overall_score", metadata={"help": f"UltraFeedback gold rating, one of {RATINGS}"})
    split: str | None = field(default=None, metadata={"help": "split of a DatasetDict folder (e.g. train_prefs)"})
    limit: int | None = field(default=None, metadata={"help": "only the first N usable rows"})
    seed: int = field(default=0, metadata={"help": "seeds tournaments and draws among equal ranks"})
    batch_size: int = field(default=16, metadata={"help": "rows per judge batch (and per checkpoint)"})

    def __post_init__(self):
        super().__post_init__()
        if bool(self.judge) == bool(self.predictions) or self.judge == "none":
            raise ValueError("give exactly one of --judge (a judge folder or match judge kind) and --predictions")
        self.field_map = parse_pairs(self.fields, "--fields")
        choices = {"topology": TOPOLOGIES, "on_tie": ON_TIE, "output_format": OUTPUT_FORMATS, "rating": RATINGS,
                   "predictions_format": PREDICTION_PRESETS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"--{name} must be one of {sorted(allowed)}, got {getattr(self, name)!r}")
        if self.batch_size < 1:
            raise ValueError("--batch_size must be >= 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("--limit must be >= 1")

    @property
    def mode(self) -> str:
        """predictions, or the judge's own mode: what a run record stores."""
        return "predictions" if self.predictions else super().mode


def match_judge(args: SelectArguments, rows: Sequence[Any]):
    """(pairwise match judge, close) for `args`."""
    if args.predictions:
        from eval.predictions import PredictionJudge, read_predictions

        if any(len(r.candidates) != 2 for r in rows):
            raise ValueError("a predictions file judges pairs: some rows have more than 2 candidates")
        read = read_predictions(args.predictions, PREDICTION_PRESETS[args.predictions_format])
        judge = PredictionJudge(read.by_id, [(r.id, r.question, *r.candidates) for r in rows])
        if judge.missing:
            logger.warning("%d rows have no prediction (first: %r): failures", len(judge.missing), judge.missing[0])
        return judge, None
    return args.open_match([{"question": r.question} for r in rows])


def run(args: SelectArguments, pairwise: Any = None) -> dict[str, Any]:
    """Load → judge the rows not yet judged → curate → save the dataset and the report. `pairwise`: a ready match
    judge (tests), used instead of building one from `args`."""
    from eval.judging import VerdictStore
    from eval.preference_sets import load_preference_sets
    from eval.selection import SelectionSettings, curate, save_pairs, select, selection_metrics, write_report
    from openrm.tournament import Arena, PairwiseGroupJudge

    began, out = time.perf_counter(), Path(args.out)
    loaded = load_preference_sets(args.data, args.rating, args.split, args.limit, args.field_map)
    rows = loaded.sets
    store = VerdictStore(out / "selections.jsonl", key="index")
    SelectionSettings.of(args).check_or_write(out, has_verdicts=len(store) > 0)
    close = None
    if pairwise is None:
        pairwise, close = match_judge(args, rows)
    arena = Arena(pairwise=pairwise, group=PairwiseGroupJudge(pairwise), seed=args.seed)
    try:
        judged = select(arena, TOPOLOGIES[args.topology](), rows, store, args.seed, args.batch_size)
    finally:
        if close is not None:
            close()
    chat = args.output_format == "conversational" or (args.output_format == "auto"
                                                      and any(r.messages for r in rows))
    pairs, output = curate(rows, store.records, args.on_tie, chat, args.seed)
    if not pairs:
        raise ValueError(f"no pairs left to write (--on_tie {args.on_tie}: {output['actions']})")
    save_pairs(pairs, out / "dataset")
    report = {"data": args.data, "judge": args.judge or args.predictions, "mode": args.mode,
              "topology": args.topology, "rating": args.rating, "seed": args.seed, "on_tie": args.on_tie,
              "rows": loaded.summary(), "skipped_first": [vars(s) for s in loaded.skipped[:5]],
              "selection": selection_metrics(rows, store.records), "judged_now": judged,
              "output": {**output, "path": str(out / "dataset"), "format": "conversational" if chat else "standard"},
              "wall_seconds": round(time.perf_counter() - began, 3)}
    write_report(report, out)
    return report
