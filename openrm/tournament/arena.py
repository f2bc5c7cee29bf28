"""`Arena`: runs a topology over many groups in lockstep, so every round of every group goes to the judge as ONE
batch; caches match results per (group, pair, order) and logs ties and failures (never a random winner).

    arena = Arena(pairwise=JudgePairwise(judge), seed=0)
    groups = [Group(question, answers, group_id=g) for g, (question, answers) in enumerate(batch)]
    results = arena.run_many(SeededSingleElimination(), groups, step)
    rewards = [rank_z(r) for r in results]

Each group's randomness comes from `numpy.random.SeedSequence([seed, step, group_id])`; nothing global.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from openrm.tournament.judges import GroupJudge, GroupRequest, PairwiseJudge, checked_p, log_invalid
from openrm.tournament.records import (
    GroupMatch,
    GroupRound,
    Match,
    PairRound,
    Standing,
    Status,
    TournamentResult,
    composite,
    ranks_from,
)

logger = logging.getLogger(__name__)

OrderPolicy = Literal["both", "given", "random"]
Request = PairRound | GroupRound
Play = Generator[Request, list, Standing]


class Topology(Protocol):
    name: str

    def play(self, k: int, rng: np.random.Generator) -> Play:
        """Yield one request per round, receive its answers (a `p_i` per pair or the winners per group) and
        return the `Standing`."""
        ...


@dataclass(frozen=True)
class Group:
    question: str
    candidates: tuple[str, ...]
    group_id: int
    rubric: str | None = None


def no_decided_match(matches: Sequence[Match], group_matches: Sequence[GroupMatch]) -> bool:
    """True when a group played matches and the judge decided none of them (every one a failure or a tie)."""
    return (bool(matches) or bool(group_matches)) and not (any(m.status == "decisive" for m in matches)
                                                          or any(g.winners for g in group_matches))


def group_rngs(seed: int, step: int, group_id: int) -> tuple[np.random.Generator, np.random.Generator]:
    """(topology rng, presentation-order rng) of one group at one step: independent streams, so flipping
    presentation orders never shifts the topology's own draws."""
    if min(seed, step, group_id) < 0:
        raise ValueError(f"seed, step and group_id must be >= 0, got {seed}, {step}, {group_id}")
    a, b = np.random.SeedSequence([seed, step, group_id]).spawn(2)
    return np.random.default_rng(a), np.random.default_rng(b)


@dataclass
class _State:
    group: Group
    step: int
    gen: Play
    order_rng: np.random.Generator
    request: Request | None = None
    round: int = -1
    matches: list[Match] = field(default_factory=list)
    group_matches: list[GroupMatch] = field(default_factory=list)
    judge_calls: int = 0
    group_calls: int = 0


class Arena:
    """`pairwise`: the match judge of pairwise topologies; `group`: the group judge of `MultiRound`.
    `orders`: "both" plays each match in both presentation orders (free when the judge already does, as
    `JudgePairwise` does); "random" shows each match once in a seeded random order (Reasoning Arena); "given" as
    the topology lists it. The cache keeps the last `cache_steps` steps; a group round's verdict is keyed by
    (group, members in order, k, the request's `cache_tag`), so a topology can ask again (`MultiRound(fresh_repeats=
    True)`)."""

    def __init__(self, pairwise: PairwiseJudge | None = None, group: GroupJudge | None = None,
                 orders: OrderPolicy = "both", seed: int = 0, cache_steps: int = 1):
        if orders not in ("both", "given", "random"):
            raise ValueError(f"orders must be 'both', 'given' or 'random', got {orders!r}")
        if pairwise is not None and getattr(pairwise, "orders", None) not in (1, 2):
            raise ValueError(f"a pairwise judge must say how many orders an item runs (1 or 2), got "
                             f"{getattr(pairwise, 'orders', None)!r}")
        self.pairwise, self.group, self.orders, self.seed = pairwise, group, orders, seed
        self.cache_steps = cache_steps
        self._cache: dict[int, dict[tuple, object]] = {}

    def clear_cache(self) -> None:
        self._cache.clear()

    def run(self, topology: Topology, question: str, candidates: Sequence[str], step: int = 0, group_id: int = 0,
            rubric: str | None = None) -> TournamentResult:
        return self.run_many(topology, [Group(question, tuple(candidates), group_id, rubric)], step)[0]

    def run_many(self, topology: Topology, groups: Sequence[Group], step: int = 0) -> list[TournamentResult]:
        ids = [g.group_id for g in groups]
        if len(set(ids)) != len(ids):
            raise ValueError("group ids must be distinct within a step (they key the cache and the seeds)")
        self._cache = {s: c for s, c in self._cache.items() if step - self.cache_steps < s <= step}
        results: list[TournamentResult | None] = [None] * len(groups)
        states: dict[int, _State] = {}
        for n, g in enumerate(groups):
            rng, order_rng = group_rngs(self.seed, step, g.group_id)
            state = _State(g, step, topology.play(len(g.candidates), rng), order_rng)
            states[n] = state
            self._advance(n, state, None, topology, states, results, first=True)
        while states:
            pair_jobs = [(n, s) for n, s in states.items() if isinstance(s.request, PairRound)]
            group_jobs = [(n, s) for n, s in states.items() if isinstance(s.request, GroupRound)]
            answers = {**self._play_pairs(pair_jobs), **self._play_groups(group_jobs)}
            for n, answer in answers.items():
                self._advance(n, states[n], answer, topology, states, results)
        return results  # type: ignore[return-value]

    def _advance(self, n: int, state: _State, answer: list | None, topology: Topology, states: dict,
                 results: list, first: bool = False) -> None:
        try:
            state.request = next(state.gen) if first else state.gen.send(answer)
            state.round += 1
        except StopIteration as stop:
            standing: Standing = stop.value
            scores = np.asarray(standing.scores, dtype=float)
            if scores.shape != (len(state.group.candidates),) or not np.all(np.isfinite(scores)):
                raise RuntimeError(f"{topology.name} returned bad scores {scores!r}") from None
            tiebreak = standing.tiebreak
            if no_decided_match(state.matches, state.group_matches):
                # the judge decided nothing (down, unparsable, or tying everything): what is left of a standing
                # is the schedule's (a bye, an opponent's bye under a Buchholz sum), which says nothing about the
                # candidates, so every candidate gets the group's mean score and the group carries no signal
                scores, tiebreak = np.full_like(scores, scores.mean()), None
            orders = getattr(self.pairwise, "orders", 1)
            results[n] = TournamentResult(
                topology.name, len(scores), state.step, state.group.group_id, composite(scores, tiebreak),
                ranks_from(scores, tiebreak), state.matches, state.group_matches, state.judge_calls,
                state.judge_calls * orders, state.group_calls)
            del states[n]

    # --- pairwise rounds ---------------------------------------------------------------------------------

    def _views(self, state: _State, i: int, j: int) -> list[tuple[int, int, bool]]:
        """The (x, y, flip) presentations one match needs; flip: the answer is P(j beats i)."""
        if self.pairwise.orders == 2:  # the judge debiases itself: one canonical item per unordered pair
            return [(min(i, j), max(i, j), i > j)]
        if self.orders == "both":
            return [(i, j, False), (j, i, True)]
        if self.orders == "random" and state.order_rng.random() < 0.5:
            return [(j, i, True)]
        return [(i, j, False)]

    def _play_pairs(self, jobs: list[tuple[int, _State]]) -> dict[int, list[float]]:
        if not jobs:
            return {}
        if self.pairwise is None:
            raise ValueError("this topology plays pairwise matches: give the Arena a pairwise judge")
        plan: dict[int, list[list[tuple[int, int, bool]]]] = {}
        needed: dict[tuple, tuple[int, int, int]] = {}  # cache key -> (job n, x, y)
        for n, s in jobs:
            cache = self._cache.setdefault(s.step, {})
            plan[n] = [self._views(s, i, j) for i, j in s.request.pairs]
            for views in plan[n]:
                for x, y, _ in views:
                    key = (s.group.group_id, x, y)
                    if key not in cache and key not in needed:
                        needed[key] = (n, x, y)
                        s.judge_calls += 1
        fresh = dict(zip(needed, self._ask_pairwise(needed, dict(jobs)), strict=True))
        out = {}
        for n, s in jobs:
            cache = self._cache[s.step]
            ps = []
            for (i, j), views in zip(s.request.pairs, plan[n], strict=True):
                keys = [(s.group.group_id, x, y) for x, y, _ in views]
                cached = all(k not in fresh for k in keys)
                raw = [fresh[k] if k in fresh else cache[k] for k in keys]
                raw = [None if r is _ERROR else r for r in raw]
                votes = [0.5 if r is None else (1 - r if flip else r)
                         for r, (_, _, flip) in zip(raw, views, strict=True)]
                p = sum(votes) / len(votes)
                status: Status = ("failure" if all(r is None for r in raw)
                                  else "tie" if math.isclose(p, 0.5, abs_tol=1e-12) else "decisive")
                shown = tuple((x, y, r) for (x, y, _), r in zip(views, raw, strict=True))
                s.matches.append(Match(s.round, s.request.phase, i, j, p, status, cached, shown))
                ps.append(p)
            out[n] = ps
        cache_of = {n: self._cache[s.step] for n, s in jobs}
        for key, value in fresh.items():
            if value is not _ERROR:
                cache_of[needed[key][0]][key] = value
        self._log_round(jobs)
        return out

    def _ask_pairwise(self, needed: dict[tuple, tuple[int, int, int]], states: dict[int, _State]) -> list:
        if not needed:
            return []
        items = [(states[n].group.question, states[n].group.candidates[x], states[n].group.candidates[y])
                 for n, x, y in needed.values()]
        try:
            if getattr(self.pairwise, "reads_rubric", False):  # a rubric-guided pairwise judge: each group's rubric
                rubrics = [states[n].group.rubric for n, _, _ in needed.values()]
                raw = list(self.pairwise.compare_many(items, rubrics=rubrics))
            else:
                raw = list(self.pairwise.compare_many(items))
            if len(raw) != len(items):
                raise RuntimeError(f"judge answered {len(raw)} of {len(items)} items")
        except Exception:
            logger.exception("pairwise judge failed on a batch of %d items: all scored as failures (0.5)",
                             len(items))
            return [_ERROR] * len(items)
        out = [checked_p(p) for p in raw]  # validated per item: a bad answer is that match's failure, not the step's
        log_invalid(raw, out, "pairwise judge")
        return out

    def _log_round(self, jobs: list[tuple[int, _State]]) -> None:
        counts = {"tie": 0, "failure": 0}
        total = 0
        for _, s in jobs:
            new = s.matches[-len(s.request.pairs):] if s.request.pairs else []
            total += len(new)
            for m in new:
                if m.status in counts:
                    counts[m.status] += 1
        if counts["failure"] or counts["tie"]:  # ties are routine (a trainer logs their rate); failures are not
            logger.log(logging.INFO if counts["failure"] else logging.DEBUG,
                       "round of %d matches over %d groups: %d ties, %d judge failures (both scored 0.5)",
                       total, len(jobs), counts["tie"], counts["failure"])

    # --- group rounds ------------------------------------------------------------------------------------

    def _play_groups(self, jobs: list[tuple[int, _State]]) -> dict[int, list[tuple[int, ...]]]:
        if not jobs:
            return {}
        if self.group is None:
            raise ValueError("this topology plays group matches: give the Arena a group judge")
        needed: dict[tuple, GroupRequest] = {}
        owner: dict[tuple, int] = {}  # cache key -> step
        for _, s in jobs:
            cache = self._cache.setdefault(s.step, {})
            for members in s.request.groups:
                key = (s.group.group_id, "group", members, s.request.k, s.request.cache_tag)
                if key not in cache and key not in needed:
                    g = s.group
                    needed[key] = GroupRequest(g.question, g.rubric, tuple(g.candidates[m] for m in members),
                                               s.request.k)
                    owner[key] = s.step
                    s.group_calls += 1
        fresh: dict[tuple, tuple[int, ...]] = {}
        if needed:
            try:
                answers = list(self.group.select_winners_many(list(needed.values())))
                if len(answers) != len(needed):
                    raise RuntimeError(f"group judge answered {len(answers)} of {len(needed)} requests")
            except Exception:
                logger.exception("group judge failed on a batch of %d groups: no winners", len(needed))
                answers = [[]] * len(needed)
            for (key, req), winners in zip(needed.items(), answers, strict=True):
                fresh[key] = _checked_winners(winners, len(req.candidates), req.k)
        out = {}
        failures = 0
        for n, s in jobs:
            cache = self._cache[s.step]
            got = []
            for members in s.request.groups:
                key = (s.group.group_id, "group", members, s.request.k, s.request.cache_tag)
                local = fresh[key] if key in fresh else cache[key]
                winners = tuple(members[w] for w in local)
                failures += not winners
                s.group_matches.append(GroupMatch(s.round, s.request.phase, members, s.request.k, winners,
                                                  key not in fresh))
                got.append(winners)
            out[n] = got
        for key, value in fresh.items():
            self._cache[owner[key]][key] = value
        if failures:
            logger.info("group round: %d groups without winners (judge failure; nobody advances)", failures)
        return out


_ERROR = object()  # a batch that raised: scored as failures, never cached


def _checked_winners(winners: Sequence[int], n: int, k: int) -> tuple[int, ...]:
    """A valid answer is exactly k distinct in-range ints; anything else is a failure (no winners)."""
    try:
        w = tuple(int(x) for x in winners)
    except (TypeError, ValueError):
        w = ()
    if not w:
        return ()
    if len(w) != k or len(set(w)) != k or not all(0 <= x < n for x in w) or any(
            isinstance(x, bool) for x in winners):
        logger.warning("group judge answered %r for %d candidates, k=%d: invalid, counted as no winners",
                       list(winners), n, k)
        return ()
    return tuple(sorted(w))
