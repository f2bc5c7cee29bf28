"""Test-wide setup: nothing may reach a model hub, and GPU tests skip without a GPU."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


class RatingJudge:
    """A scripted match judge for consumer tests (best-of-N, preference selection): it prefers the candidate with
    the higher gold rating of a candidate-set file (0.5 on equal ratings), reversed on questions `flip` picks, and
    records what it was asked. Symmetric, so `orders = 2`: one item per pair."""

    orders = 2

    def __init__(self, path, rating="overall_score", flip=lambda question: False):
        from eval.candidate_sets import load_candidate_sets

        sets = load_candidate_sets(path, rating=rating).sets
        self.rating = {(s.question, c): r for s in sets for c, r in zip(s.candidates, s.ratings, strict=True)}
        self.flip = flip
        self.asked: list[str] = []

    @property
    def calls(self) -> int:
        return len(self.asked)

    def compare_many(self, items):
        self.asked += [q for q, _, _ in items]
        out = []
        for q, x, y in items:
            rx, ry = self.rating[(q, x)], self.rating[(q, y)]
            if self.flip(q):
                rx, ry = ry, rx
            out.append(1.0 if rx > ry else 0.0 if rx < ry else 0.5)
        return out


@pytest.fixture
def rating_judge():
    """`rating_judge(path, rating=..., flip=...)`: a new RatingJudge over a candidate-set file."""
    return RatingJudge
