"""Downstream task files from real Wikipedia text (the 10,033 Vital Articles lead sections that `retrieval.wikipedia`
reads), shaped like the real benchmarks' files so the local lm-evaluation-harness configs (eval/lm_eval_tasks/) run
them unchanged: `build` makes the rows, `write` writes them under a DATA_DIR (`python -m eval.wiki_downstream`).

Every question comes from an article's first sentence, split at its first copula ("X is / was / are / were ...")
when the words before it name the article:
- `triviaqa/validation.jsonl`: "What was a French general and statesman who led ..." → the title (aliases: the
  title, and the title without a trailing parenthesis); a sentence that says a word of the title after its copula
  is not asked (the answer would be in the question);
- `truthfulqa_mc/validation.jsonl`: "What is <title>?"; MC1: the article's own sentence first (the harness's
  target is choice 0) against three sentences of other articles of its topic, said of this title; MC2: the same
  plus the article's Wikidata description as a second true answer and a fourth false one;
- `mmlu_pro/{test,validation}.jsonl`: "Which of the following is described as "<description>"?" with ten titles
  of the topic (the answer's place seeded), the article mapped onto one of MMLU-Pro's 14 categories by its topic
  and keywords, the test rows spread over the categories as far as the articles allow; validation (the 5-shot
  chain-of-thought examples) holds five other articles per category, with a one-line reasoning.

Each article is used by one task at most, so no question gives another away. Written once per --out (atomic);
`summary.json` counts the articles used and skipped by reason.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from plumbing import atomic
from retrieval.wikipedia import SENTENCE_END, summaries_file

COPULA = re.compile(r"\s(is|was|are|were)\s")
PAREN = re.compile(r"\s*\([^()]*\)")
LETTERS = "ABCDEFGHIJ"
# Wikipedia's Vital Articles topics onto MMLU-Pro's 14 categories, spelled as its rows spell them (the harness keeps
# a subject's rows by category, its shots too, and fails on a subject with none): a topic's first matching keyword
# rule (on the description and first sentence), else its default
CATEGORY_RULES = {
    "Biology and health sciences": ([("health", r"disease|medic|health|disorder|drug|infection|syndrome|therap")],
                                    "biology"),
    "Physical sciences": ([("chemistry", r"chemi|compound|element|acid|molecule|metal")], "physics"),
    "Technology": ([("computer science", r"comput|software|program|internet|digital|data")], "engineering"),
    "Society and social sciences": ([("law", r"\blaw|legal|court|crime|rights"), ("psychology", r"psycholog|mental"),
                                     ("business", r"business|company|trade|market|corporat")], "economics"),
    "Mathematics": ([], "math"), "History": ([], "history"), "Philosophy and religion": ([], "philosophy"),
}
MMLU_SUBJECTS = ("biology", "business", "chemistry", "computer science", "economics", "engineering", "health",
                 "history", "law", "math", "other", "philosophy", "physics", "psychology")


@dataclass(frozen=True)
class Lead:
    title: str
    topic: str
    description: str
    subject: str  # the first sentence's words before its copula
    verb: str  # is / was / are / were
    predicate: str  # the rest of the first sentence, without its full stop

    @property
    def sentence(self) -> str:
        return f"{self.subject} {self.verb} {self.predicate}."

    def said_of(self, other: Lead) -> str:
        """This article's predicate said of `other`'s subject (a false statement when the articles differ)."""
        return f"{other.subject} {other.verb} {self.predicate}."

    @property
    def category(self) -> str:
        rules, default = CATEGORY_RULES.get(self.topic, ([], "other"))
        text = f"{self.description} {self.predicate}".lower()
        return next((name for name, pattern in rules if re.search(pattern, text)), default)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 4}


def parse_lead(title: str, extract: str, topic: str, description: str) -> Lead | str:
    """The article's first sentence as a `Lead`, or why it cannot be asked."""
    sentence = SENTENCE_END.split(" ".join(extract.split()), maxsplit=1)[0]
    sentence = PAREN.sub("", sentence).strip()
    if not sentence.endswith("."):
        return "first sentence does not end with a full stop"
    match = COPULA.search(sentence)
    if match is None:
        return "no copula in the first sentence"
    subject, predicate = sentence[:match.start()].strip(), sentence[match.end():-1].strip()
    if not subject or len(subject.split()) > 12:
        return "subject too long"
    name = PAREN.sub("", title)
    if not _words(name) & _words(subject) and name.lower() not in subject.lower():
        return "subject does not name the article"
    if len(predicate.split()) < 4:
        return "predicate too short"
    return Lead(title, topic or "Uncategorized", description.strip(), subject, match.group(1), predicate)


def read_leads(path: str | Path | None = None, skipped: Counter | None = None) -> list[Lead]:
    """Every askable article of the lead-section file (default: the packaged one), in title order."""
    articles = json.loads(Path(path or summaries_file()).read_text(encoding="utf-8"))
    skipped = skipped if skipped is not None else Counter()
    leads = []
    for key in sorted(articles):
        a = articles[key]
        if not isinstance(a, dict) or not isinstance(a.get("extract"), str) or not a["extract"].strip():
            skipped["no extract"] += 1
            continue
        got = parse_lead(str(a.get("title") or key), a["extract"], str(a.get("topic") or ""),
                         str(a.get("description") or ""))
        if isinstance(got, str):
            skipped[got] += 1
        else:
            leads.append(got)
    return leads


def aliases(title: str) -> list[str]:
    short = PAREN.sub("", title).strip()
    return [title] if short == title else [title, short]


def trivia_row(lead: Lead, index: int) -> dict | None:
    if _words(PAREN.sub("", lead.title)) & _words(lead.predicate):
        return None
    who = "Who" if lead.topic == "People" else "What"
    names = aliases(lead.title)
    return {"question": f"{who} {lead.verb} {lead.predicate}", "question_id": f"wiki_{index}",
            "question_source": "wikipedia-vital-articles",
            "answer": {"aliases": names, "normalized_aliases": [n.lower() for n in names], "value": lead.title,
                       "normalized_value": lead.title.lower(), "type": "WikipediaEntity"}}


def truthful_row(lead: Lead, others: list[Lead]) -> dict:
    ask = "Who" if lead.topic == "People" else "What"
    false = [o.said_of(lead) for o in others]
    mc2_true = [lead.sentence] + ([f"{lead.subject} {lead.verb} described as: {lead.description}."]
                                  if lead.description else [])
    article = lead.subject.split()[0] in ("The", "A", "An") and len(lead.subject.split()) <= 6
    name = lead.subject[0].lower() + lead.subject[1:] if article else PAREN.sub("", lead.title)
    return {"question": f"{ask} {lead.verb} {name}?",
            "mc1_targets": {"choices": [lead.sentence] + false[:3], "labels": [1, 0, 0, 0]},
            "mc2_targets": {"choices": mc2_true + false, "labels": [1] * len(mc2_true) + [0] * len(false)}}


def mmlu_row(lead: Lead, others: list[Lead], index: int, rng: random.Random, with_cot: bool) -> dict:
    options = [PAREN.sub("", o.title) for o in others[:9]]
    answer_index = rng.randrange(10)
    options.insert(answer_index, PAREN.sub("", lead.title))
    letter = LETTERS[answer_index]
    cot = (f"A: Let's think step by step. {lead.sentence} It is described as \"{lead.description}\". "
           f"The answer is ({letter}).") if with_cot else ""
    return {"question_id": index, "question": f"Which of the following is described as \"{lead.description}\"?",
            "options": options, "answer": letter, "answer_index": answer_index, "cot_content": cot,
            "category": lead.category, "src": "wikipedia-vital-articles"}


def _trim(leads: list[Lead], n: int) -> list[Lead]:
    """The first `n` of `leads`, cut from the end but sparing each category's last row while another can give one:
    the harness cannot load a category with no rows, and a plain cut of the stratified list empties the last
    categories whenever n is not near a multiple of 14 (n = 20 keeps 10)."""
    kept = leads[:]
    count = Counter(lead.category for lead in kept)
    i = len(kept) - 1
    while len(kept) > n and i >= 0:
        if count[kept[i].category] > 1:
            count[kept[i].category] -= 1
            del kept[i]
        i -= 1
    return kept[:n]


def build(n: int, seed: int = 0, path: str | Path | None = None, shots_per_category: int = 5) -> tuple[dict, dict]:
    """({file: rows}, summary) for every task; `n` questions per task (fewer when the articles run out)."""
    skipped: Counter = Counter()
    leads = read_leads(path, skipped)
    rng = random.Random(f"wiki-downstream:{seed}")
    order = leads[:]
    rng.shuffle(order)
    by_topic: dict[str, list[Lead]] = defaultdict(list)
    for lead in leads:
        by_topic[lead.topic].append(lead)
    used: set[str] = set()

    def take(count: int, ok=lambda lead: True) -> list[Lead]:
        picked = []
        for lead in order:
            if len(picked) == count:
                break
            if lead.title not in used and ok(lead):
                used.add(lead.title)
                picked.append(lead)
        return picked

    def distractors(lead: Lead, k: int, need_description: bool = False) -> list[Lead]:
        pool = [o for o in by_topic[lead.topic] if o.title != lead.title and (o.description or not need_description)
                and PAREN.sub("", o.title) != PAREN.sub("", lead.title)]
        if len(pool) < k:  # a small topic borrows from every article
            pool += [o for o in leads if o.topic != lead.topic]
        return random.Random(f"{seed}:{lead.title}").sample(pool, k)

    trivia = []
    for lead in order:
        if len(trivia) == n:
            break
        if lead.title in used:
            continue
        row = trivia_row(lead, len(trivia))
        if row is None:
            skipped["trivia: predicate names the answer"] += 1
            continue
        used.add(lead.title)
        trivia.append(row)
    truthful = [truthful_row(lead, distractors(lead, 4)) for lead in take(n)]
    has_description = lambda lead: bool(lead.description)  # noqa: E731
    shots = []
    for subject in MMLU_SUBJECTS:
        mine = take(shots_per_category, lambda lead, s=subject: has_description(lead) and lead.category == s)
        shots += [mmlu_row(lead, distractors(lead, 9), len(shots) + i, rng, True) for i, lead in enumerate(mine)]
    per_subject = -(-n // len(MMLU_SUBJECTS))  # stratified, so every subject of the harness's group has rows
    picked = [lead for subject in MMLU_SUBJECTS
              for lead in take(per_subject, lambda lead, s=subject: has_description(lead) and lead.category == s)]
    picked = _trim(picked + take(n - len(picked), has_description), n)
    tests = [mmlu_row(lead, distractors(lead, 9), i, rng, False) for i, lead in enumerate(picked)]
    files = {"triviaqa/validation.jsonl": trivia, "truthfulqa_mc/validation.jsonl": truthful,
             "mmlu_pro/test.jsonl": tests, "mmlu_pro/validation.jsonl": shots}
    summary = {"askable_articles": len(leads), "skipped": dict(skipped.most_common()), "seed": seed,
               "rows": {name: len(rows) for name, rows in files.items()},
               "mmlu_pro_categories": dict(Counter(r["category"] for r in tests).most_common())}
    return files, summary


def write(out: str | Path, n: int, seed: int = 0, path: str | Path | None = None) -> dict:
    out = Path(out)
    done = out / "summary.json"
    if done.exists():
        return json.loads(done.read_text(encoding="utf-8"))
    files, summary = build(n, seed, path)
    for name, rows in files.items():
        atomic.write_jsonl(out / name, rows)
    done.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary
