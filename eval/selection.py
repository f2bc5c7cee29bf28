"""Judge-curated preference pairs (the paper's section 6): the judge plays each row's candidates — the one match of a
pair, a tournament for more — its best becomes `chosen` and its worst `rejected`; the picks are scored against the
file's own labels and written as a TRL DPO dataset. `train/select_preferences.py` wires it.

Selection accuracy (Table 6: "how often the model selects the response originally labeled better"): over the rows
whose file names a better response, the share where the judge's `chosen` is one of the originally better: for a
pair, the file's chosen (a binarized row) or the higher-rated; for a set of more, a candidate with the top gold
rating (what UltraFeedback's binarization calls chosen). A row the judge left undecided (a tie or a failure)
counts as wrong; `decided_accuracy` leaves those rows out. Rows whose original ratings all tie are not in it:
`tied_agreement` is how often the judge's chosen equals the file's label on such labelled pairs.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval.judging import VerdictStore
from eval.picks import measured_calls
from eval.preference_sets import PreferenceSet
from eval.settings import VerdictSettings, data_sha256
from openrm.tournament import Arena, Group, RoundRobin, TournamentResult
from plumbing import atomic

ON_TIE = ("drop", "keep_original", "keep")
OUTPUT_FORMATS = ("auto", "standard", "conversational")
PAPER = {"openrm": 75.18, "rm_r1": 68.87}  # Table 6, selection accuracy (%) on UltraFeedback


@dataclass(frozen=True)
class SelectionSettings(VerdictSettings):
    """eval.run's settings plus what changes a selection: a rerun into the same --out must match them all."""

    topology: str
    rating: str
    world_seed: int | None
    predictions_sha256: str | None

    @classmethod
    def of(cls, args: Any) -> SelectionSettings:
        judge = (f"predictions {Path(args.predictions).resolve()} ({args.predictions_format})" if args.predictions
                 else args.judge_id())
        spec = ",".join(f"{k}={v}" for k, v in sorted(args.field_map.items())) or None
        return cls("select_preferences", data_sha256(args.data), args.split, args.seed, spec, args.mode, judge,
                   dict(sorted(args.locations.items())) if args.mode == "tools" else {},
                   args.judge_max_completion_tokens, args.judge_max_new_tokens, None, args.judge_context_policy,
                   args.judge_max_context_tokens, args.topology,
                   args.rating, args.world_seed, data_sha256(args.predictions) if args.predictions else None)


def outcome(result: TournamentResult) -> str:
    """"decided" when the judge told any candidates apart; else "failure" when every match failed, or "tie"."""
    if not np.allclose(result.ranks, result.ranks[0]):
        return "decided"
    played = len(result.matches) + len(result.group_matches)
    return "failure" if played and result.failures == played else "tie"


def choose(result: TournamentResult, seed: int, index: int) -> tuple[int, int, bool]:
    """(chosen, rejected, tied_top): the best and the worst rank; several sharing one → a draw seeded by (seed, row)
    (when every rank is equal, `rejected` is drawn from the others)."""
    rng = np.random.default_rng([seed, index])
    ranks = result.ranks
    top = np.flatnonzero(np.isclose(ranks, ranks.min()))
    chosen = int(rng.choice(top))
    bottom = [int(i) for i in np.flatnonzero(np.isclose(ranks, ranks.max())) if i != chosen]
    return chosen, int(rng.choice(bottom)), len(top) > 1


def select(arena: Arena, topology: Any, rows: Sequence[PreferenceSet], store: VerdictStore, seed: int,
           batch_size: int) -> int:
    """Judge every row without a record in `store` (keyed by row number), `batch_size` rows per arena batch, and
    append one record per row as each batch finishes. Pairs play their one match (a round robin of two); larger
    sets play `topology`. Returns how many rows were judged now."""
    from tqdm.auto import tqdm

    todo = [r for r in rows if r.index not in store]
    with tqdm(total=len(todo), desc="selecting", unit="row") as bar:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            began = time.perf_counter()
            played: dict[int, tuple[str, TournamentResult]] = {}
            pairs = [r for r in batch if len(r.candidates) == 2]
            for topo, mine in ((RoundRobin(), pairs), (topology, [r for r in batch if len(r.candidates) > 2])):
                if mine:
                    results = arena.run_many(topo, [Group(r.question, r.candidates, r.index) for r in mine])
                    played.update((r.index, (topo.name, res)) for r, res in zip(mine, results, strict=True))
            arena.clear_cache()
            seconds = (time.perf_counter() - began) / len(batch)
            records = []
            for r in batch:
                name, res = played[r.index]
                chosen, rejected, tied_top = choose(res, seed, r.index)
                records.append({"index": r.index, "id": r.id, "k": len(r.candidates), "topology": name,
                                "outcome": outcome(res), "chosen": chosen, "rejected": rejected,
                                "tied_top": tied_top, "scores": [round(float(x), 6) for x in res.scores],
                                "judge_calls": measured_calls(res, arena.pairwise.orders), "ties": res.ties,
                                "failures": res.failures, "seconds": round(seconds, 4)})
            store.add(records)
            bar.update(len(batch))
    return len(todo)


def _share(hits: Sequence[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def _accuracy(played: Sequence[tuple[PreferenceSet, dict]]) -> dict[str, Any]:
    ordered = [(s, r) for s, r in played if s.ordered]
    decided = [(s, r) for s, r in ordered if r["outcome"] == "decided"]
    hits = [r["outcome"] == "decided" and r["chosen"] in s.best for s, r in ordered]
    return {"n": len(ordered), "correct": sum(hits), "accuracy": _share(hits), "decided": len(decided),
            "decided_accuracy": _share([r["chosen"] in s.best for s, r in decided])}


def selection_metrics(rows: Sequence[PreferenceSet], records: dict[int, dict]) -> dict[str, Any]:
    """Selection accuracy (see the module docstring) for all rows, pairs and larger sets; for sets, also how often
    `rejected` is an originally worst candidate and how often chosen is rated above rejected; agreement on tied
    pairs; the judge's ties, failures and calls."""
    played = [(s, records[s.index]) for s in rows if s.index in records]
    sets = [(s, r) for s, r in played if len(s.candidates) > 2]
    decided_sets = [(s, r) for s, r in sets if s.ordered and r["outcome"] == "decided"]
    tied = [(s, r) for s, r in played if s.tied and s.labelled is not None]
    tied_decided = [(s, r) for s, r in tied if r["outcome"] == "decided"]
    rated_apart = [(s, r) for s, r in decided_sets if s.ratings[r["chosen"]] != s.ratings[r["rejected"]]]
    outcomes = Counter(r["outcome"] for _, r in played)
    return {
        "rows": len(played), **_accuracy(played),
        "pairs": _accuracy([(s, r) for s, r in played if len(s.candidates) == 2]),
        "sets": {**_accuracy(sets),
                 "rejected_accuracy": _share([r["rejected"] in s.worst for s, r in decided_sets]),
                 "order_accuracy": _share([s.ratings[r["chosen"]] > s.ratings[r["rejected"]] for s, r in rated_apart]),
                 "order_n": len(rated_apart)},
        "tied_pairs": len(tied), "tied_agreement": _share([r["chosen"] == s.labelled for s, r in tied_decided]),
        "tied_decided": len(tied_decided), "tied_unlabelled": sum(s.tied and s.labelled is None for s, _ in played),
        "unlabelled": sum(not s.best for s, _ in played),
        "outcomes": {k: outcomes[k] for k in ("decided", "tie", "failure")},
        "match_ties": sum(r["ties"] for _, r in played), "match_failures": sum(r["failures"] for _, r in played),
        "tied_top": sum(r["tied_top"] and r["outcome"] == "decided" for _, r in played),
        "judge_calls": sum(r["judge_calls"] for _, r in played),
        "judge_seconds": round(sum(r["seconds"] for _, r in played), 3),
    }


def original_pair(row: PreferenceSet, seed: int) -> tuple[int, int] | None:
    """The file's own (chosen, rejected): the labelled or top-rated one and a lowest-rated one (a seeded draw among
    equals); None when the file names no better response."""
    if not row.ordered:
        return None
    rng = np.random.default_rng([seed, row.index, 1])
    return int(rng.choice(row.best)), int(rng.choice(row.worst))


def dpo_row(row: PreferenceSet, chosen: int, rejected: int, conversational: bool) -> dict[str, Any]:
    """One TRL preference example: plain text, or chat messages (prompt = the conversation, chosen/rejected = one
    assistant message each)."""
    if not conversational:
        return {"id": row.id, "prompt": row.question, "chosen": row.candidates[chosen],
                "rejected": row.candidates[rejected]}
    prompt = list(row.messages) if row.messages else [{"role": "user", "content": row.question}]
    return {"id": row.id, "prompt": prompt, "chosen": [{"role": "assistant", "content": row.candidates[chosen]}],
            "rejected": [{"role": "assistant", "content": row.candidates[rejected]}]}


def curate(rows: Sequence[PreferenceSet], records: dict[int, dict], on_tie: str, conversational: bool,
           seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The DPO rows and what became of each judged row. Decided rows take the judge's pair; an undecided one (a tie
    or a failure) is dropped, kept with the file's own pair (`keep_original`; dropped when the file has none), or
    kept with the judge's seeded draw (`keep`)."""
    if on_tie not in ON_TIE:
        raise ValueError(f"on_tie must be one of {ON_TIE}, got {on_tie!r}")
    out, actions, agree = [], Counter(), []
    for row in rows:
        record = records.get(row.index)
        if record is None:
            continue
        pair: tuple[int, int] | None = (record["chosen"], record["rejected"])
        if record["outcome"] == "decided":
            actions["judge's pair"] += 1
        elif on_tie == "drop":
            pair = None
            actions[f"dropped ({record['outcome']})"] += 1
        elif on_tie == "keep_original":
            pair = original_pair(row, seed)
            actions[f"kept original ({record['outcome']})" if pair else
                    f"dropped ({record['outcome']}, no original order)"] += 1
        else:
            actions[f"kept the judge's draw ({record['outcome']})"] += 1
        if pair is not None:
            out.append(dpo_row(row, *pair, conversational))
            if row.ordered:
                agree.append(pair[0] in row.best)
    summary = {"pairs": len(out), "actions": dict(actions.most_common()), "chosen_is_original_best": _share(agree),
               "chosen_is_original_best_n": len(agree)}
    return out, summary


def save_pairs(pairs: list[dict[str, Any]], path: Path) -> None:
    """Save the DPO rows as an HF dataset folder, replacing an older one only once the new one is complete."""
    from datasets import Dataset

    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    Dataset.from_list(pairs).save_to_disk(str(tmp))
    shutil.rmtree(path, ignore_errors=True)
    tmp.replace(path)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.2f}"


def markdown(report: dict[str, Any]) -> str:
    m, rows, o = report["selection"], report["rows"], report["output"]
    lines = [f"# Preference selection — {report['judge']} ({report['mode']})", "",
             f"- data: `{report['data']}`; {rows['sets']} rows {rows['formats']}; gold for UltraFeedback rows: "
             f"`{report['rating']}`; sets of more than two: {report['topology']} (seed {report['seed']})",
             f"- skipped rows: {rows['skipped_rows'] or 'none'}"
             + "".join(f"\n  - {s['where']}: {s['reason']}" for s in report["skipped_first"]),
             f"- dropped candidates (not judged): {rows['dropped_candidates'] or 'none'}",
             f"- adjusted (judged as text / scores set aside): {rows['adjusted_candidates'] or 'none'}", "",
             "| rows | selection acc. (%) | correct / n | decided acc. (%) | decided | paper OpenRM | paper RM-R1 |",
             "|---|---|---|---|---|---|---|"]
    for name, part in (("all", m), ("pairs", m["pairs"]), ("sets (> 2)", m["sets"])):
        if part["n"] or name == "all":
            lines.append(f"| {name} | {_pct(part['accuracy'])} | {part['correct']} / {part['n']} "
                         f"| {_pct(part['decided_accuracy'])} | {part['decided']} "
                         f"| {PAPER['openrm'] if name == 'all' else ''} | {PAPER['rm_r1'] if name == 'all' else ''} |")
    lines += ["", "Selection accuracy: the judge's chosen is an originally better response (a pair: the file's chosen "
              "or the higher-rated; a larger set: a top-rated one); an undecided row counts as wrong, decided "
              "accuracy leaves those out. The paper's numbers are on UltraFeedback with its own judges.", ""]
    if m["sets"]["n"]:
        lines.append(f"- sets: rejected is an originally worst candidate in {_pct(m['sets']['rejected_accuracy'])} % "
                     f"of decided sets; chosen rated above rejected in {_pct(m['sets']['order_accuracy'])} % "
                     f"of {m['sets']['order_n']} whose picks are rated apart")
    lines += [f"- pairs whose original scores tie: {m['tied_pairs']} (judge agrees with the file's chosen label on "
              f"{_pct(m['tied_agreement'])} % of {m['tied_decided']} decided); rated sets tied throughout: "
              f"{m['tied_unlabelled']}; rows without any label: {m['unlabelled']}",
              f"- judge outcomes: {m['outcomes']['decided']} rows decided, {m['outcomes']['tie']} ties, "
              f"{m['outcomes']['failure']} failures "
              f"(matches: {m['match_ties']} ties, {m['match_failures']} failures; in {m['tied_top']} decided rows "
              "chosen was drawn among equals at the top)",
              f"- --on_tie {report['on_tie']}: {o['actions']}",
              f"- output: {o['pairs']} pairs ({o['format']}) in `{o['path']}`; chosen is originally better in "
              f"{_pct(o['chosen_is_original_best'])} % of {o['chosen_is_original_best_n']} labelled ones",
              f"- judge calls: {m['judge_calls']} (pairwise items; a two-order judge runs both orders in each), "
              f"{m['judge_calls'] / max(m['rows'], 1):.2f} per row; judged now: {report['judged_now']} rows",
              f"- wall time: {report['wall_seconds']:.2f} s this run; {m['judge_seconds']:.2f} s judging in all "
              "(resumed runs included)"]
    return "\n".join(lines) + "\n"


def write_report(report: dict[str, Any], out: Path) -> None:
    atomic.write_json(out / "report.json", report, ensure_ascii=False)
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
