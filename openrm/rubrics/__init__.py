"""Query-specific rubrics: the rubric record and its strict parser, our prompts, Eq. 2 scoring, scorers (an
OpenAI-compatible server or the toy rule), the hybrid reward of the rubric generator and rubric rewards for
policies. Importing it is instant: no torch, no HTTP client until a scorer is built."""

from openrm.rubrics.record import Rubric, RubricError, RubricItem, is_valid, parse_rubric
from openrm.rubrics.reward import HybridBreakdown, HybridWeights, RubricGeneratorReward, hybrid_reward
from openrm.rubrics.scorer import ChatScorer, ItemAsk, PairAsk, Rating, ReportAsk, ReportScore, RubricAsk, Scorer
from openrm.rubrics.scoring import normalise_rating, rubric_score

__all__ = ["ChatScorer", "HybridBreakdown", "HybridWeights", "ItemAsk", "PairAsk", "Rating", "ReportAsk",
           "ReportScore", "Rubric", "RubricAsk", "RubricError", "RubricGeneratorReward", "RubricItem", "Scorer",
           "hybrid_reward", "is_valid", "normalise_rating", "parse_rubric", "rubric_score"]
