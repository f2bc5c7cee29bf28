"""How a rejected answer is made from a Wikipedia article's own text: the text cut to a length class at sentence
ends, and one kind of factual change inside the cut, recorded so that `replay` makes it again. Library code of
`data_synthesis.wiki_dataset`, which runs it over every article:

    corpus = index(read_articles(), LENGTHS); pair = build(article, "date", "short", corpus, random.Random(0))

Lengths: `sentence` (the first, of 8 words or more), `short` (the first 3, else 2, sentences within 70 words), `lead`
(the longest run of sentences within 150 words, at least 60). Kinds: `numbers` (every number changed), `date` (one
year moved by 5-60 years, a range keeping its order), `swap` (another article of the topic, cut alike, its title
replaced by the asked one), `entity` (one mention of another Vital Article replaced by a name-like article of that
one's topic), `place` (the same for Geography articles), `negation` (one main-clause is / was / are / were / can
negated), `exchange` (two numbers of the cut in each other's place: no word the evidence lacks, so word overlap
cannot tell the answers apart). The rejected answer is within 10 % of the chosen one's words.
"""

from __future__ import annotations

import bisect
import functools
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from data_synthesis.wiki_articles import NUMBER, Article, alter_numbers

KINDS = ("numbers", "date", "swap", "entity", "place", "negation", "exchange")
LENGTHS = ("sentence", "short", "lead")
GEOGRAPHY = "Geography"
# the Level-3 core articles carry this topic whatever they are, so a stand-in for one must share its description's
# first word ("Country ...", "City ...") instead of merely its topic
UNCATEGORIZED = "Uncategorized"
MIN_SENTENCE, SHORT_WORDS, LEAD_WORDS, MIN_LEAD = 8, 70, 150, 60
TOLERANCE = 0.10  # the rejected answer's words may differ from the chosen one's by this share
LAST_YEAR = 2030

# retrieval.wikipedia.SENTENCE_END, keeping a closing quote or bracket with the sentence it closes
BOUNDARY = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")
# a full stop that ends an initial or an abbreviation ("John F. Kennedy", "U.S.", "c. 1450") ends no sentence
ABBREVIATION = re.compile(r"(?:^|[\s(\"'])(?:(?:[A-Z]\.)+|(?:St|Mt|Ft|Dr|Mr|Mrs|Ms|Jr|Sr|No|Vol|c|ca|fl|r|b|d|vs)\.)$")
WORD = re.compile(r"\w+")
# a name followed by these is part of a longer one: "United States Navy", "Republic of Malta"
CONTINUED = re.compile(r" (?:[A-Z]|(?:of|de|del|di|von|van) [A-Z])")
# "Battle of Hastings" is a name although "of" is lower-case; "Black hole" is not
FUNCTION_WORDS = frozenset("of the and de la le les von van der den du des del da di do dos das in on for at to y al "
                           "el bin ibn upon".split())
VERB = re.compile(r"(?<=\S) (is|was|are|were|can) (?!not\b|also\b|never\b|no\b|longer\b)")
# a verb after one of these may belong to a subordinate clause; a negation is only put in a main clause
CLAUSE = re.compile(r"[,;:]|\b(?:which|that|who|whom|whose|where|when|while|although|because|if|as)\b")
NEGATED = {"is": "is not", "was": "was not", "are": "are not", "were": "were not", "can": "cannot"}


class Skip(Exception):
    """Why an article gives no pair of some length or kind (the message is the counted reason)."""


@dataclass(frozen=True)
class Change:
    attribute: str
    true: str  # the chosen answer's words
    wrong: str  # the words the rejected answer has in their place


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    wrong: str


@dataclass(frozen=True)
class JudgePair:
    kind: str
    length: str
    article: Article
    chosen: str  # the article's own text, cut to `length`
    rejected: str
    changes: tuple[Change, ...]
    partner: str = ""  # swap: the article whose text stands in


@dataclass(frozen=True)
class Corpus:
    """The articles with what the kinds look up, built once by `index`."""

    by_title: dict[str, Article]
    cuts: dict[str, dict[str, str]]  # title -> length -> cut text, for the lengths the article has
    heads: dict[str, tuple[str, str]]  # title -> `heads`, what kind of thing the article is
    mentions: dict[str, tuple[tuple[int, int, Article], ...]]  # title -> (start, end, named article) in its text
    stand_ins: dict[tuple, tuple[Article, ...]]  # (topic,) and (topic, "first" | "last", word) -> name-like articles
    partners: dict[tuple, tuple[tuple[int, str], ...]]  # (topic, length[, "first" | "last", word]) -> (words, title)
    skipped: Counter  # (article | length, reason) -> articles
    max_words: int


def _words(text: str) -> int:
    return len(text.split())


def sentence_ends(text: str) -> list[int]:
    """Where each sentence of `text` ends (the last at len(text))."""
    ends = [m.end(1) for m in BOUNDARY.finditer(text)
            if m.group(1) or not ABBREVIATION.search(text[max(0, m.start() - 12):m.start()])]
    return [*ends, len(text)]


def cut(text: str, length: str, max_words: int = LEAD_WORDS) -> str:
    """`text` cut at a sentence end to the length class `length`, or Skip saying why it cannot be."""
    ends = sentence_ends(text)
    totals, start = [], 0
    for end in ends:
        totals.append((totals[-1] if totals else 0) + _words(text[start:end]))
        start = end
    if length == "sentence":
        if totals[0] < MIN_SENTENCE:
            raise Skip(f"first sentence under {MIN_SENTENCE} words")
        if totals[0] > max_words:
            raise Skip("first sentence over the longest answer")
        return text[:ends[0]]
    if length == "short":
        cap = min(SHORT_WORDS, max_words)
        for k in (3, 2):
            if k <= len(ends) and totals[k - 1] <= cap:
                return text[:ends[k - 1]]
        raise Skip(f"no 2 sentences within {cap} words")
    if length == "lead":
        cap = min(LEAD_WORDS, max_words)
        k = bisect.bisect_right(totals, cap)
        if totals[-1] < MIN_LEAD:
            raise Skip(f"under {MIN_LEAD} words")
        if k == 0 or totals[k - 1] < MIN_LEAD:
            raise Skip(f"no sentence end between {MIN_LEAD} and {cap} words")
        return text[:ends[k - 1]]
    raise ValueError(f"unknown length {length!r}; known: {LENGTHS}")


@functools.lru_cache(maxsize=1 << 15)
def _whole(span: str) -> re.Pattern:
    return re.compile(rf"(?<!\w){re.escape(span)}(?!\w)")


def apply_edits(text: str, attribute: str, edits: Sequence[Edit]) -> tuple[str, tuple[Change, ...]]:
    """`text` with `edits` (in order, apart) made, and the changes `replay` makes again: a change's words reach left,
    whole words at a time, until their first whole-word occurrence is the edited one."""
    out: list[str] = []
    changes, done = [], 0
    for e in edits:
        out.append(text[done:e.start])
        evolving = "".join(out) + text[e.start:]
        start = left = len(evolving) - len(text) + e.start
        end = start + e.end - e.start
        if not _whole(evolving[start:end]).match(evolving, start):
            raise ValueError(f"edit {e} is not of whole words")
        while left > 0 and _whole(evolving[left:end]).search(evolving).start() != left:
            left = evolving.rfind(" ", 0, left - 1) + 1
        changes.append(Change(attribute, evolving[left:end], evolving[left:start] + e.wrong))
        out.append(e.wrong)
        done = e.end
    out.append(text[done:])
    return "".join(out), tuple(changes)


def replay(text: str, changes: Iterable[Change]) -> str:
    """`text` with, change by change, the first whole-word occurrence of `true` put as `wrong`: a pair's rejected
    answer from its chosen one, for every kind but swap."""
    for c in changes:
        m = _whole(c.true).search(text)
        if m is None:
            raise ValueError(f"{c.true!r} does not occur in the text")
        text = text[:m.start()] + c.wrong + text[m.end():]
    return text


def _pick(rng: random.Random, items: Sequence, fits: Callable) -> object | None:
    """The first item that `fits` returns something for, from a random start on, going round."""
    start = rng.randrange(len(items)) if items else 0
    for i in range(len(items)):
        found = fits(items[(start + i) % len(items)])
        if found is not None:
            return found
    return None


def _numbers(a: Article, chosen: str, length: str, rng: random.Random, corpus: Corpus, taken):
    edits = [Edit(m.start(), m.end(), alter_numbers(m.group(0), rng)[0]) for m in NUMBER.finditer(chosen)]
    if not edits:
        raise Skip("no number in the cut")
    return (*apply_edits(chosen, "numbers", edits), "")


def _date(a: Article, chosen: str, length: str, rng: random.Random, corpus: Corpus, taken):
    years = [m for m in NUMBER.finditer(chosen) if m.group(0).isdigit() and 1000 <= int(m.group(0)) <= LAST_YEAR]
    if not years:
        raise Skip("no year in the cut")
    years = [m for m in years if m.group(0) not in a.description]  # the question would give the change away
    if not years:
        raise Skip("every year in the cut is in the question")
    rng.shuffle(years)
    for m in years:
        year = int(m.group(0))
        before = re.search(r"(\d{4}) ?[–-] ?$", chosen[:m.start()])  # a range keeps its order
        after = re.match(r" ?[–-] ?(\d{4})", chosen[m.end():])
        low, high = int(before.group(1)) if before else 0, int(after.group(1)) if after else LAST_YEAR + 1
        moves = [s * d for d in range(5, 61) for s in (1, -1) if low < year + s * d < high
                 and 1000 <= year + s * d <= LAST_YEAR]
        if moves:
            return (*apply_edits(chosen, "date", [Edit(m.start(), m.end(), str(year + rng.choice(moves)))]), "")
    raise Skip("no year that moves 5-60 years within its range")


def name(title: str) -> str:
    """How a text names the article `title`: "Callisto (moon)" as "Callisto"."""
    return re.sub(r" \([^()]*\)$", "", title)


def _put(text: str, old: str, new: str, lower: bool) -> str:
    """`text` with every whole-word `old` as `new`, written lower-case first mid-sentence when `lower`."""
    def sub(m: re.Match) -> str:
        starts = m.start() == 0 or text[:m.start()].rstrip()[-1:] in (".", "!", "?")
        return new if starts or not lower else new[0].lower() + new[1:]

    return _whole(old).sub(sub, text)


def _swap(a: Article, chosen: str, length: str, rng: random.Random, corpus: Corpus, taken):
    words, asked = _words(chosen), name(a.title)
    lower = asked[0].isupper() and _whole(asked[0].lower() + asked[1:]).search(a.text) is not None  # "pipe organ"

    def near(key: tuple) -> tuple[tuple[int, str], ...]:
        row = corpus.partners.get(key, ())
        slack = 2  # the title put in may be a word or two longer or shorter than the partner's
        return row[bisect.bisect_left(row, (int(words * (1 - TOLERANCE)) - slack,)):
                   bisect.bisect_right(row, (int(words * (1 + TOLERANCE)) + slack + 1,))]

    def fits(entry: tuple[int, str]):
        title = entry[1]
        text = corpus.cuts[title][length]
        if title == a.title or title in taken or asked in text:
            return None
        rejected = _put(text, name(title), asked, lower)
        return (rejected, title) if abs(_words(rejected) - words) <= TOLERANCE * words and rejected != chosen else None

    # a partner of the same kind of thing ("Country in ...", "... footballer") first
    alike = [e for key in _similar(corpus.heads[a.title]) for e in near((a.topic, length, *key))]
    found = _pick(rng, alike, fits) or _pick(rng, near((a.topic, length)), fits)
    if found is None:
        raise Skip("no unused partner of the topic within 10 % of the length")
    rejected, partner = found
    return rejected, (Change("swap", a.title, partner),), partner


def heads(a: Article) -> tuple[str, str]:
    """The first and last words of `a`'s description, bracketed parts and numbers left out: what kind of thing it is
    ("Country in Oceania", "Portuguese footballer (born 1985)")."""
    words = [w.lower() for w in re.sub(r"\([^()]*\)", " ", a.description).replace(",", " ").split() if w.isalpha()]
    return (words[0], words[-1]) if words else ("", "")


def _similar(first_last: tuple[str, str]) -> list[tuple[str, str]]:
    first, last = first_last
    return [("first", first), ("last", last)] if first else []


def _mentioned(topic: str | None, a: Article, chosen: str, length: str, rng: random.Random, corpus: Corpus, taken):
    found = [f for f in corpus.mentions[a.title] if f[1] <= len(chosen) and topic in (None, f[2].topic)]
    if not found:
        raise Skip(f"no other {topic or 'Vital'} article named in the cut")
    found = [f for f in found if f[2].title not in a.description]  # the question would give the change away
    if not found:
        raise Skip("every article named in the cut is in the question")
    rng.shuffle(found)
    found.sort(key=lambda f: -min(2, len(f[2].title.split())))  # several-word names first: surely names
    words = _words(chosen)
    for start, end, named in found:
        def fits(c: Article, named=named):
            grow = len(c.title.split()) - len(named.title.split())
            ok = (c.title not in a.text and named.title not in c.title and abs(grow) <= TOLERANCE * words
                  and words + grow <= corpus.max_words)
            return c if ok else None

        # an article of the same kind of thing first; the Uncategorized topic is no kind of thing at all
        similar = [c for key in _similar(corpus.heads[named.title])
                   for c in corpus.stand_ins.get((named.topic, *key), ())]
        for stand_ins in (similar, () if named.topic == UNCATEGORIZED else corpus.stand_ins.get((named.topic,), ())):
            stand_in = _pick(rng, stand_ins, fits)
            if stand_in is not None:
                return (*apply_edits(chosen, "place" if topic else "entity", [Edit(start, end, stand_in.title)]), "")
    raise Skip("no stand-in of the named article's topic that fits")


def _negation(a: Article, chosen: str, length: str, rng: random.Random, corpus: Corpus, taken):
    edits, start = [], 0
    for end in sentence_ends(chosen):
        sentence = chosen[start:end]
        for _ in range(2):  # what brackets hold is no main clause
            sentence = re.sub(r"\([^()]*\)", lambda m: "_" * len(m.group(0)), sentence)
        verb = VERB.search(sentence)
        if verb and not CLAUSE.search(sentence[:verb.start()]):
            edits.append(Edit(start + verb.start(1), start + verb.end(1), NEGATED[verb.group(1)]))
        start = end + 1
    if not edits:
        raise Skip("no main-clause is / was / are / were / can")
    return (*apply_edits(chosen, "negation", [rng.choice(edits)]), "")


def _exchange(a: Article, chosen: str, length: str, rng: random.Random, corpus: Corpus, taken):
    """Two different numbers of the cut, both years or both not, put in each other's place: every word of the
    rejected answer is in the evidence, so only a judge that reads which fact goes where can tell them apart."""
    def is_year(m: re.Match) -> bool:
        return m.group(0).isdigit() and 1000 <= int(m.group(0)) <= LAST_YEAR

    found = [m for m in NUMBER.finditer(chosen) if m.group(0) not in a.description]
    pairs = [(x, y) for i, x in enumerate(found) for y in found[i + 1:]
             if x.group(0) != y.group(0) and is_year(x) == is_year(y)]
    if not pairs:
        raise Skip("no two different numbers of one sort in the cut")
    x, y = rng.choice(pairs)
    return (*apply_edits(chosen, "exchange", [Edit(x.start(), x.end(), y.group(0)),
                                              Edit(y.start(), y.end(), x.group(0))]), "")


BUILDERS = {"numbers": _numbers, "date": _date, "swap": _swap, "entity": functools.partial(_mentioned, None),
            "place": functools.partial(_mentioned, GEOGRAPHY), "negation": _negation, "exchange": _exchange}


def build(a: Article, kind: str, length: str, corpus: Corpus, rng: random.Random,
          taken: set[str] | frozenset[str] = frozenset()) -> JudgePair:
    """The pair of `kind` and `length` about `a` (swap partners outside `taken`), or Skip saying why there is none."""
    chosen = corpus.cuts[a.title][length]
    rejected, changes, partner = BUILDERS[kind](a, chosen, length, rng, corpus, taken)
    words = _words(chosen)
    if rejected == chosen:
        raise Skip("the change leaves the text as it was")
    if abs(_words(rejected) - words) > TOLERANCE * words:
        raise Skip("the change moves the length by over 10 %")
    if _words(rejected) > corpus.max_words:
        raise Skip("the rejected answer is over the longest answer")
    return JudgePair(kind, length, a, chosen, rejected, changes, partner)


def _name_like(title: str, counts: Counter) -> bool:
    """A proper name: every content word capitalised, and a one-word title written lower-case less often than not."""
    if len(title) < 4 or "(" in title or not WORD.match(title) or not title[0].isupper():
        return False
    words = title.split()
    if len(words) == 1:
        return counts[title.lower()] < counts[title]
    return all(w[0].isupper() or not w[0].isalpha() or w in FUNCTION_WORDS for w in words)


def _mentions(a: Article, names: dict[str, list[Article]]) -> tuple[tuple[int, int, Article], ...]:
    """Where `a`'s text names another name-like article: whole words, case-sensitive, longest name first, not part
    of `a`'s own title or of a longer name."""
    text, out, after = a.text, [], 0
    own = [(m.start(), m.end()) for m in re.finditer(re.escape(a.title), text)]
    for token in WORD.finditer(text):
        start = token.start()
        if start < after:
            continue
        for named in names.get(token.group(), ()):
            end = start + len(named.title)
            if not text.startswith(named.title, start) or (end < len(text) and WORD.match(text[end])):
                continue
            after = end
            prev = re.search(r"(\S+) $", text[:start])  # a capitalised word before, not starting a sentence
            inside = prev and prev.group(1)[0].isupper() and text[:prev.start()].rstrip()[-1:] not in ("", *".!?")
            if (named.title != a.title and not any(s < end and start < e for s, e in own) and not inside
                    and not CONTINUED.match(text, end)):
                out.append((start, end, named))
            break
    return tuple(out)


def index(articles: Sequence[Article], lengths: Sequence[str] = LENGTHS, max_words: int = LEAD_WORDS) -> Corpus:
    """The cuts, the names each text mentions, the stand-ins by topic and the swap partners by length."""
    skipped: Counter = Counter()
    by_title: dict[str, Article] = {}
    cuts: dict[str, dict[str, str]] = {}
    for a in articles:
        if a.title in by_title:
            skipped[("article", "a second article of the same title")] += 1
            continue
        by_title[a.title], cuts[a.title] = a, {}
        if _words(a.text) < MIN_SENTENCE:
            skipped[("article", f"under {MIN_SENTENCE} words")] += 1
            continue
        for length in lengths:
            try:
                cuts[a.title][length] = cut(a.text, length, max_words)
            except Skip as why:
                skipped[(length, str(why))] += 1
    counts = Counter(WORD.findall(" ".join(a.text for a in by_title.values())))
    named = [a for a in by_title.values() if _name_like(a.title, counts)]
    names: dict[str, list[Article]] = defaultdict(list)
    stand_ins: dict[tuple, list[Article]] = defaultdict(list)
    for a in sorted(named, key=lambda a: (-len(a.title), a.title)):
        names[WORD.match(a.title).group()].append(a)
    kinds_of = {t: heads(a) for t, a in by_title.items()}
    for a in named:
        for key in [(a.topic,), *((a.topic, *k) for k in _similar(kinds_of[a.title]))]:
            stand_ins[key].append(a)
    partners: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for title, texts in cuts.items():
        for length, text in texts.items():
            if _whole(name(title)).search(text):
                topic = by_title[title].topic
                for key in [(topic, length), *((topic, length, *k) for k in _similar(kinds_of[title]))]:
                    partners[key].append((_words(text), title))
    return Corpus(by_title, cuts, kinds_of, {t: _mentions(a, names) for t, a in by_title.items()},
                  {k: tuple(v) for k, v in stand_ins.items()}, {k: tuple(sorted(v)) for k, v in partners.items()},
                  skipped, max_words)
