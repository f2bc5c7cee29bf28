"""GRPO groups that hold one pair in both orders: half of a group's completions judge the pair as given, half with
its answers swapped, so the group's advantages compare the two orders. A judge that is right in one order and wrong
in the other on every sample still gets a signal: its wrong-order samples fall below the group's mean. (Each order in
a group of its own gives those two groups equal rewards, and GRPO nothing to learn from.)

    trainer = OrderGroupsTrainer(model=..., args=grpo_config, train_dataset=in_both_orders_prompts, ...)

`train/judge_trainer.py --order_groups true` builds it; the dataset holds each pair in both orders
(`openrm.dataset.in_both_orders`), rows carrying `pair_id` and `order`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from torch.utils.data import Sampler

from openrm.dataset import ORDERS
from train.shared_prompt import SharedPromptGRPOTrainer


def pair_indexes(pair_ids: Sequence[str], orders: Sequence[str]) -> list[tuple[int, int]]:
    """(row of the pair as given, row of it swapped) for every pair whose two orders are both in the rows, in the order
    the pairs first appear. A pair with one order only (its twin dropped, e.g. over the prompt budget) is left out."""
    if len(pair_ids) != len(orders):
        raise ValueError(f"{len(pair_ids)} pair ids but {len(orders)} orders")
    rows: dict[str, dict[str, int]] = {}
    for i, (p, o) in enumerate(zip(pair_ids, orders, strict=True)):
        if o not in ORDERS:
            raise ValueError(f"row {i}: order must be one of {ORDERS}, got {o!r}")
        if o in rows.setdefault(p, {}):
            raise ValueError(f"pair {p!r} has two rows in order {o}")
        rows[p][o] = i
    return [(r[ORDERS[0]], r[ORDERS[1]]) for r in rows.values() if len(r) == 2]


class PairedRepeatSampler(Sampler):
    """TRL's repeat sampler, a pair per group: for each chunk of `pairs_per_batch` pairs (a generation batch), repeated
    `repeat_count` times, every pair yields its as-given row num_generations / 2 times, then its swapped row as many.
    Incomplete chunks at the end are dropped, as TRL drops them."""

    def __init__(self, pairs: Sequence[tuple[int, int]], num_generations: int, pairs_per_batch: int,
                 repeat_count: int = 1) -> None:
        if num_generations < 2 or num_generations % 2:
            raise ValueError(f"order groups need an even num_generations (half a group per order), got "
                             f"{num_generations}")
        if pairs_per_batch < 1 or len(pairs) < pairs_per_batch:
            raise ValueError(f"{len(pairs)} complete pairs cannot fill a generation batch of {pairs_per_batch} "
                             "groups")
        self.pairs, self.half = list(pairs), num_generations // 2
        self.pairs_per_batch, self.repeat_count = pairs_per_batch, repeat_count

    def __iter__(self) -> Iterator[int]:
        for b in range(len(self.pairs) // self.pairs_per_batch):
            chunk = self.pairs[b * self.pairs_per_batch:(b + 1) * self.pairs_per_batch]
            for _ in range(self.repeat_count):
                for given, swapped in chunk:
                    yield from [given] * self.half
                    yield from [swapped] * self.half

    def __len__(self) -> int:
        batches = len(self.pairs) // self.pairs_per_batch
        return batches * self.pairs_per_batch * 2 * self.half * self.repeat_count


class OrderGroupsTrainer(SharedPromptGRPOTrainer):
    """GRPOTrainer whose every group is one pair in both orders (`PairedRepeatSampler`)."""

    def _get_train_sampler(self, dataset=None) -> Sampler:
        dataset = self.train_dataset if dataset is None else dataset
        return PairedRepeatSampler(pair_indexes(dataset["pair_id"], dataset["order"]), self.num_generations,
                                   self.args.generation_batch_size // self.num_generations,
                                   self.num_iterations * self.args.steps_per_generation)
