"""Writes the benchmark files our local lm-evaluation-harness configs (eval/lm_eval_tasks/) read: one JSONL per split
under DATA_DIR, row for row from the hub datasets as downloaded (parquet, JSON/JSONL, or a `datasets` save_to_disk
folder). Columns are kept as they are; a file lacking one the configs read is refused, naming it.

    python -m eval.benchmark_files --out data/downstream \
        --truthfulqa truthful_qa/multiple_choice/validation-00000-of-00001.parquet \
        --mmlu_pro_test MMLU-Pro/data/test-00000-of-00001.parquet \
        --mmlu_pro_validation MMLU-Pro/data/validation-00000-of-00001.parquet \
        --triviaqa trivia_qa/rc.nocontext/validation-00000-of-00001.parquet
    python -m eval.benchmark_files --out data/downstream --from_hub   # with hub access: datasets.load_dataset

tests/eval/fixtures/downstream/ is a DATA_DIR of a few rows shaped like the real ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Benchmark:
    target: str  # the file under DATA_DIR, as the task config names it
    hub: tuple[str, str | None, str]  # (dataset, config, split) for --from_hub
    columns: tuple[str, ...]  # what the configs read; "a.b" is field b of struct column a


_MMLU_PRO = ("question", "options", "answer", "cot_content", "category")
BENCHMARKS = {
    "truthfulqa": Benchmark("truthfulqa_mc/validation.jsonl",
                            ("truthfulqa/truthful_qa", "multiple_choice", "validation"),
                            ("question", "mc1_targets.choices", "mc1_targets.labels", "mc2_targets.choices",
                             "mc2_targets.labels")),
    "mmlu_pro_test": Benchmark("mmlu_pro/test.jsonl", ("TIGER-Lab/MMLU-Pro", None, "test"), _MMLU_PRO),
    "mmlu_pro_validation": Benchmark("mmlu_pro/validation.jsonl", ("TIGER-Lab/MMLU-Pro", None, "validation"),
                                     _MMLU_PRO),
    "triviaqa": Benchmark("triviaqa/validation.jsonl", ("mandarjoshi/trivia_qa", "rc.nocontext", "validation"),
                          ("question", "answer.aliases")),
}


def read(path: str | Path):
    """A downloaded split as a `datasets.Dataset`: parquet, JSON/JSONL, or a save_to_disk folder of one split."""
    import datasets

    path = Path(path)
    if path.is_dir():
        loaded = datasets.load_from_disk(str(path))
        if isinstance(loaded, datasets.DatasetDict):
            raise ValueError(f"{path} holds splits {list(loaded)}: pass the folder of one split")
        return loaded
    kinds = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}
    if path.suffix not in kinds:
        raise ValueError(f"{path}: expected .parquet, .json, .jsonl or a save_to_disk folder")
    return datasets.load_dataset(kinds[path.suffix], data_files=str(path), split="train")


def check_columns(dataset, benchmark: Benchmark, source: str) -> None:
    """Refuse a split that lacks a column (or struct field) the task config reads."""
    for column in benchmark.columns:
        top, _, sub = column.partition(".")
        feature = dataset.features.get(top)
        if feature is None or (sub and (not isinstance(feature, dict) or sub not in feature)):
            raise ValueError(f"{source}: no column {column!r} (has {sorted(dataset.features)}); "
                             f"{benchmark.target} needs {list(benchmark.columns)}")


def write(dataset, benchmark: Benchmark, data_dir: str | Path, source: str) -> Path:
    check_columns(dataset, benchmark, source)
    target = Path(data_dir) / benchmark.target
    target.parent.mkdir(parents=True, exist_ok=True)
    dataset.to_json(str(target), lines=True, force_ascii=False)
    logger.info("%s: %d rows from %s", target, len(dataset), source)
    return target


@dataclass
class BenchmarkFilesArguments:
    out: str = field(metadata={"help": "DATA_DIR to write (pass it to eval.downstream --data_dir)"})
    truthfulqa: str = field(default="", metadata={"help": "truthful_qa multiple_choice validation split"})
    mmlu_pro_test: str = field(default="", metadata={"help": "TIGER-Lab/MMLU-Pro test split"})
    mmlu_pro_validation: str = field(default="", metadata={"help": "TIGER-Lab/MMLU-Pro validation split (shots)"})
    triviaqa: str = field(default="", metadata={"help": "trivia_qa rc.nocontext validation split"})
    from_hub: bool = field(default=False, metadata={"help": "download every split with datasets.load_dataset"})

    def __post_init__(self) -> None:
        if not self.from_hub and not any(getattr(self, name) for name in BENCHMARKS):
            raise ValueError(f"give --from_hub or at least one of {['--' + n for n in BENCHMARKS]}")


def main(args: BenchmarkFilesArguments) -> list[Path]:
    import datasets

    written = []
    for name, benchmark in BENCHMARKS.items():
        if args.from_hub:
            path, config, split = benchmark.hub
            dataset, source = datasets.load_dataset(path, config, split=split), f"{path} {config or ''} {split}"
        elif getattr(args, name):
            dataset, source = read(getattr(args, name)), getattr(args, name)
        else:
            continue
        written.append(write(dataset, benchmark, args.out, source))
    return written


if __name__ == "__main__":
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = TrlParser(BenchmarkFilesArguments)
    try:
        (parsed,) = parser.parse_args_and_config()
        for p in main(parsed):
            print(p)
    except (ValueError, FileNotFoundError) as exc:
        parser.exit(2, f"eval.benchmark_files: error: {exc}\n")
