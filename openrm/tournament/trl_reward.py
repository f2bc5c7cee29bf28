"""`TournamentReward`: a TRL reward function (`(prompts, completions, **kwargs) -> [float]`) that plays a tournament
over each prompt's group of completions with a match judge and shapes the standings into rewards.

    judge = ToyOracle.from_rows(world, rows)
    reward = TournamentReward(RoundRobin(), Arena(pairwise=judge, seed=0), group_size=training_args.num_generations,
                              shaping="rank_z", match_log="runs/x/matches.jsonl")
    GRPOTrainer(..., reward_funcs=[reward])

Groups across processes: TRL 1.16's RepeatSampler lays each prompt's `num_generations` completions out consecutively
in the generation batch and then cuts that batch into per-process slices, so a group can straddle two processes, and
each process calls its reward function on its own slice. This reward therefore all-gathers every process's rows
(prompt, question, completion text), checks that every run of `group_size` rows holds one prompt (a clear error if
not: a wrong `group_size`, or a sampler that does not group), plays group g on process g % world_size (the judge
work is shared, each group is judged exactly once and always whole), all-gathers the per-group rewards and returns
this process's slice. Group g of a step is seeded from (arena seed, trainer global step, g), whichever process
plays it, so the rewards do not depend on the number of processes.

Adaptive routing (Reasoning Arena): with a `verifier` (a function of completion text and the row's `answer` column),
a group whose verifier rewards differ keeps them and is never judged; only the groups where they all agree (no
gradient) go to the tournament. A greedy anchor (ArenaRL): the rollout marks each group's greedy completion in an
`anchor` column; `anchor_position` checks it sits where the topology expects it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from openrm.dataset import question_of
from openrm.reward import completion_text
from openrm.tournament.arena import Arena, Group, Topology
from openrm.tournament.collective import AccelerateCollective, Collective
from openrm.tournament.records import TournamentResult
from openrm.tournament.routing import is_diverse
from openrm.tournament.shaping import SHAPINGS

logger = logging.getLogger(__name__)

Shaping = Callable[[TournamentResult], np.ndarray]


@dataclass(frozen=True)
class _Row:
    prompt_id: str
    question: str
    text: str
    answer: Any = None  # the dataset's gold answer, for a verifier
    anchor: bool = False  # the rollout's greedy completion of its group
    rubric: str | None = None  # the dataset's rubric column, shown to a rubric group judge


@dataclass(frozen=True)
class _Outcome:
    group: int
    rewards: tuple[float, ...]
    judge_calls: int  # pairwise items plus group-judge requests sent
    matches: int
    ties: int
    failures: int
    crashed: bool
    routed: bool = True  # False: a verifier separated the group, no judge was asked


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class TournamentReward:
    """`group_size`: completions per prompt (GRPOConfig.num_generations). `shaping`: a name in `SHAPINGS` or a
    function of a `TournamentResult`. `match_log`: a JSONL path; each process appends to `<stem>.rank<r>.jsonl` one
    record per group it played. A dataset column `question` is what the judge is asked about (else the prompt's
    text), `id` names the prompt in the log (else a hash of the question), `answer` is the verifier's gold and
    `rubric` what a rubric group judge is shown.
    `verifier`: (completion text, gold answer) -> reward; routes only zero-variance groups to the tournament.
    `anchor_position`: the index in each group that the rollout's greedy anchor must hold (checked per step).
    `candidate`: completion text -> what the judge is shown (a search agent's final answer, `openrm.agent`);
    default: the whole completion.
    `observe`: (questions, shown candidates) -> {metric: value}, logged with each batch's figures (e.g. the share of
    samples showing each hostile kind, `eval.hostile.trait_shares`)."""

    def __init__(self, topology: Topology, arena: Arena, group_size: int, shaping: str | Shaping = "rank_z",
                 match_log: str | None = None, collective: Collective | None = None, name: str | None = None,
                 verifier: Callable[[str, Any], float] | None = None, anchor_position: int | None = None,
                 candidate: Callable[[str], str] | None = None,
                 observe: Callable[[list[str], list[str]], Mapping[str, float]] | None = None):
        if anchor_position is not None and not 0 <= anchor_position < group_size:
            raise ValueError(f"anchor_position {anchor_position} is outside a group of {group_size}")
        if group_size < 2:
            raise ValueError(f"a tournament needs groups of at least 2 completions, got group_size={group_size}")
        if isinstance(shaping, str) and shaping not in SHAPINGS:
            raise ValueError(f"unknown shaping {shaping!r}; choose one of {sorted(SHAPINGS)}")
        self.topology, self.arena, self.group_size = topology, arena, group_size
        self.shaping: Shaping = SHAPINGS[shaping] if isinstance(shaping, str) else shaping
        self.match_log, self._collective = match_log, collective
        self.verifier, self.anchor_position, self.candidate = verifier, anchor_position, candidate
        self.observe = observe
        self.__name__ = name or f"tournament_{topology.name}"

    @property
    def collective(self) -> Collective:
        if self._collective is None:  # built on first use: accelerate's state exists by then under TRL
            self._collective = AccelerateCollective()
        return self._collective

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        questions = kwargs.get("question") or [question_of(p) for p in prompts]
        ids = kwargs.get("id") or [text_hash(q) for q in questions]
        if not len(prompts) == len(completions) == len(questions) == len(ids):
            raise ValueError(f"{len(prompts)} prompts, {len(completions)} completions, {len(questions)} questions "
                             f"and {len(ids)} ids: one of each per completion expected")
        answers = kwargs.get("answer") or [None] * len(questions)
        anchors = kwargs.get("anchor") or [False] * len(questions)
        rubrics = kwargs.get("rubric") or [None] * len(questions)
        if self.verifier is not None and len(answers) != len(questions):
            raise ValueError(f"{len(answers)} gold answers for {len(questions)} completions")
        shown = self.candidate or (lambda text: text)
        local = [_Row(str(i), str(q), shown(completion_text(c)), a, bool(f), r if isinstance(r, str) and r else None)
                 for i, q, c, a, f, r in zip(ids, questions, completions, answers, anchors, rubrics, strict=True)]
        comm = self.collective
        per_rank = comm.all_gather(local)
        rows = [r for part in per_rank for r in part]
        offset = sum(len(part) for part in per_rank[:comm.rank])
        groups = self._groups(rows)
        golds = [[r.answer for r in rows[g * self.group_size:(g + 1) * self.group_size]] for g in range(len(groups))]
        state = kwargs.get("trainer_state")
        step = int(getattr(state, "global_step", 0) or 0)
        mine = [g for g in range(len(groups)) if g % comm.world_size == comm.rank]
        started = time.perf_counter()
        outcomes = self._play([groups[g] for g in mine], [golds[g] for g in mine], step)
        seconds = time.perf_counter() - started
        gathered = comm.all_gather((outcomes, seconds))
        rewards = np.full(len(rows), np.nan)
        everything = [o for part, _ in gathered for o in part]
        for o in everything:
            rewards[o.group * self.group_size:(o.group + 1) * self.group_size] = o.rewards
        if len(everything) != len(groups) or not np.all(np.isfinite(rewards)):
            raise RuntimeError(f"{len(everything)} of {len(groups)} groups came back with finite rewards")
        self._log_metrics(everything, max(s for _, s in gathered), kwargs.get("log_metric"))
        if self.observe is not None and kwargs.get("log_metric") is not None:
            for name, value in self.observe([r.question for r in rows], [r.text for r in rows]).items():
                kwargs["log_metric"](name, float(value))
        return rewards[offset:offset + len(local)].tolist()

    def _groups(self, rows: list[_Row]) -> list[Group]:
        g_size = self.group_size
        if len(rows) % g_size:
            raise ValueError(f"the generation batch has {len(rows)} completions, not a multiple of group_size="
                             f"{g_size}: set group_size to GRPOConfig.num_generations (num_generations_eval when "
                             f"evaluating)")
        groups = []
        for g in range(len(rows) // g_size):
            members = rows[g * g_size:(g + 1) * g_size]
            if len({(r.prompt_id, r.question) for r in members}) != 1:
                raise ValueError(
                    f"completions {g * g_size}..{(g + 1) * g_size - 1} of the generation batch should be one prompt's "
                    f"group but come from {len({r.prompt_id for r in members})} prompts: the tournament needs TRL's "
                    f"RepeatSampler layout (each prompt's group consecutive) and group_size = num_generations")
            if self.anchor_position is not None:
                flags = [r.anchor for r in members]
                if flags != [n == self.anchor_position for n in range(g_size)]:
                    raise ValueError(f"group {g}'s greedy anchor flags are {flags}: the topology expects exactly one "
                                     f"anchor at position {self.anchor_position} (is the greedy-anchor rollout on, "
                                     f"and group_size = num_generations?)")
            groups.append(Group(members[0].question, tuple(r.text for r in members), g, members[0].rubric))
        return groups

    def _play(self, groups: list[Group], golds: list[list[Any]], step: int) -> list[_Outcome]:
        if self.verifier is None or not groups:
            return self._tournament(groups, step)
        verified = {g.group_id: [self._verify(text, gold) for text, gold in zip(g.candidates, gs, strict=True)]
                    for g, gs in zip(groups, golds, strict=True)}
        routed = [g for g in groups if not is_diverse(verified[g.group_id])]
        judged = {o.group: o for o in self._tournament(routed, step)}
        return [judged.get(g.group_id) or _Outcome(g.group_id, tuple(verified[g.group_id]), 0, 0, 0, 0, False, False)
                for g in groups]

    def _verify(self, text: str, gold: Any) -> float:
        try:
            value = float(self.verifier(text, gold))
        except Exception:  # a verifier bug on one completion must not stop the step
            logger.exception("verifier failed on a completion: scored 0")
            return 0.0
        return value if np.isfinite(value) else 0.0

    def _tournament(self, groups: list[Group], step: int) -> list[_Outcome]:
        if not groups:
            return []
        self.arena.clear_cache()  # a step can be scored twice (evaluation): never reuse another batch's verdicts
        try:
            results = self.arena.run_many(self.topology, groups, step)
        except Exception:  # a step never dies on its judge: every group it touched gets equal rewards
            logger.exception("tournament over %d groups failed at step %d: equal rewards for all of them",
                             len(groups), step)
            return [_Outcome(g.group_id, (0.0,) * len(g.candidates), 0, 0, 0, 0, True) for g in groups]
        outcomes = []
        for group, result in zip(groups, results, strict=True):
            try:  # a raise here would leave the other processes waiting in the next all-gather
                rewards = np.asarray(self.shaping(result), dtype=float)
            except Exception:
                logger.exception("shaping failed on group %d", group.group_id)
                rewards = np.full(1, np.nan)
            if rewards.shape != (len(group.candidates),) or not np.all(np.isfinite(rewards)):
                logger.error("shaping gave %r for group %d: equal rewards instead", rewards, group.group_id)
                rewards = np.zeros(len(group.candidates))
            outcomes.append(_Outcome(group.group_id, tuple(float(r) for r in rewards),
                                     result.judge_calls + result.group_calls,
                                     len(result.matches) + len(result.group_matches), result.ties, result.failures,
                                     False))
        if self.match_log:
            self._append_log(groups, results, outcomes, step)
        return outcomes

    def _append_log(self, groups: list[Group], results: list[TournamentResult], outcomes: list[_Outcome],
                    step: int) -> None:
        path = Path(self.match_log)
        path = path.with_name(f"{path.stem}.rank{self.collective.rank}{path.suffix or '.jsonl'}")
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            for group, result, outcome in zip(groups, results, outcomes, strict=True):
                record = {"step": step, "group": group.group_id, "topology": result.topology,
                          "question_sha": text_hash(group.question),
                          "candidates": [text_hash(c) for c in group.candidates],
                          "scores": result.scores.tolist(), "rewards": list(outcome.rewards),
                          "judge_calls": outcome.judge_calls,
                          "matches": [{**asdict(m), "views": [list(v) for v in m.views]} for m in result.matches],
                          "group_matches": [asdict(m) for m in result.group_matches]}
                f.write(json.dumps(record) + "\n")

    def _log_metrics(self, outcomes: list[_Outcome], seconds: float, log_metric: Callable | None) -> None:
        """The whole generation batch's figures, identical on every process (TRL averages them over processes)."""
        matches = sum(o.matches for o in outcomes)
        metrics = {
            "tournament/judge_calls": sum(o.judge_calls for o in outcomes),
            "tournament/ties": sum(o.ties for o in outcomes),
            "tournament/failures": sum(o.failures for o in outcomes),
            "tournament/tie_rate": sum(o.ties for o in outcomes) / max(matches, 1),
            "tournament/failure_rate": sum(o.failures for o in outcomes) / max(matches, 1),
            "tournament/crashed_groups": sum(o.crashed for o in outcomes),
            "tournament/judge_seconds": seconds,  # the slowest process's wall time in the judge
            "tournament/reward_spread": float(np.mean([np.ptp(o.rewards) for o in outcomes])),
        }
        if self.verifier is not None:
            metrics["tournament/routed_share"] = sum(o.routed for o in outcomes) / max(len(outcomes), 1)
        logger.debug("tournament rewards: %s", metrics)
        if log_metric is not None:
            for name, value in metrics.items():
                log_metric(name, float(value))
