"""Head-to-head of two policies under a match judge: each samples answers to the same prompts, the judge compares
them pair by pair (both orders when it is a one-order judge), and the win rate of the first with a bootstrap
interval is reported. The learning proof of train/grpo_policy.py uses it (policy after GRPO vs its step-0 self).

    python -m eval.head_to_head --policy runs/policy/grpo --baseline runs/policy/warm \
        --prompts runs/policy/data/heldout.jsonl --judge toy-oracle --world_seed 0 --samples 4 --out runs/policy/h2h

Win rate = mean P(policy's answer wins), a tie (or a judge failure) counting half; 0.5 = no difference. The
comparison is `eval.win_rate`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from eval.win_rate import HeadToHead, HeadToHeadArguments, run


def main(argv: Sequence[str] | None = None) -> HeadToHead:
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (parsed,) = TrlParser(HeadToHeadArguments).parse_args_and_config(args=argv)
    r = run(parsed)
    print(f"win rate {r.win_rate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] over {r.comparisons} comparisons "
          f"({r.wins} wins, {r.losses} losses, {r.ties} ties, {r.failures} judge failures)")
    return r


if __name__ == "__main__":
    main()
