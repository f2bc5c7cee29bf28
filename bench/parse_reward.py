"""Throughput of the per-completion hot path: parse_response + score, on gold and on long noisy completions.

    .venv/bin/python -m bench.parse_reward
"""

import argparse
import random
import time

from openrm.parsing import parse_response
from openrm.reward import RewardConfig, score
from toy.world import ToyWorld


def rate(fn, items, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return len(items) / best


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)  # takes no flags; --help
    world = ToyWorld(0)
    examples = world.examples(2000)
    gold = [(world.gold_trajectory(e), e) for e in examples]
    rng = random.Random(0)
    words = "the answer claims founded river <think> </search> < answer > evidence A B".split()
    # ~8k characters each (about a 2048-token completion), tag-dense noise: the parser's worst realistic case.
    noisy = [(" ".join(rng.choice(words) for _ in range(1400)), e) for e in examples[:500]]
    cfg = RewardConfig()
    for name, items in (("gold trajectories", gold), ("8k-char tag-dense noise", noisy)):
        chars = sum(len(t) for t, _ in items) / len(items)
        per_s = rate(lambda item: score(parse_response(item[0]), item[1], cfg), items)
        print(f"{name:26s} mean {chars:7.0f} chars  {per_s:10.0f} completions/s (parse + score, 1 core)")


if __name__ == "__main__":
    main()
