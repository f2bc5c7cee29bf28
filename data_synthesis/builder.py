"""Building a judge-pair dataset: the arguments of `python -m data_synthesis.build_dataset` and the build itself,
target-aware questions over sampled documents answered with and without them, by an LLM server (`build`; one this
process starts and stops with `served_build`) or an installed synthesis oracle.

`--oracle NAME` replaces the LLM with a synthesis oracle another package installs (plumbing.plugins, group
`openrm.synthesis_oracles`; the offline demo's `toyworld`): built from the seed, it has `generator`, `domains`,
`filter_overrides` (FilterConfig fields its answers need relaxed), `write_corpora(folder)`, `plan(split, domain, n)`
and `async outcome(slot)`, and goes through the same filters, A/B placement and record schema as the LLM path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from data_synthesis.documents import GroupCycle, group_passages, reservoir, sample_window, split_by_title
from data_synthesis.filters import FilterConfig
from data_synthesis.pipeline import Slot, SynthesisConfig, final_records, run_rounds, synthesize
from data_synthesis.queries import DOMAIN_OF_CORPUS, PROMPTS_VERSION, QuestionRules
from data_synthesis.report import write_outputs
from plumbing import plugins
from plumbing.arguments import Collect, parse_pairs
from plumbing.llm_client import ChatClient, ClientConfig, RequestCache
from retrieval.corpus import ReadStats, read_corpus

logger = logging.getLogger(__name__)


@dataclass
class BuildDatasetArguments:
    out: str = field(metadata={"help": "Output folder: the DatasetDict (save_to_disk), JSONL splits, rejects.jsonl, "
                                       "stats.md, summary.json and the request cache."})
    n_train: int = field(default=100, metadata={"help": "Training pairs, shared equally among the domains."})
    n_test: int = field(default=20, metadata={"help": "Test pairs, about documents no training pair uses."})
    corpus: list[str] = field(default_factory=list, metadata={
        "help": f"NAME=PATH, repeatable; NAME in {sorted(DOMAIN_OF_CORPUS)} (arxiv = science domain); DPR tsv or "
                "JSONL as retrieval.corpus reads them.", "action": Collect})
    base_url: str | None = field(default=None, metadata={"help": "OpenAI-compatible server, e.g. "
                                                                 "http://localhost:8000/v1."})
    model: str | None = field(default=None, metadata={"help": "Model name the server knows."})
    serve: str | None = field(default=None, metadata={
        "help": "Start a server on loopback with this model for the run, instead of --base-url / --model: a "
                "packaged model's short name (e.g. smollm2-135m-instruct), or a folder (transformers) or a .gguf "
                "file (llama.cpp); its log goes to <out>/server.log."})
    serve_engine: str = field(default="transformers", metadata={
        "help": "The --serve server: `transformers` (transformers serve, float weights) or `llama.cpp` "
                "(llama-cpp-python's server on the packaged GGUF as it is quantized; several times faster on a "
                "CPU; installed by `make llama-cpp`).", "choices": ["transformers", "llama.cpp"]})
    serve_threads: int = field(default=0, metadata={"help": "Compute threads of the --serve server (0: its "
                                                            "default)."})
    serve_replicas: int = field(default=1, metadata={
        "help": "Servers of --serve started side by side, each with --serve-threads; each request goes to the least "
                "busy. A llama.cpp server answers one request at a time, so on a CPU two servers of one thread "
                "each outrun one of two threads."})
    replica_urls: list[str] = field(default_factory=list, metadata={
        "help": "More servers of the same --model besides --base-url (e.g. one vLLM per GPU); the load is shared."})
    serve_continuous_batching: bool = field(default=False, metadata={
        "help": "Run the transformers --serve server with continuous batching (paged attention)."})
    api_key_env: str = field(default="OPENAI_API_KEY", metadata={"help": "Environment variable holding the API "
                                                                          "key (unset: no key sent)."})
    oracle: str | None = field(default=None, metadata={"help": "An installed synthesis oracle instead of the LLM "
                                                               "(the offline demo's: toyworld)."})
    concurrency: int = field(default=8, metadata={"help": "Requests in flight at once."})
    seed: int = field(default=0, metadata={"help": "Seeds document sampling, request seeds and A/B placement."})
    cache: str | None = field(default=None, metadata={"help": "Request cache JSONL (default <out>/requests.jsonl)."})
    timeout_s: float = field(default=300.0, metadata={"help": "Per-request timeout, seconds."})
    max_retries: int = field(default=6, metadata={"help": "Retries on 429/5xx/timeouts/connection errors."})
    backoff_base_s: float = field(default=1.0, metadata={"help": "First retry delay; doubles, with jitter."})
    backoff_max_s: float = field(default=60.0, metadata={"help": "Longest retry delay (Retry-After may exceed it)."})
    k_max: int = field(default=3, metadata={"help": "Most neighbouring passages per question (1..k_max)."})
    max_group: int = field(default=8, metadata={"help": "Most consecutive same-title passages in one group."})
    docs_per_corpus: int = field(default=0, metadata={"help": "Groups reservoir-sampled per corpus; 0 = 3 per "
                                                               "needed pair, +8."})
    skip_bad_lines: bool = field(default=False, metadata={"help": "Skip and count malformed corpus lines."})
    max_doc_chars: int = field(default=4000, metadata={"help": "Characters of each passage shown to the LLM."})
    query_max_tokens: int = field(default=256, metadata={"help": "max_tokens of a question request."})
    answer_max_tokens: int = field(default=1024, metadata={"help": "max_tokens of an answer request."})
    query_temperature: float = field(default=0.8, metadata={"help": "Sampling temperature for questions."})
    answer_temperature: float = field(default=0.7, metadata={"help": "Sampling temperature for answers."})
    send_seed: bool = field(default=True, metadata={"help": "Send a per-request `seed` parameter."})
    question_format: str = field(default="json", metadata={
        "help": "How the generator writes a question: json ({\"question\": ...}, repaired once) or text (one "
                "line ending with '?'; for small models that rarely close a JSON object).",
        "choices": ["json", "text"]})
    oversample: float = field(default=1.15, metadata={"help": "Slots planned per missing pair in round 1."})
    max_rounds: int = field(default=3, metadata={"help": "Rounds of make-up slots for dropped pairs."})
    min_answer_words: int = field(default=20, metadata={"help": "Shorter answers are dropped (too_short)."})
    max_length_ratio: float = field(default=4.0, metadata={"help": "Longer/shorter answer words above this: drop."})
    max_pair_jaccard: float = field(default=0.9, metadata={"help": "Positive/negative token-set Jaccard at or above "
                                                                   "this: drop (pair_too_similar)."})
    duplicate_jaccard: float = field(default=0.8, metadata={"help": "Questions this similar are near-duplicates."})
    trim_truncated: bool = field(default=False, metadata={
        "help": "An answer cut at --answer-max-tokens keeps its complete sentences instead of being dropped as "
                "truncated (small generators that ramble on)."})
    copy_ngram: int = field(default=25, metadata={"help": "A positive repeating this many document tokens in a row "
                                                          "copies it (dropped)."})
    quote_ngram: int = field(default=10, metadata={"help": "A question repeating this many document tokens in a "
                                                           "row quotes it (dropped)."})
    fsync: bool = field(default=False, metadata={"help": "fsync the cache after every request (power-loss safe; "
                                                         "kill -9 safe without it)."})
    progress: bool = field(default=True, metadata={"help": "Show progress bars."})

    def __post_init__(self) -> None:
        if self.n_train < 1 or self.n_test < 0:
            raise ValueError(f"need --n-train >= 1 and --n-test >= 0, got {self.n_train}, {self.n_test}")
        self.corpora = parse_pairs(self.corpus, "--corpus")
        if self.oracle is not None:
            known = plugins.names(plugins.SYNTHESIS_ORACLES)
            if self.oracle not in known:
                raise ValueError(f"--oracle must be one of the installed oracles {known or '(none)'}, got "
                                 f"{self.oracle!r}")
        elif self.serve is not None and (self.base_url or self.model or self.replica_urls):
            raise ValueError("--serve starts its own server: leave out --base-url, --model and --replica-urls")
        if self.serve_replicas < 1 or (self.serve_replicas > 1 and self.serve is None):
            raise ValueError(f"--serve-replicas takes a count >= 1 of --serve servers, got {self.serve_replicas}"
                             + ("" if self.serve else " without --serve"))
        if self.serve_engine == "llama.cpp" and self.serve_continuous_batching:
            raise ValueError("--serve-continuous-batching is a transformers serve setting, not llama.cpp's")
        if self.oracle is None:
            if not self.corpus or not (self.serve or (self.base_url and self.model)):
                raise ValueError("without --oracle, give --corpus NAME=PATH (one or more) and either --serve MODEL "
                                 "or --base-url and --model")
            names = list(self.corpora)
            if not set(names) <= set(DOMAIN_OF_CORPUS):
                raise ValueError(f"--corpus takes NAME=PATH with NAME in {sorted(DOMAIN_OF_CORPUS)}, got {self.corpus}")
            domains = [DOMAIN_OF_CORPUS[n] for n in names]
            if len(set(domains)) != len(domains):
                raise ValueError(f"one corpus per domain, got {self.corpus}")
        if self.concurrency < 1 or self.k_max < 1 or self.max_group < self.k_max:
            raise ValueError("need --concurrency >= 1 and 1 <= --k-max <= --max-group")

    @property
    def cache_path(self) -> Path:
        return Path(self.cache) if self.cache else Path(self.out) / "requests.jsonl"

    def synthesis_config(self, overrides: dict | None = None) -> SynthesisConfig:
        """`overrides`: FilterConfig fields an oracle's answers need relaxed (its `filter_overrides`)."""
        filters = {"min_answer_words": self.min_answer_words, "max_length_ratio": self.max_length_ratio,
                   "max_pair_jaccard": self.max_pair_jaccard, "copy_ngram": self.copy_ngram,
                   "duplicate_jaccard": self.duplicate_jaccard, "trim_truncated": self.trim_truncated,
                   **(overrides or {})}
        return SynthesisConfig(
            seed=self.seed, max_doc_chars=self.max_doc_chars, query_max_tokens=self.query_max_tokens,
            answer_max_tokens=self.answer_max_tokens, query_temperature=self.query_temperature,
            answer_temperature=self.answer_temperature, send_seed=self.send_seed,
            question_format=self.question_format, oversample=self.oversample,
            max_rounds=self.max_rounds, rules=QuestionRules(quote_ngram=self.quote_ngram),
            filters=FilterConfig(**filters))


def split_needs(domains: list[str], n_train: int, n_test: int) -> dict[tuple[str, str], int]:
    """Pairs wanted per (split, domain), test first; a remainder goes to the first domains."""
    needs = {}
    for split, n in (("test", n_test), ("train", n_train)):
        for i, domain in enumerate(domains):
            needs[(split, domain)] = n // len(domains) + (i < n % len(domains))
    return {k: v for k, v in needs.items() if v > 0}


def corpus_planner(args: BuildDatasetArguments):
    """Read each corpus once (streaming), sample groups, split them by title; return plan(split, domain, n)."""
    test_share = args.n_test / (args.n_train + args.n_test)
    cycles: dict[tuple[str, str], GroupCycle] = {}
    domain_corpus = {}
    for name, path in args.corpora.items():
        domain = DOMAIN_OF_CORPUS[name]
        domain_corpus[domain] = name
        k = args.docs_per_corpus or 3 * math.ceil((args.n_train + args.n_test) / len(args.corpus)) + 8
        stats = ReadStats()
        passages = tqdm(read_corpus(path, stats, skip_bad_lines=args.skip_bad_lines), desc=f"read {name}",
                        unit="psg", disable=not args.progress, mininterval=1.0)
        groups = reservoir(group_passages(passages, name, args.max_group), k, random.Random(f"{args.seed}:{name}"))
        logger.info("%s: %d passages read, %d groups sampled, %d bad lines skipped", path, stats.n_read,
                    len(groups), stats.n_skipped)
        sides = split_by_title(groups, test_share, args.seed) if args.n_test else {"train": groups, "test": []}
        for split, side in sides.items():
            if side:
                cycles[(split, domain)] = GroupCycle(side, args.seed, f"{split}:{domain}")

    def plan(split: str, domain: str, n: int) -> Slot:
        if (split, domain) not in cycles:
            raise ValueError(f"corpus {domain_corpus[domain]} has too few titles for a {split} split")
        group = cycles[(split, domain)][n]
        window = sample_window(group, args.k_max, random.Random(f"{args.seed}:{split}:{domain}:{n}:window"))
        return Slot(split, domain, domain_corpus[domain], n, window)

    return plan, [DOMAIN_OF_CORPUS[name] for name in args.corpora]


async def _run_llm(args: BuildDatasetArguments, cfg: SynthesisConfig, plan, needs):
    client_cfg = ClientConfig(base_url=args.base_url, model=args.model, api_key=os.environ.get(args.api_key_env),
                              replica_urls=tuple(args.replica_urls),
                              concurrency=args.concurrency, timeout_s=args.timeout_s, max_retries=args.max_retries,
                              backoff_base_s=args.backoff_base_s, backoff_max_s=args.backoff_max_s, seed=args.seed)
    cache = RequestCache(args.cache_path, fsync=args.fsync)
    try:
        logger.info("request cache %s: %d finished requests", args.cache_path, len(cache))
        async with ChatClient(client_cfg, cache) as client:
            selection = await run_rounds(plan, lambda slot: synthesize(client, slot, cfg), needs, cfg, args.progress)
        return selection, client.stats.summary()
    finally:
        cache.close()


def build(args: BuildDatasetArguments) -> dict:
    """Run the whole build; returns the summary written to `<out>/summary.json`."""
    started = time.monotonic()
    if args.oracle:
        oracle = plugins.load(plugins.SYNTHESIS_ORACLES, args.oracle)(args.seed)
        cfg = args.synthesis_config(dict(oracle.filter_overrides))
        oracle.write_corpora(Path(args.out) / "corpora")  # for building the search indexes
        needs = split_needs(list(oracle.domains), args.n_train, args.n_test)
        selection = asyncio.run(run_rounds(oracle.plan, oracle.outcome, needs, cfg, args.progress))
        generator, client_summary = oracle.generator, None
    else:
        cfg = args.synthesis_config()
        plan, domains = corpus_planner(args)
        needs = split_needs(domains, args.n_train, args.n_test)
        selection, client_summary = asyncio.run(_run_llm(args, cfg, plan, needs))
        generator = args.model
    records = final_records(selection, needs, args.seed)
    records.setdefault("test", [])
    docs = {split: {(r["meta"]["corpus"], d) for r in rows for d in r["meta"]["doc_ids"]}
            for split, rows in records.items()}
    if docs["train"] & docs["test"]:  # the split is by title; this is the guarantee, checked
        raise RuntimeError(f"train and test share documents: {sorted(docs['train'] & docs['test'])[:5]}")
    drops = selection.drops()
    wanted = {split: sum(n for (s, _), n in needs.items() if s == split) for split in ("train", "test")}
    seconds = time.monotonic() - started
    summary = {
        "generator": generator, "prompts_version": PROMPTS_VERSION, "question_format": args.question_format,
        "seed": args.seed,
        "pairs": {split: len(rows) for split, rows in records.items()}, "wanted": wanted,
        "slots": sum(len(v) for v in selection.accepted.values()) + len(selection.rejects),
        "surplus": sum(len(v) for v in selection.accepted.values()) - sum(len(r) for r in records.values()),
        "drops": dict(drops), "seconds": round(seconds, 2), "client": client_summary,
    }
    write_outputs(Path(args.out), records, [r.to_json() for r in selection.rejects], drops, summary)
    logger.info("pairs: %s of %s wanted; %d slots, dropped %s", summary["pairs"], wanted, summary["slots"],
                dict(drops.most_common()) or "none")
    if client_summary:
        logger.info("LLM: %d requests, %d HTTP attempts, %d cache hits (%.1f%%), %d failed, tokens %d prompt + %d "
                    "completion, retries %s", client_summary["requests"], client_summary["http_attempts"],
                    client_summary["cache_hits"], 100 * client_summary["cache_hit_rate"], client_summary["failed"],
                    client_summary["prompt_tokens"], client_summary["completion_tokens"],
                    client_summary["retries"] or "none")
    for split in ("train", "test"):
        if summary["pairs"][split] < wanted[split]:
            logger.warning("%s: only %d of %d pairs (see rejects.jsonl; raise --max-rounds or --oversample)",
                           split, summary["pairs"][split], wanted[split])
    return summary


def served_build(args: BuildDatasetArguments) -> dict:
    """`build` against a server (`args.serve_engine`) this process starts for `args.serve` and stops afterwards."""
    from openrm.models import PACKAGED, gguf_path, resolve
    from plumbing.serve import llama_cpp_server, transformers_server

    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.serve_engine == "llama.cpp":
        gguf = str(gguf_path(PACKAGED[args.serve])) if args.serve in PACKAGED else args.serve
        name = args.serve if args.serve in PACKAGED else Path(gguf).stem

        def server(log: Path):
            return llama_cpp_server(gguf, log=log, threads=args.serve_threads or None, alias=name)
    else:
        name = resolve(args.serve)

        def server(log: Path):
            return transformers_server(name, log=log, threads=args.serve_threads or None,
                                       continuous_batching=args.serve_continuous_batching)
    with contextlib.ExitStack() as stack:
        # logs: <out>/server.log, then server-2.log, ... for the replicas
        urls = [stack.enter_context(server(Path(args.out) / (f"server-{i + 1}.log" if i else "server.log")))
                for i in range(args.serve_replicas)]
        logger.info("serving %s with %s at %s", args.serve, args.serve_engine, " ".join(urls))
        args.base_url, args.model, args.replica_urls = f"{urls[0]}/v1", name, [f"{u}/v1" for u in urls[1:]]
        try:
            return build(args)
        finally:
            args.base_url = args.model = None
            args.replica_urls = []
