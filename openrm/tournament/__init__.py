"""Tournaments: the pairwise judge as the match judge of group-wise RL rewards. Topologies (one file each), an
`Arena` that batches every round of every group into one judge call, Bradley-Terry, reward shaping and routing.

    from openrm.tournament import Arena, Group, JudgePairwise, SeededSingleElimination, rank_z
    results = Arena(pairwise=JudgePairwise(judge)).run_many(SeededSingleElimination(), groups, step=step)
"""

from openrm.tournament.active import Active
from openrm.tournament.anchor import Anchor
from openrm.tournament.arena import Arena, Group, group_rngs
from openrm.tournament.bradley_terry import BTPosterior, bt_laplace, fit_bradley_terry, soft_outcome
from openrm.tournament.double_elimination import DoubleElimination
from openrm.tournament.judges import (
    GroupJudge,
    GroupPairwise,
    GroupRequest,
    JudgePairwise,
    PairwiseGroupJudge,
    PairwiseJudge,
    select_winners,
)
from openrm.tournament.live import Live
from openrm.tournament.multi_round import MultiRound
from openrm.tournament.records import GroupMatch, Match, TournamentResult
from openrm.tournament.round_robin import RoundRobin
from openrm.tournament.routing import RoutedRewards, adaptive_rewards, is_diverse
from openrm.tournament.rubric_judge import RubricGroupJudge
from openrm.tournament.shaping import (
    SHAPINGS,
    bt_min_max,
    min_max,
    rank_quantile,
    rank_z,
    tournament_reward,
    win_rate,
    z_score,
)
from openrm.tournament.single_elimination import SeededSingleElimination
from openrm.tournament.swiss import Swiss
from openrm.tournament.trl_reward import TournamentReward

TOPOLOGIES = {t.name: t for t in (RoundRobin, Anchor, SeededSingleElimination, DoubleElimination, Swiss, MultiRound,
                                  Live, Active)}

__all__ = ["Active", "Anchor", "Arena", "BTPosterior", "DoubleElimination", "Group", "GroupJudge", "GroupMatch",
           "GroupPairwise",
           "GroupRequest", "JudgePairwise", "Live", "Match", "MultiRound", "PairwiseGroupJudge", "PairwiseJudge",
           "RoundRobin", "RoutedRewards", "RubricGroupJudge", "SHAPINGS", "SeededSingleElimination", "Swiss",
           "TOPOLOGIES", "TournamentResult", "TournamentReward", "adaptive_rewards", "bt_laplace",
           "bt_min_max", "fit_bradley_terry", "group_rngs", "is_diverse", "min_max", "rank_quantile", "rank_z",
           "select_winners", "soft_outcome", "tournament_reward", "win_rate", "z_score"]
