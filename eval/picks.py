"""Best-of-N picks with a match judge: each prompt's N candidates play a tournament (any topology of
`openrm.tournament`), the best-ranked candidate is the pick, and picks are scored against the gold ratings (`run`,
which `python -m eval.best_of_n` drives; `measured_calls` also counts eval.selection's judge calls). Writes
picks.jsonl (one row per prompt and topology, appended batch by batch; a rerun skips the rows there and is refused
when run.json's settings differ), results.json and report.md (the topologies side by side).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval.candidate_sets import RATINGS, CandidateSet, load_candidate_sets
from eval.judging import VerdictStore
from eval.settings import VerdictSettings, data_sha256
from openrm.judge_spec import JudgeSpec
from openrm.tournament import TOPOLOGIES, Arena, Group, PairwiseGroupJudge, TournamentResult
from plumbing import atomic
from plumbing.arguments import Collect

logger = logging.getLogger(__name__)


@dataclass
class BestOfNArguments(JudgeSpec):
    data: str = field(metadata={"help": "candidate sets: our JSONL (id, question, candidates, ratings) or "
                                        "UltraFeedback-shaped rows (instruction, completions); JSON/JSONL/parquet"})
    out: str = field(metadata={"help": "output folder (picks.jsonl, run.json, results.json, report.md)"})
    topologies: list[str] = field(default_factory=lambda: list(TOPOLOGIES), metadata={
        "help": f"topologies to compare, any of {sorted(TOPOLOGIES)}; repeat or list", "action": Collect})
    budget: float | None = field(default=None, metadata={
        "help": "judge calls per prompt: a topology expected to need more is skipped (listed in the report)"})
    rating: str = field(default="overall_score", metadata={"help": f"UltraFeedback gold rating, one of {RATINGS}"})
    split: str | None = field(default=None, metadata={"help": "split of a DatasetDict folder"})
    limit: int | None = field(default=None, metadata={"help": "only the first N usable candidate sets"})
    seed: int = field(default=0, metadata={"help": "seeds every tournament and the tie-break among top ranks"})
    batch_size: int = field(default=16, metadata={"help": "prompts per arena batch (and per checkpoint)"})

    def __post_init__(self):
        super().__post_init__()
        if not self.judge or self.judge == "none":
            raise ValueError("--judge is required: an exported judge folder or an installed match judge kind")
        unknown = [t for t in self.topologies if t not in TOPOLOGIES]
        if unknown or not self.topologies:
            raise ValueError(f"--topologies must name some of {sorted(TOPOLOGIES)}, got {self.topologies}")
        self.topologies = list(dict.fromkeys(self.topologies))
        if self.rating not in RATINGS:
            raise ValueError(f"--rating must be one of {RATINGS}, got {self.rating!r}")
        if self.budget is not None and self.budget <= 0:
            raise ValueError("--budget must be > 0")
        if self.batch_size < 1:
            raise ValueError("--batch_size must be >= 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("--limit must be >= 1")


@dataclass(frozen=True)
class BestOfNSettings(VerdictSettings):
    """eval.run's settings (the judge and its budgets, the data file's hash, the seed) plus what decides a pick's
    gold: a rerun into the same --out must match them all."""

    rating: str
    world_seed: int | None

    @classmethod
    def of(cls, args: BestOfNArguments) -> BestOfNSettings:
        return cls("best_of_n", data_sha256(args.data), args.split, args.seed, None, args.mode, args.judge_id(),
                   dict(sorted(args.locations.items())) if args.mode == "tools" else {},
                   args.judge_max_completion_tokens, args.judge_max_new_tokens, None, args.judge_context_policy,
                   args.judge_max_context_tokens, args.rating, args.world_seed)


def expected_calls(topology: Any, ks: Sequence[int], orders: int) -> float:
    """Mean pairwise judge calls per prompt: `matches(k)` items per prompt, twice for a one-order judge (the arena
    shows each match in both orders); multi_round's group calls each cost all their pairs. An upper bound where a
    topology replays a pair (the arena's cache answers the repeat)."""
    per = 1 if orders == 2 else 2
    if topology.name == "multi_round":
        per *= topology.group_size * (topology.group_size - 1) // 2
    return float(np.mean([topology.matches(k) * per for k in ks]))


def measured_calls(result: TournamentResult, orders: int) -> int:
    """Pairwise items the judge answered for one prompt, a group judge's pairs included."""
    pairs = sum(len(g.members) * (len(g.members) - 1) // 2 for g in result.group_matches if not g.cached)
    return result.judge_calls + pairs * (1 if orders == 2 else 2)


def pick(result: TournamentResult, seed: int, index: int) -> tuple[int, bool]:
    """The best-ranked candidate; several sharing the best rank → a draw seeded by (seed, prompt row)."""
    top = np.flatnonzero(np.isclose(result.ranks, result.ranks.min()))
    if len(top) == 1:
        return int(top[0]), False
    return int(np.random.default_rng([seed, index]).choice(top)), True


def play(arena: Arena, topology: Any, sets: Sequence[CandidateSet], store: VerdictStore, seed: int,
         batch_size: int) -> None:
    """Play `topology` on every set without a row in `store`, appending one pick row per set batch by batch."""
    from tqdm.auto import tqdm

    todo = [s for s in sets if (topology.name, s.id) not in store]
    if len(todo) < len(sets):
        logger.info("%s: %d of %d prompts already picked in %s", topology.name, len(sets) - len(todo), len(sets),
                    store.path)
    orders = arena.pairwise.orders
    with tqdm(total=len(todo), desc=f"best-of-N ({topology.name})", unit="prompt") as bar:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            began = time.perf_counter()
            results = arena.run_many(topology, [Group(s.question, s.candidates, s.index) for s in batch])
            arena.clear_cache()  # every prompt and topology pays for its own matches
            seconds = (time.perf_counter() - began) / len(batch)
            rows = []
            for s, r in zip(batch, results, strict=True):
                chosen, tied = pick(r, seed, s.index)
                best = s.best
                rows.append({"id": s.id, "topology": topology.name, "pick": chosen,
                             "pick_rating": None if s.ratings is None else s.ratings[chosen], "gold_best": best,
                             "correct": None if s.ratings is None else chosen in best, "tied_top": tied,
                             "k": len(s.candidates), "judge_calls": measured_calls(r, orders), "ties": r.ties,
                             "failures": r.failures, "scores": [round(float(x), 6) for x in r.scores],
                             "seconds": round(seconds, 4)})
            store.add(rows)
            bar.update(len(batch))


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def topology_metrics(sets: Sequence[CandidateSet], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pick accuracy (any gold-best pick is right), strict accuracy over sets with one gold best, mean gold rating
    of the pick against a random pick (its exact expectation: the set's mean) and the oracle (the set's max)."""
    by_id = {r["id"]: r for r in rows}
    played = [(s, by_id[s.id]) for s in sets if s.id in by_id]
    rated = [(s, r) for s, r in played if s.ratings is not None]
    unique = [(s, r) for s, r in rated if len(s.best) == 1]
    pick_rating = _mean([s.ratings[r["pick"]] for s, r in rated])
    random_rating = _mean([float(np.mean(s.ratings)) for s, _ in rated])
    oracle_rating = _mean([max(s.ratings) for s, _ in rated])
    spread = None if pick_rating is None else oracle_rating - random_rating
    return {
        "prompts": len(played), "rated": len(rated),
        "accuracy": _mean([r["pick"] in s.best for s, r in rated]),
        "strict_accuracy": _mean([r["pick"] in s.best for s, r in unique]), "strict_n": len(unique),
        "random_accuracy": _mean([len(s.best) / len(s.candidates) for s, _ in rated]),
        "pick_rating": pick_rating, "random_rating": random_rating, "oracle_rating": oracle_rating,
        "gap_closed": (pick_rating - random_rating) / spread if spread else None,
        "judge_calls_per_prompt": _mean([r["judge_calls"] for _, r in played]),
        "ties": sum(r["ties"] for _, r in played), "failures": sum(r["failures"] for _, r in played),
        "tied_top_picks": sum(r["tied_top"] for _, r in played),
        "wall_seconds": round(sum(r["seconds"] for _, r in played), 3),
    }


def run(args: BestOfNArguments, pairwise: Any = None) -> dict[str, Any]:
    """Load → judge → play each topology within the budget → score → write. `pairwise`: a ready match judge
    (tests), used instead of building one from `args`."""
    out = Path(args.out)
    loaded = load_candidate_sets(args.data, args.rating, args.split, args.limit)
    sets = loaded.sets
    store = VerdictStore(out / "picks.jsonl", key=("topology", "id"))
    BestOfNSettings.of(args).check_or_write(out, has_verdicts=len(store) > 0)
    close = None
    if pairwise is None:
        pairwise, close = args.open_match([{"question": s.question} for s in sets])
    arena = Arena(pairwise=pairwise, group=PairwiseGroupJudge(pairwise), seed=args.seed)
    ks = [len(s.candidates) for s in sets]
    results: dict[str, Any] = {"data": args.data, "judge": args.judge, "mode": args.mode,
                               "rating": args.rating, "seed": args.seed, "budget": args.budget,
                               "judge_orders": pairwise.orders, "candidate_sets": loaded.summary(),
                               "gold_top_ties": sum(s.ratings is not None and len(s.best) > 1 for s in sets),
                               "topologies": {}, "skipped_topologies": {}}
    try:
        for name in args.topologies:
            topology = TOPOLOGIES[name]()
            expected = expected_calls(topology, ks, pairwise.orders)
            if args.budget is not None and expected > args.budget:
                logger.info("%s: %.2f expected judge calls per prompt > budget %g: skipped", name, expected,
                            args.budget)
                results["skipped_topologies"][name] = {"expected_calls_per_prompt": expected}
                continue
            play(arena, topology, sets, store, args.seed, args.batch_size)
            metrics = topology_metrics(sets, [r for (t, _), r in store.records.items() if t == name])
            results["topologies"][name] = {**metrics, "expected_calls_per_prompt": expected}
    finally:
        if close is not None:
            close()
    write(results, out)
    return results


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{100 * x:.2f}" if pct else f"{x:.2f}"
    return str(x)


def markdown(results: dict[str, Any]) -> str:
    c = results["candidate_sets"]
    budget = "none" if results["budget"] is None else f"{results['budget']:g} judge calls per prompt"
    lines = [f"# best-of-N — {results['judge']} ({results['mode']})", "",
             f"- data: `{results['data']}`; {c['sets']} candidate sets {c['formats']}; gold: "
             + ", ".join("`ratings`" if f == "jsonl" else f"`{results['rating']}`" for f in c["formats"])
             + f" ({c['sets_without_ratings']} sets without ratings: picks only)",
             f"- skipped rows: {c['skipped_rows'] or 'none'}",
             f"- dropped candidates (not judged): {c['dropped_candidates'] or 'none'}",
             f"- adjusted candidates (judged as text): {c['adjusted_candidates'] or 'none'}",
             f"- gold_top_ties: {results['gold_top_ties']} sets share their top rating (a pick of any is correct; "
             "strict accuracy counts only sets with one gold best)",
             f"- seed {results['seed']}; judge calls = pairwise items sent (each runs {results['judge_orders']} "
             "presentation order(s) inside the judge); a tie among the best ranks is broken by a seeded draw",
             f"- budget: {budget} (a topology expected to need more is skipped; expected = `matches(k)`, repeats "
             "the cache answers included, so a bracket often needs fewer)",
             "", "| topology | pick acc. (%) | strict acc. (%) | pick rating | random (exp.) | oracle | gap closed (%) "
             "| calls/prompt | expected | ties | failures | tied-top picks | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in results["topologies"].items():
        lines.append(f"| {name} | {_fmt(m['accuracy'], True)} | {_fmt(m['strict_accuracy'], True)} "
                     f"| {_fmt(m['pick_rating'])} | {_fmt(m['random_rating'])} | {_fmt(m['oracle_rating'])} "
                     f"| {_fmt(m['gap_closed'], True)} | {_fmt(m['judge_calls_per_prompt'])} "
                     f"| {_fmt(m['expected_calls_per_prompt'])} | {m['ties']} | {m['failures']} "
                     f"| {m['tied_top_picks']} | {_fmt(m['wall_seconds'])} |")
    for name, s in results["skipped_topologies"].items():
        lines.append(f"| {name} | skipped: {s['expected_calls_per_prompt']:.2f} expected calls/prompt > budget "
                     "| | | | | | | | | | | |")
    first = next(iter(results["topologies"].values()), None)
    if first and first["random_accuracy"] is not None:
        lines += ["", f"A random pick is right {_fmt(first['random_accuracy'], True)} % of the time (exact "
                  f"expectation over {first['rated']} rated sets)."]
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any], out: Path) -> None:
    atomic.write_json(out / "results.json", results)
    (out / "report.md").write_text(markdown(results), encoding="utf-8")
