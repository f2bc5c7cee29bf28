"""A seeded fictional world: an encyclopedia, a paper index and medical notes, plus judge pairs over them.

Every fact is invented, so a judge can only tell the better answer by searching the world's corpora.
Tests, the quickstart and learning checks use it instead of Wikipedia/arXiv.

    write_dataset(ToyWorld(0), "runs/toy", 1000, 200)  # CLI: python -m toy.assets --world_out DIR
"""

from __future__ import annotations

import csv
import json
import logging
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openrm.protocol import (
    ANSWER,
    GOLD_TOOL,
    SEARCH,
    THINK,
    Passage,
    close_tag,
    format_call,
    open_tag,
    render_information,
)
from toy.hedges import HEDGE_WORDINGS, HEDGES, HEDGES_WIDE  # noqa: F401  (re-exported)

logger = logging.getLogger(__name__)

WIKI, SCIENCE, MEDICAL = "wiki", "science", "medical"
DOMAINS = (WIKI, SCIENCE, MEDICAL)
CORPUS_OF_DOMAIN = {WIKI: "wiki", SCIENCE: "arxiv", MEDICAL: "wiki"}
CORPORA = ("wiki", "arxiv")

_ONSETS = ("ka", "ve", "lo", "mar", "the", "quo", "dra", "sel", "bri", "zan", "or", "fen", "gal", "ish", "tor", "ul")
_MIDDLES = ("ri", "la", "no", "ven", "si", "ta", "mo", "rel", "da", "ni", "vo", "ska", "len", "ru")
_ENDS = ("a", "is", "on", "ar", "eth", "ia", "um", "or", "en", "ix", "ara", "ost")


@dataclass(frozen=True)
class Attribute:
    key: str
    question: str  # clause for a question: "when it was founded"
    sentence: str  # document sentence, `{name}` and `{value}`
    phrasings: tuple[str, ...]  # answer sentences, `{name}` and `{value}`
    keyword: str  # what a searcher adds to the name to find this fact


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    domain: str
    kind: str
    subject: str  # the name questions refer to
    facts: tuple[tuple[str, str], ...]  # (attribute key, value), each value verbatim in text

    @property
    def corpus(self) -> str:
        return CORPUS_OF_DOMAIN[self.domain]

    def passage(self) -> Passage:
        return Passage(self.id, self.title, self.text)


def _a(key: str, question: str, sentence: str, phrasings: Sequence[str], keyword: str) -> Attribute:
    return Attribute(key, question, sentence, tuple(phrasings), keyword)


KINDS: dict[str, tuple[str, tuple[Attribute, ...]]] = {
    "city": (WIKI, (
        _a("country", "which country it belongs to", "{name} is a city in {value}.",
           ("{name} is a city in {value}.", "{name} lies within the borders of {value}."), "country"),
        _a("founded", "when it was founded", "It was founded in {value}.",
           ("The city was founded in {value}.", "Its founding dates to {value}."), "founded"),
        _a("population", "how many people live there", "Its population is about {value}.",
           ("It is home to roughly {value} people.", "About {value} people live there today."), "population"),
        _a("river", "which river it stands on", "The city stands on the {value} river.",
           ("It grew up along the {value} river.", "The {value} river runs through the city."), "river"),
        _a("industry", "what its economy is known for", "It is known for its {value} industry.",
           ("Its economy is best known for {value}.", "Locally, {value} is the leading trade."), "industry"),
    )),
    "person": (WIKI, (
        _a("born", "when they were born", "{name} was born in {value}.",
           ("{name} was born in {value}.", "{name}'s life began in {value}."), "born"),
        _a("birthplace", "where they were born", "Their birthplace is the city of {value}.",
           ("They came from the city of {value}.", "Their home town was {value}."), "birthplace"),
        _a("occupation", "what their profession was", "By profession {name} was a {value}.",
           ("{name} worked as a {value}.", "Professionally, {name} was a {value}."), "profession"),
        _a("known_for", "what they are best known for", "{name} is best remembered for {value}.",
           ("Their best-known achievement is {value}.", "{name} is chiefly famous for {value}."), "known for"),
        _a("award", "which prize they received", "{name} received the {value}.",
           ("Their work earned them the {value}.", "{name} was honoured with the {value}."), "prize"),
    )),
    "river": (WIKI, (
        _a("length", "how long it is", "The {name} river is {value} long.",
           ("The {name} runs for {value}.", "Its total length is {value}."), "length"),
        _a("source", "where it rises", "It rises at {value}.",
           ("Its source lies at {value}.", "The river begins at {value}."), "source"),
        _a("mouth", "where it ends", "It empties into {value}.",
           ("It flows out into {value}.", "Its mouth opens onto {value}."), "mouth"),
        _a("country", "which country it flows through", "Most of its course lies in {value}.",
           ("Most of its course is in {value}.", "It flows mainly through {value}."), "country"),
    )),
    "paper": (SCIENCE, (
        _a("task", "which problem it addresses", "The paper introduces {name} for {value}.",
           ("{name} is a method for {value}.", "The work targets {value}."), "task"),
        _a("mechanism", "how the method works", "{name} relies on {value}.",
           ("Its core idea is {value}.", "Technically, {name} is built on {value}."), "method"),
        _a("dataset", "which benchmark it is evaluated on", "Experiments use the {value} benchmark.",
           ("The authors evaluate it on {value}.", "Results are reported on the {value} benchmark."), "benchmark"),
        _a("result", "what result it reports", "The best model reaches {value}.",
           ("The headline result is {value}.", "Its best configuration achieves {value}."), "results"),
        _a("year", "when it was published", "The paper appeared in {value}.",
           ("It was published in {value}.", "The paper came out in {value}."), "year"),
        _a("author", "who its first author is", "Its first author is {value}.",
           ("The first author is {value}.", "It was led by {value}."), "author"),
    )),
    "condition": (MEDICAL, (
        _a("organ", "which organ it affects", "{name} mainly affects the {value}.",
           ("It primarily damages the {value}.", "{name} is a disorder of the {value}."), "organ"),
        _a("symptoms", "what its symptoms are", "Typical symptoms are {value}.",
           ("Patients usually present with {value}.", "Its hallmark symptoms are {value}."), "symptoms"),
        _a("treatment", "how it is treated", "The standard treatment is {value}.",
           ("It is treated with {value}.", "First-line therapy is {value}."), "treatment"),
        _a("onset", "when it usually begins", "Onset is usually in {value}.",
           ("It tends to appear in {value}.", "Most cases begin in {value}."), "onset"),
        _a("prevalence", "how common it is", "It affects {value}.",
           ("It is seen in {value}.", "Its prevalence is {value}."), "prevalence"),
    )),
}

_INDUSTRIES = ("glassmaking", "shipbuilding", "salt mining", "silk weaving", "clockmaking", "tea trading",
               "paper milling", "copper smelting", "wine pressing", "printing")
_OCCUPATIONS = ("astronomer", "composer", "cartographer", "architect", "botanist", "novelist", "engineer",
                "sculptor", "physician", "mathematician")
_WORKS = ("treatise", "symphony", "atlas", "bridge design", "field guide", "novel", "star catalogue", "sculpture")
_TASKS = ("open-domain question answering", "machine translation", "protein structure prediction",
          "image segmentation", "speech recognition", "code generation", "graph classification",
          "time-series forecasting", "document summarization", "reward modeling")
_MECHANISMS = ("sparse mixture-of-experts routing", "contrastive pretraining", "retrieval-augmented decoding",
               "curriculum sampling", "low-rank adapters", "graph attention", "diffusion denoising",
               "knowledge distillation", "tree search over partial outputs", "energy-based reranking")
_METRICS = ("an F1 of", "an accuracy of", "a BLEU score of", "an exact match of", "a ROUGE-L of")
_ORGANS = ("liver", "kidneys", "inner ear", "lungs", "skin", "retina", "thyroid", "joints", "pancreas", "spleen")
_SYMPTOMS = ("joint stiffness", "blurred vision", "night sweats", "chronic fatigue", "a hoarse voice",
             "itchy rashes", "frequent headaches", "muscle cramps", "dizziness", "a dry cough", "hair loss",
             "ringing in the ears")
_ONSETS_AGE = ("early childhood", "adolescence", "the third decade of life", "middle age", "old age")
_DRUG_SUFFIXES = ("mab", "zole", "pril", "statin", "vir", "cillin")

_FILLERS = {
    WIKI: ("Historians still debate parts of this account.", "Local archives preserve many early records.",
           "Several travel writers have described it at length.", "It appears often in regional folklore."),
    SCIENCE: ("The authors release code and trained models.", "An ablation study examines each component.",
              "The approach is compared against strong baselines.", "Limitations are discussed at the end."),
    MEDICAL: ("Diagnosis is usually confirmed by a specialist.", "Early treatment improves the outlook.",
              "Guidelines recommend regular follow-up visits.", "Family history can raise the risk."),
}
_INTROS = {
    WIKI: ("Here is an overview of {name}.", "{name} has a well documented history.",
           "There is quite a lot to say about {name}."),
    SCIENCE: ("The {name} paper is a notable contribution.", "Here is a summary of the {name} work.",
              "{name} is a method that drew attention in its field."),
    MEDICAL: ("{name} is a recognised medical condition.", "Here is what is known about {name}.",
              "{name} is a condition clinicians should know."),
}
_QUESTIONS = {
    WIKI: ("What can you tell me about {name}, in particular {clauses}?",
           "Give an overview of {name}: {clauses}.",
           "I am writing a report on {name}. Please explain {clauses}."),
    SCIENCE: ("Summarise the paper that introduced {name}, including {clauses}.",
              "What is {name} in the research literature: {clauses}?",
              "Explain the {name} paper, covering {clauses}."),
    MEDICAL: ("What should a patient know about {name}, such as {clauses}?",
              "Describe {name}: {clauses}.",
              "Explain {name} to a medical student, including {clauses}."),
}


# Short style (tiny judges, the learning proof): one fact per pair, a value that is a single word, a question that
# names its domain. Per kind: attribute -> the word of the document sentence a search should add to the subject.
SHORT_FACTS: dict[str, dict[str, str]] = {
    "city": {"founded": "founded", "river": "river"},
    "person": {"born": "born", "birthplace": "birthplace", "occupation": "profession"},
    "paper": {"year": "appeared"},
    "condition": {"treatment": "treatment"},
}
# Short answers end on their value (see `_short_example`); where an attribute's first phrasing does not, this one does.
_SHORT_PHRASINGS = {("city", "river"): "It stands on the river {value}."}
_SHORT_QUESTIONS = {WIKI: "{name}: {clause}?", SCIENCE: "Paper {name}: {clause}?", MEDICAL: "Illness {name}: {clause}?"}
# "recombined": short pairs whose fact is drawn afresh for a real subject and stated only in the pair's own passage
# (`meta["passage"]`), so it cannot be remembered from any document: training on them rewards reading the evidence
# and copying names and values, never memorising (experiments/learning_proof.py mixes them into the SFT warm-up).
STYLES = ("long", "short", "recombined")


class _Names:
    """Unique pronounceable names drawn from one seeded stream."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.used = rng, set()

    def word(self, min_parts: int = 2, max_parts: int = 3) -> str:
        for _ in range(10_000):
            parts = [self.rng.choice(_ONSETS)]
            parts += [self.rng.choice(_MIDDLES) for _ in range(self.rng.randint(min_parts, max_parts) - 2)]
            parts.append(self.rng.choice(_ENDS))
            name = "".join(parts).capitalize()
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted; lower the world size")

    def acronym(self) -> str:
        for _ in range(10_000):
            name = "".join(self.rng.choice("BCDFGHKLMNPRSTVZ") + self.rng.choice("AEIOU") for _ in range(2))
            name += self.rng.choice("NRSTX")
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("acronym space exhausted; lower the world size")


@dataclass(frozen=True)
class WorldSize:
    cities: int = 80
    people: int = 80
    rivers: int = 40
    papers: int = 120
    conditions: int = 80
    countries: int = 12
    test_share: float = 0.2  # share of documents whose questions only appear in the test split

    def __post_init__(self) -> None:
        counts = (self.cities, self.people, self.rivers, self.papers, self.conditions, self.countries)
        if min(counts) < 1:
            raise ValueError(f"every world size must be >= 1, got {self}")
        if not 0.0 < self.test_share < 1.0:
            raise ValueError(f"test_share must be in (0, 1), got {self.test_share}")


class ToyWorld:
    """All documents of one seeded world and the judge examples drawn from them."""

    def __init__(self, seed: int = 0, size: WorldSize = WorldSize()) -> None:
        self.seed, self.size = seed, size
        rng = random.Random(f"toyworld:{seed}")
        names = _Names(rng)
        self._pools = self._make_pools(rng, names)
        self.documents: list[Document] = []
        counts = {"river": size.rivers, "city": size.cities, "person": size.people,
                  "paper": size.papers, "condition": size.conditions}
        for kind, count in counts.items():  # rivers first: cities and people refer to earlier entities
            for index in range(count):
                self.documents.append(self._make_document(kind, index, rng, names))
        self.by_id = {doc.id: doc for doc in self.documents}
        # Train and test ask about disjoint documents, so a test pair cannot be answered from memory.
        split_rng = random.Random(f"toyworld:{seed}:split")
        self.split_of = {d.id: ("test" if split_rng.random() < size.test_share else "train") for d in self.documents}

    # ---- world building -------------------------------------------------------------------------
    def _make_pools(self, rng: random.Random, names: _Names) -> dict[str, Any]:
        return {
            "countries": [f"the Republic of {names.word()}" for _ in range(self.size.countries)],
            "rivers": [], "cities": [],
            "prizes": [f"{names.word()} Prize" for _ in range(10)],
            "seas": [f"the {names.word()} Sea" for _ in range(10)],
            "sources": [f"the {names.word()} Mountains" for _ in range(8)] + [f"Lake {names.word()}" for _ in range(8)],
            "benchmarks": [names.word() + rng.choice(("Bench", "QA", "-1K", "Set")) for _ in range(20)],
            "authors": [f"{names.word()} {names.word()}" for _ in range(40)],
            "drugs": [names.word().lower() + rng.choice(_DRUG_SUFFIXES) for _ in range(30)],
        }

    def _value(self, kind: str, key: str, rng: random.Random) -> str:
        """Draw a value for an attribute; wrong answers draw from the same distribution."""
        p = self._pools
        choices: dict[str, Callable[[], str]] = {
            "country": lambda: rng.choice(p["countries"]),
            "founded": lambda: str(rng.randint(900, 1890)),
            "population": lambda: f"{rng.randint(8, 2500) * 1000:,}",
            "river": lambda: rng.choice(p["rivers"]),
            "industry": lambda: rng.choice(_INDUSTRIES),
            "born": lambda: str(rng.randint(1650, 1980)),
            "birthplace": lambda: rng.choice(p["cities"]),
            "occupation": lambda: rng.choice(_OCCUPATIONS),
            "known_for": lambda: f"the {rng.choice(_WORKS)} '{rng.choice(p['authors']).split()[0]} "
                                 f"{rng.choice(('Rising', 'Unbound', 'at Dusk', 'of Glass', 'Revisited'))}'",
            "award": lambda: rng.choice(p["prizes"]),
            "length": lambda: f"{rng.randint(40, 3200):,} kilometres",
            "source": lambda: rng.choice(p["sources"]),
            "mouth": lambda: rng.choice(p["seas"]),
            "task": lambda: rng.choice(_TASKS),
            "mechanism": lambda: rng.choice(_MECHANISMS),
            "dataset": lambda: rng.choice(p["benchmarks"]),
            "result": lambda: f"{rng.choice(_METRICS)} {rng.uniform(40, 99):.1f}",
            "year": lambda: str(rng.randint(2012, 2026)),
            "author": lambda: rng.choice(p["authors"]),
            "organ": lambda: rng.choice(_ORGANS),
            "symptoms": lambda: " and ".join(rng.sample(_SYMPTOMS, 2)),
            "treatment": lambda: rng.choice(p["drugs"]),
            "onset": lambda: rng.choice(_ONSETS_AGE),
            "prevalence": lambda: f"about 1 in {rng.choice((500, 2000, 5000, 10000, 40000, 100000)):,} people",
        }
        return choices[key]()

    def _make_document(self, kind: str, index: int, rng: random.Random, names: _Names) -> Document:
        domain, attributes = KINDS[kind]
        if kind == "paper":
            subject = names.acronym()
        elif kind == "condition":
            subject = f"{names.word()} {rng.choice(('syndrome', 'disease', 'fever'))}"
        else:
            subject = names.word()
        facts = tuple((a.key, self._value(kind, a.key, rng)) for a in attributes)
        sentences = [a.sentence.format(name=subject, value=v) for a, (_, v) in zip(attributes, facts, strict=True)]
        sentences.append(rng.choice(_FILLERS[domain]))
        if kind == "paper":
            title = f"{subject}: {dict(facts)['mechanism'].capitalize()} for {dict(facts)['task']}"
        elif kind == "river":
            title = f"{subject} (river)"
        else:
            title = subject
        if kind == "river":
            self._pools["rivers"].append(subject)
        if kind == "city":
            self._pools["cities"].append(subject)
        doc_id = f"{CORPUS_OF_DOMAIN[domain]}-{kind}-{index:05d}"
        return Document(doc_id, title, " ".join(sentences), domain, kind, subject, facts)

    def vocabulary_text(self) -> str:
        """Every name and every value any fact can take, as text (tokenizers that keep words whole train on it)."""
        pools = [v for pool in self._pools.values() for v in pool]
        constants = (_INDUSTRIES, _OCCUPATIONS, _WORKS, _TASKS, _MECHANISMS, _ORGANS, _SYMPTOMS, _ONSETS_AGE)
        return "\n".join([*pools, *(v for c in constants for v in c), *(d.subject for d in self.documents)])

    # ---- corpora ----------------------------------------------------------------------------------
    def corpus(self, name: str) -> list[Document]:
        if name not in CORPORA:
            raise ValueError(f"unknown corpus {name!r}; the toy world has {CORPORA}")
        return [d for d in self.documents if d.corpus == name]

    def fact_passages(self, name: str) -> list[Document]:
        """Corpus `name` cut into one passage per fact (the document's sentence for it, under the document's title):
        top-1 evidence short enough for a tiny judge's context."""
        return [self.fact_passage(doc, key) for doc in self.corpus(name) for key, _ in doc.facts]

    def fact_passage(self, doc: Document, key: str) -> Document:
        """The passage of `doc`'s fact `key` in `fact_passages(doc.corpus)`, built alone (a warm-up draws one per
        record; rebuilding the whole corpus each time was most of its cost)."""
        attribute = next(a for a in KINDS[doc.kind][1] if a.key == key)
        value = dict(doc.facts)[key]
        return Document(f"{doc.id}-{key}", doc.title, attribute.sentence.format(name=doc.subject, value=value),
                        doc.domain, doc.kind, doc.subject, ((key, value),))

    def write_corpora(self, out_dir: str | Path, granularity: str = "document") -> dict[str, dict[str, Path]]:
        """Write each corpus as DPR tsv (`id\\ttext\\ttitle`, with header) and JSONL (`id,title,contents`);
        `granularity="fact"` writes one passage per fact (`fact_passages`)."""
        if granularity not in ("document", "fact"):
            raise ValueError(f"granularity must be 'document' or 'fact', got {granularity!r}")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths: dict[str, dict[str, Path]] = {}
        for name in CORPORA:
            docs = self.corpus(name) if granularity == "document" else self.fact_passages(name)
            tsv, jsonl = out / f"{name}.tsv", out / f"{name}.jsonl"
            with tsv.open("w", encoding="utf-8", newline="") as f:
                writer = csv.writer(f, delimiter="\t", lineterminator="\n")  # quotes as DPR's psgs_w100.tsv does
                writer.writerow(("id", "text", "title"))
                writer.writerows((d.id, d.text, d.title) for d in docs)
            with jsonl.open("w", encoding="utf-8") as f:
                for d in docs:
                    f.write(json.dumps({"id": d.id, "title": d.title, "contents": d.text}, ensure_ascii=False) + "\n")
            paths[name] = {"tsv": tsv, "jsonl": jsonl}
        return paths

    # ---- judge examples ---------------------------------------------------------------------------
    def example(self, index: int, split: str = "train", domains: Sequence[str] = DOMAINS,
                style: str = "long") -> dict[str, Any]:
        """Judge example number `index` of `split`; the same (world, split, index, style) always gives the same
        record. `style="short"`: one single-word fact per pair (`SHORT_FACTS`), one sentence per answer."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        if style in ("short", "recombined"):
            return self._short_example(index, split, domains, recombined=style == "recombined")
        rng = random.Random(f"toyworld:{self.seed}:{split}:{index}")
        domain = domains[rng.randrange(len(domains))]
        doc = rng.choice([d for d in self.documents if d.domain == domain and self.split_of[d.id] == split])
        attributes = dict(zip((a.key for a in KINDS[doc.kind][1]), KINDS[doc.kind][1], strict=True))
        facts = dict(doc.facts)
        # Redraw until the negative really contradicts: no true value of a corrupted fact may survive in it
        # by coincidence (a subject named "Thea" and a birthplace "Thea", a year inside a population).
        for _ in range(100):
            asked = rng.sample(list(facts), rng.choice((2, 3)))
            corrupted = rng.sample(asked, 1 if len(asked) == 2 else rng.choice((1, 2)))
            wrong = {key: self._wrong_value(doc, key, rng) for key in corrupted}
            positive = self._long_answer(doc, asked, facts, attributes, rng)
            negative = self._long_answer(doc, asked, {**facts, **wrong}, attributes, rng)
            if not any(facts[key] in negative for key in corrupted):
                break
        else:
            raise RuntimeError(f"could not build a contradicting negative for {doc.id}")
        clauses = [attributes[k].question for k in asked]
        question = rng.choice(_QUESTIONS[domain]).format(
            name=doc.subject, clauses=", ".join(clauses[:-1]) + " and " + clauses[-1])

        # Pairs of consecutive indices share one coin and take opposite sides: exact A/B balance.
        coin = random.Random(f"toyworld:{self.seed}:{split}:ab:{index // 2}").random() < 0.5
        label = "A" if coin == (index % 2 == 0) else "B"
        answer_a, answer_b = (positive, negative) if label == "A" else (negative, positive)
        return {
            "id": f"toy-{self.seed}-{split}-{index:06d}",
            "domain": domain,
            "question": question,
            "answer_a": answer_a,
            "answer_b": answer_b,
            "label": label,
            "gold_tool": GOLD_TOOL[domain],
            "meta": {
                "source": "toyworld",
                "world_seed": self.seed,
                "doc_ids": [doc.id],
                "subject": doc.subject,
                "facts": [{"attribute": k, "value": facts[k]} for k in asked],
                "corrupted": [{"attribute": k, "true": facts[k], "wrong": wrong[k]} for k in corrupted],
            },
        }

    def examples(self, n: int, split: str = "train", domains: Sequence[str] = DOMAINS,
                 style: str = "long") -> list[dict[str, Any]]:
        unknown = set(domains) - set(DOMAINS)
        if unknown or not domains:
            raise ValueError(f"domains must be a non-empty subset of {DOMAINS}, got {list(domains)}")
        return [self.example(i, split, domains, style) for i in range(n)]

    def _short_example(self, index: int, split: str, domains: Sequence[str], recombined: bool) -> dict[str, Any]:
        rng = random.Random(f"toyworld:{self.seed}:{split}:{'recombined' if recombined else 'short'}:{index}")
        domain = domains[rng.randrange(len(domains))]
        doc = rng.choice([d for d in self.documents if d.domain == domain and d.kind in SHORT_FACTS
                          and (recombined or self.split_of[d.id] == split)])
        key = rng.choice(sorted(SHORT_FACTS[doc.kind]))
        attribute = {a.key: a for a in KINDS[doc.kind][1]}[key]
        if recombined:
            true = self._value(doc.kind, key, rng)
            passage = Document(f"recombined-{self.seed}-{split}-{index:06d}", doc.title,
                               attribute.sentence.format(name=doc.subject, value=true), doc.domain, doc.kind,
                               doc.subject, ((key, true),))
            wrong = next(v for v in iter(lambda: self._value(doc.kind, key, rng), None)
                         if v not in f"{passage.title}\n{passage.text}")
        else:
            true, wrong = dict(doc.facts)[key], self._wrong_value(doc, key, rng)
        # Without the closing full stop the value ends the answer, so the compact prompt's letter follows it directly.
        phrasing = _SHORT_PHRASINGS.get((doc.kind, key), attribute.phrasings[0]).removesuffix(".")
        positive, negative = phrasing.format(name=doc.subject, value=true), phrasing.format(name=doc.subject,
                                                                                           value=wrong)
        coin = random.Random(f"toyworld:{self.seed}:{split}:short-ab:{index // 2}:{recombined}").random() < 0.5
        label = "A" if coin == (index % 2 == 0) else "B"
        answer_a, answer_b = (positive, negative) if label == "A" else (negative, positive)
        return {
            "id": f"toy-{self.seed}-{split}-{'recombined' if recombined else 'short'}-{index:06d}", "domain": domain,
            "question": _SHORT_QUESTIONS[domain].format(name=doc.subject, clause=attribute.question),
            "answer_a": answer_a, "answer_b": answer_b, "label": label, "gold_tool": GOLD_TOOL[domain],
            "meta": {"source": "toyworld", "world_seed": self.seed, "style": "recombined" if recombined else "short",
                     "doc_ids": [doc.id], "subject": doc.subject, "facts": [{"attribute": key, "value": true}],
                     "corrupted": [{"attribute": key, "true": true, "wrong": wrong}],
                     **({"passage": {"id": passage.id, "title": passage.title, "text": passage.text}}
                        if recombined else {})},
        }

    def hedged(self, example: dict[str, Any], seed: int = 0, wordings: str = "six") -> dict[str, Any]:
        """`example` (short or recombined) with its wrong answer replaced by a hedge that names both values (one of
        `HEDGE_WORDINGS[wordings]`, chosen by `seed` and the id); the label, the fact and the evidence stay, so every
        gold trajectory and reward is unchanged. `meta["hedge"]` marks it."""
        if example["meta"].get("style") not in ("short", "recombined"):
            raise ValueError(f"{example['id']}: hedged pairs need a short or recombined example")
        if wordings not in HEDGE_WORDINGS:
            raise ValueError(f"hedge wordings must be one of {sorted(HEDGE_WORDINGS)}, got {wordings!r}")
        fact = example["meta"]["corrupted"][0]
        right_key, wrong_key = ("answer_a", "answer_b") if example["label"] == "A" else ("answer_b", "answer_a")
        rng = random.Random(f"toyworld:hedge:{seed}:{example['id']}")
        hedge = rng.choice(HEDGE_WORDINGS[wordings]).format(right=example[right_key], wrong=example[wrong_key],
                                          true_value=fact["true"], wrong_value=fact["wrong"])
        return {**example, "id": f"{example['id']}-hedge", wrong_key: hedge,
                "meta": {**example["meta"], "hedge": True}}

    def _wrong_value(self, doc: Document, key: str, rng: random.Random) -> str:
        """A plausible value for `key` that the document does not contain anywhere."""
        page = f"{doc.title}\n{doc.text}"
        for _ in range(1000):
            value = self._value(doc.kind, key, rng)
            if value not in page:
                return value
        raise RuntimeError(f"could not draw a wrong {key!r} for {doc.id}")

    def _long_answer(self, doc: Document, asked: Iterable[str], facts: dict[str, str],
                     attributes: dict[str, Attribute], rng: random.Random) -> str:
        sentences = [rng.choice(_INTROS[doc.domain]).format(name=doc.subject)]
        for key in asked:
            sentences.append(rng.choice(attributes[key].phrasings).format(name=doc.subject, value=facts[key]))
        sentences.append(rng.choice(_FILLERS[doc.domain]))
        return " ".join(sentences)

    # ---- gold trajectories (SFT warm-up, parser/reward fixtures) ----------------------------------
    def compact_trajectory(self, example: dict[str, Any], tool: str | None = None, search: bool = True) -> str:
        """A correct judging completion for a short example, in the compact format a tiny judge can learn: name the
        fact, search `subject word`, read one fact passage, write the value the evidence gives followed by the letter
        of the answer that states it (the decision is then a copy), answer. `tool` overrides the gold tool (an SFT
        start whose tool choice is uninformed); `search=False` names the fact and answers at once (an SFT start
        that does not always search: without evidence its letter is a guess)."""
        if example["meta"].get("style") not in ("short", "recombined"):
            raise ValueError(f"{example['id']}: compact trajectories need a short or recombined example")
        doc = self.by_id[example["meta"]["doc_ids"][0]]
        fact = example["meta"]["corrupted"][0]
        key, true, label = fact["attribute"], fact["true"], example["label"]
        word = SHORT_FACTS[doc.kind][key]
        if not search:
            return f"{open_tag(THINK)}{word}{close_tag(THINK)}\n{open_tag(ANSWER)}{label}{close_tag(ANSWER)}"
        if "passage" in example["meta"]:
            passage = Document(**example["meta"]["passage"], domain=doc.domain, kind=doc.kind, subject=doc.subject,
                               facts=((key, true),))
        else:
            passage = self.fact_passage(doc, key)
        return (f"{open_tag(THINK)}{word}{close_tag(THINK)}\n"
                f"{open_tag(SEARCH)}{format_call(tool or GOLD_TOOL[example['domain']], f'{doc.subject} {word}')}"
                f"{close_tag(SEARCH)}{render_information([passage.passage()])}"
                f"{open_tag(THINK)}{true} {label}{close_tag(THINK)}\n{open_tag(ANSWER)}{label}{close_tag(ANSWER)}")

    def gold_trajectory(self, example: dict[str, Any]) -> str:
        """A correct judging completion: search the right corpus, cite the evidence, answer."""
        doc = self.by_id[example["meta"]["doc_ids"][0]]
        attributes = {a.key: a for a in KINDS[doc.kind][1]}
        first = example["meta"]["corrupted"][0]
        key, true, wrong = first["attribute"], first["true"], first["wrong"]
        label = example["label"]
        loser = "B" if label == "A" else "A"
        tool = GOLD_TOOL[example["domain"]]
        query = f"{doc.subject} {attributes[key].keyword}"
        evidence = attributes[key].sentence.format(name=doc.subject, value=true)
        return (
            f"{open_tag(THINK)}The answers disagree about {attributes[key].question}: one says {true}, "
            f"the other {wrong}. I will check the source.{close_tag(THINK)}\n"
            f"{open_tag(SEARCH)}{format_call(tool, query)}{close_tag(SEARCH)}"
            f"{render_information([doc.passage()])}"
            f"{open_tag(THINK)}The evidence states: \"{evidence}\" "
            f"Answer {loser} claims {wrong}, which contradicts it; Answer {label} agrees with the "
            f"source.{close_tag(THINK)}\n{open_tag(ANSWER)}{label}{close_tag(ANSWER)}"
        )


def hedge_every(share: float) -> Callable[[int], bool]:
    """Which example indices carry a hedged negative for a `share` in [0, 1]: spread evenly (index i when
    floor((i + 1) * share) > floor(i * share)), so any run of indices holds the share to within one."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"hedge_share must be in [0, 1], got {share}")
    return lambda i: int((i + 1) * share) > int(i * share)


def write_dataset(world: ToyWorld, out_dir: str | Path, n_train: int, n_test: int, style: str = "long",
                  granularity: str = "document", domains: Sequence[str] = DOMAINS, hedge_share: float = 0.0,
                  hedge_wordings: str = "six") -> Path:
    """Corpora, JSONL splits and an HF `DatasetDict` (`dataset/`) of judge examples under `out_dir`. The tiny
    judge's recipe uses `style="short"` pairs over `granularity="fact"` corpora. `hedge_share` of the train pairs
    (short styles only) set the right answer against a hedge naming both values (`ToyWorld.hedged`, worded from
    `HEDGE_WORDINGS[hedge_wordings]`); the test split is never hedged."""
    from datasets import Dataset, DatasetDict

    hedge = hedge_every(hedge_share)
    if hedge_share and style == "long":
        raise ValueError("hedge_share needs short pairs (style='short' or 'recombined')")
    out = Path(out_dir)
    world.write_corpora(out / "corpora", granularity)
    train = world.examples(n_train, "train", domains, style)
    if hedge_wordings not in HEDGE_WORDINGS:
        raise ValueError(f"hedge_wordings must be one of {sorted(HEDGE_WORDINGS)}, got {hedge_wordings!r}")
    splits = {"train": [world.hedged(e, wordings=hedge_wordings) if hedge(i) else e for i, e in enumerate(train)],
              "test": world.examples(n_test, "test", domains, style)}
    for name, rows in splits.items():
        with (out / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    DatasetDict({k: Dataset.from_list(v) for k, v in splits.items()}).save_to_disk(str(out / "dataset"))
    return out

