"""RULER's 13 synthetic tasks, built as MemAgent's fork built them or as RULER HEAD builds them.

Reference: benchmarks.md §1.1-1.10 and memagent_official.md §1.5. Two variants:

- ``memagent`` (the paper's numbers, MemAgent's `taskutils/memory_data/synthetic`): the noise
  haystack is called ``repeat``; sizes come from a *linear* search (grow by `incremental` units
  until over budget, step back once); the essay haystack is capped at the corpus length; `input`
  is the instruction/question only (templates have no context slot) and the prompt omits the
  answer prefix, which the row still carries as the fork fills it (NIAH's singular rewrite
  leaves it alone: "... number for {key} mentioned in the provided text are"; VT keeps 2024
  RULER's "assgined"); the QA template is "Answer the question based on the given documents.
  {query}". 128 samples are built as 8 chunks of 16, chunk i seeded 42+i (QA chunks take the
  next questions, the fork's `--pre_samples`).
- ``upstream`` (RULER HEAD): the noise haystack is called ``noise``; sizes come from a *binary*
  search; the essay haystack repeats cyclically when too short; the prompt is RULER's template
  with the context inside and the answer prefix kept in the row. One seed for all samples.

Rows follow the shared eval-set contract: {index, task, length, input, context, answers,
answer_prefix, num_tokens}. `input` never holds the context. Word keys are RULER's: index i of
the sorted set of "adjective-noun" strings (`_PairWords`, 6,171,620 for wonderwords 3.0.1), so a
draw picks the key the scripts pick for the same random index. Upstream rows add `context_at`, the
offset in `input` where RULER's template puts the context, so RULER's exact prompt is
``input[:context_at] + context + input[context_at:] + answer_prefix`` (`ruler_prompt`).
`num_tokens` is what the variant's length check counts, without the generation budget: memagent
``tokens(input + context)`` (the fork's per-sample check), upstream ``tokens(ruler_prompt(row))``.
Every sample passes the variant's check: tokens + tokens_to_generate <= length (memagent FWE, like
the fork: tokens(context) <= length).

Deviations from the official scripts, all deliberate:

- Sentences are split with a regex (`split_sentences`), not NLTK punkt (which needs a download),
  so essay needles can land at slightly different sentence boundaries.
- One `random.Random` per chunk drives every draw (the scripts mix `random` and `np.random`), and
  the size search uses its own probe generator seeded like chunk 0, once per build (the scripts
  search in every chunk, consuming the sample generator). Samples are therefore statistically,
  not byte-for-byte, the official ones (which also depend on NLTK and the Qwen tokenizer).
- The search is evaluated with few token counts: it extrapolates from measured counts and
  brackets the answer on the variant's grid (multiples of `incremental` for the fork's linear
  search, every integer for HEAD's binary search). For a count that grows with the size it
  returns what the official scan returns, without tokenising O(length) prompts O(length) times.
- Where the scripts would hang (a sample over budget at the smallest size) or crash, we raise a
  ValueError; MemAgent's QA samples are checked like RULER's (the fork commented the check out),
  so every row fits; the `index` field counts 0..n-1 across chunks (the fork restarts it per
  chunk, which would break resuming by index).
"""

from __future__ import annotations

import bisect
import math
import operator
import random
import re
import string
import uuid
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Protocol

RULER_TASKS: tuple[str, ...] = (
    "niah_single_1",
    "niah_single_2",
    "niah_single_3",
    "niah_multikey_1",
    "niah_multikey_2",
    "niah_multikey_3",
    "niah_multivalue",
    "niah_multiquery",
    "vt",
    "cwe",
    "fwe",
    "qa_1",
    "qa_2",
)
VARIANTS: tuple[str, ...] = ("memagent", "upstream")
MEMAGENT_CHUNKS = 8  # ruler_data_prepare.sh --chunk_amount 8; chunk i is seeded seed + i

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
DOCUMENT = "Document {i}:\n{document}"
DEPTHS = tuple(round(100 * i / 39) for i in range(40))  # np.linspace(0, 100, 40), rounded
ICL_VALUE = "12345"  # HEAD's variable-tracking example chain value, re-randomised per sample

# scripts/synthetic.yaml: the task configs ("noise" is HEAD's name; the fork calls it "repeat").
TASKS: dict[str, dict[str, Any]] = {
    **{
        name: {
            "family": "niah",
            "type_haystack": haystack,
            "type_needle_k": key,
            "type_needle_v": value,
            "num_needle_k": k,
            "num_needle_v": v,
            "num_needle_q": q,
        }
        for name, haystack, key, value, k, v, q in (
            ("niah_single_1", "noise", "words", "numbers", 1, 1, 1),
            ("niah_single_2", "essay", "words", "numbers", 1, 1, 1),
            ("niah_single_3", "essay", "words", "uuids", 1, 1, 1),
            ("niah_multikey_1", "essay", "words", "numbers", 4, 1, 1),
            ("niah_multikey_2", "needle", "words", "numbers", 1, 1, 1),
            ("niah_multikey_3", "needle", "uuids", "uuids", 1, 1, 1),
            ("niah_multivalue", "essay", "words", "numbers", 1, 4, 1),
            ("niah_multiquery", "essay", "words", "numbers", 1, 1, 4),
        )
    },
    "vt": {"family": "variable_tracking", "type_haystack": "noise", "num_chains": 1, "num_hops": 4},
    "cwe": {"family": "common_words_extraction", "freq_cw": 30, "freq_ucw": 3, "num_cw": 10},
    "fwe": {"family": "freq_words_extraction", "alpha": 2.0, "coded_wordlen": 6},
    "qa_1": {"family": "qa", "dataset": "squad"},
    "qa_2": {"family": "qa", "dataset": "hotpotqa"},
}

# scripts/data/synthetic/constants.py (upstream) and MemAgent's synthetic/constants.py (memagent):
# per family, the task template and the answer prefix of each variant. The fork's rows carry the
# answer prefix filled like RULER's (NIAH: type_needle_v and query; VT: num_v and query; the rest
# verbatim), but its prompt never ends with it (ruler_data_prepare.py:141).
FAMILIES: dict[str, dict[str, Any]] = {
    "niah": {
        "tokens_to_generate": 128,
        "template": {
            "upstream": "Some special magic {type_needle_v} are hidden within the following text. "
            "Make sure to memorize it. I will quiz you about the {type_needle_v} afterwards.\n"
            "{context}\nWhat are all the special magic {type_needle_v} for {query} mentioned in "
            "the provided text?",
            "memagent": "Some special magic {type_needle_v} are hidden within the following text. "
            "Make sure to memorize it. What are all the special magic {type_needle_v} for {query} "
            "mentioned in the provided text?",
        },
        "answer_prefix": {
            variant: " The special magic {type_needle_v} for {query} mentioned in the provided "
            "text are"
            for variant in VARIANTS
        },
    },
    "variable_tracking": {
        "tokens_to_generate": 30,
        "template": {
            "upstream": "Memorize and track the chain(s) of variable assignment hidden in the "
            "following text.\n\n{context}\nQuestion: Find all variables that are assigned the "
            "value {query} in the text above.",
            "memagent": "Memorize and track the chain(s) of variable assignment hidden in the "
            "following text. Question: Find all variables that are assigned the value {query} in "
            "the text above.",
        },
        "answer_prefix": {  # the fork keeps 2024 RULER's "assgined" (HEAD fixed it in 4a216f4)
            "upstream": " Answer: According to the chain(s) of variable assignment in the text "
            "above, {num_v} variables are assigned the value {query}, they are: ",
            "memagent": " Answer: According to the chain(s) of variable assignment in the text "
            "above, {num_v} variables are assgined the value {query}, they are: ",
        },
    },
    "common_words_extraction": {
        "tokens_to_generate": 120,
        "template": {
            "upstream": "Below is a numbered list of words. In these words, some appear more often "
            "than others. Memorize the ones that appear most often.\n{context}\nQuestion: What "
            "are the 10 most common words in the above list?",
            "memagent": "Below is a numbered list of words. In these words, some appear more often "
            "than others. Memorize the ones that appear most often. Question: What are the 10 "
            "most common words in the above list?",
        },
        "answer_prefix": {
            variant: " Answer: The top 10 words that appear most often in the list are:"
            for variant in VARIANTS
        },
    },
    "freq_words_extraction": {
        "tokens_to_generate": 50,
        "template": {
            "upstream": "Read the following coded text and track the frequency of each coded "
            "word. Find the three most frequently appeared coded words. {context}\nQuestion: Do "
            "not provide any explanation. Please ignore the dots '....'. What are the three most "
            "frequently appeared words in the above coded text?",
            "memagent": "Read the following coded text and track the frequency of each coded "
            "word. Find the three most frequently appeared coded words. Question: Do not provide "
            "any explanation. Please ignore the dots '....'. What are the three most frequently "
            "appeared words in the above coded text?",
        },
        "answer_prefix": {
            variant: " Answer: According to the coded text above, the three most frequently "
            "appeared words are:"
            for variant in VARIANTS
        },
    },
    "qa": {
        "tokens_to_generate": 32,
        "template": {
            "upstream": "Answer the question based on the given documents. Only give me the answer "
            "and do not output any other words.\n\nThe following are given documents.\n\n"
            "{context}\n\nAnswer the question based on the given documents. Only give me the "
            "answer and do not output any other words.\n\nQuestion: {query}",
            "memagent": "Answer the question based on the given documents. {query}",
        },
        "answer_prefix": {variant: " Answer:" for variant in VARIANTS},
    },
}

ESSAY_TASKS = tuple(t for t, c in TASKS.items() if c.get("type_haystack") == "essay")
_NOISE_NAMES = {"memagent": "repeat", "upstream": "noise"}
_CONTEXT_SLOT = "\x00CONTEXT\x00"  # stands in for the context while a template is split
_ABBREVIATIONS = ("Mr.", "Mrs.", "Ms.", "Dr.", "St.", "Jr.", "Sr.", "vs.", "etc.", "e.g.", "i.e.")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


class Tokenizer(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


# --- the task table ------------------------------------------------------------------------------


def _check(task: str, variant: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown RULER task {task!r}; known: {', '.join(RULER_TASKS)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown RULER variant {variant!r}; known: {', '.join(VARIANTS)}")


def task_config(task: str, variant: str) -> dict[str, Any]:
    """The merged config of one task in one variant (synthetic.yaml entry + constants.py).

    The noise haystack carries the variant's own name. `answer_prefix` is the variant's
    unfilled prefix: MemAgent's fork records it in every row but formats the prompt without it
    (the model never sees it), and its VT prefix keeps the misspelling "assgined".
    """
    _check(task, variant)
    config = {"task": task, **TASKS[task]}
    family = FAMILIES[config["family"]]
    config["tokens_to_generate"] = family["tokens_to_generate"]
    config["template"] = family["template"][variant]
    config["answer_prefix"] = family["answer_prefix"][variant]
    if config.get("type_haystack") == "noise":
        config["type_haystack"] = _NOISE_NAMES[variant]
    return config


def tokens_to_generate(task: str) -> int:
    """The generation budget RULER reserves for the task (same in both variants)."""
    _check(task, "upstream")
    return FAMILIES[TASKS[task]["family"]]["tokens_to_generate"]


def corpus_of(task: str) -> str | None:
    """Which external corpus the task reads: "essay", "squad", "hotpotqa" or None."""
    _check(task, "upstream")
    config = TASKS[task]
    if config["family"] == "qa":
        return config["dataset"]
    return "essay" if config.get("type_haystack") == "essay" else None


def ruler_prompt(row: dict[str, Any]) -> str:
    """RULER's whole prompt of an upstream row (context inside the template, answer prefix last)."""
    if "context_at" not in row:
        raise ValueError(f"row {row.get('index')}: no 'context_at' (not an upstream RULER row)")
    at = row["context_at"]
    return row["input"][:at] + row["context"] + row["input"][at:] + row["answer_prefix"]


# --- text helpers --------------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """Regex sentence splitter standing in for NLTK's `sent_tokenize` (punkt needs a download).

    A sentence ends at . ! or ? (plus closing quotes/brackets) followed by whitespace and an
    upper-case letter, digit, or opening quote/bracket; a few common abbreviations do not end
    one. Whitespace between sentences is dropped, as punkt does.
    """
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        head = text[start : match.start()]
        if head.endswith(_ABBREVIATIONS):
            continue
        sentences.append(text[start : match.end()].rstrip())
        start = match.end()
    if text[start:].strip():
        sentences.append(text[start:].strip())
    return sentences


def essay_words(essay_text: str) -> list[str]:
    """RULER's essay haystack units: whitespace runs collapsed to one space, split on spaces."""
    if not essay_text.strip():
        raise ValueError("the essay text is empty")
    return re.sub(r"\s+", " ", essay_text).split(" ")


def _singular(template: str) -> str:
    """RULER's rewrite when exactly one value is asked for (plain replacements, in this order)."""
    for old, new in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
        template = template.replace(old, new)
    return template


@dataclass
class _Sample:
    before: str  # instruction text before the context slot (all of it in the memagent variant)
    context: str
    after: str  # instruction text after the context slot
    prefix: str  # the row's answer prefix (filled)
    answers: list[str]
    prefix_in_prompt: bool = True  # memagent: False (the fork's prompt never ends with it)

    @property
    def input(self) -> str:
        return self.before + self.after

    def prompt(self) -> str:
        """RULER's whole prompt (the memagent variant's never ends with the answer prefix)."""
        prefix = self.prefix if self.prefix_in_prompt else ""
        return self.before + self.context + self.after + prefix


def _render(
    template: str, prefix: str, variant: str, context: str, answers: list[str], **fields: Any
) -> _Sample:
    """Fill a template and its answer prefix; the upstream template is split around its context
    slot, the memagent one has none (and its prefix stays out of the prompt)."""
    if variant == "memagent":
        filled = prefix.format(**fields)
        return _Sample(template.format(**fields), context, "", filled, answers, False)
    before, after = template.format(context=_CONTEXT_SLOT, **fields).split(_CONTEXT_SLOT)
    return _Sample(before, context, after, prefix.format(**fields), answers)


# --- word lists ----------------------------------------------------------------------------------


@cache
def _wonderwords(name: str) -> tuple[str, ...]:
    """A word list shipped with the `wonderwords` package (pin 3.0.1 for RULER's exact lists)."""
    try:
        root = resources.files("wonderwords.assets")
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError("RULER's word lists need the `wonderwords` package") from e
    text = (root / f"{name}list.txt").read_text(encoding="utf-8")
    return tuple(line.rstrip() for line in text.splitlines(keepends=True))


class _PairWords(Sequence[str]):
    """RULER's word keys by index: ``sorted(set(f"{adj}-{noun}" for adj in adjs for noun in
    nouns))`` (niah.py:90-94 in the fork, niah.py:96-128 at HEAD), without its 6.2M strings.

    Every key starts with its adjective + "-". Group each adjective under its *root*, the
    shortest adjective r with ``adj.startswith(r + "-")`` (itself if none; "old-fashioned" goes
    under "old"). Two roots' ``root + "-"`` are not prefixes of one another, so they differ
    before either ends and all keys of one group sort on the same side of all keys of another:
    the sorted set is the groups one after the other in ``root + "-"`` order. A group of one
    adjective is that adjective before each noun, nouns in sorted order. Keys of a larger group
    interleave (every "old-fashioned-X" sorts among the "old-Y"), and two pairs may join to the
    same string, so such a group is joined, de-duplicated and sorted once and kept as an array
    of (adjective, noun) codes. For wonderwords 3.0.1: 6,171,620 keys (no two pairs alike), 5
    groups of two adjectives, 67,820 codes (0.5 MB), built in about 20 ms; sorting the 6.2M
    strings as RULER does takes about 6 s and 750 MB.
    """

    def __init__(self, adjectives: Sequence[str], nouns: Sequence[str]) -> None:
        self._adjs = sorted(set(adjectives))
        self._nouns = sorted(set(nouns))
        known = set(self._adjs)
        groups: dict[str, list[int]] = {}
        for i, adj in enumerate(self._adjs):
            cuts = (j for j, ch in enumerate(adj) if ch == "-" and adj[:j] in known)
            groups.setdefault(adj[: next(cuts, len(adj))], []).append(i)
        self._starts: list[int] = []  # the first index of each group
        self._groups: list[int | array] = []  # its one adjective, or its sorted pair codes
        total = 0
        for root in sorted(groups, key=lambda r: r + "-"):
            members = groups[root]
            self._starts.append(total)
            if len(members) == 1:
                self._groups.append(members[0])
                total += len(self._nouns)
                continue
            codes = {
                f"{self._adjs[a]}-{noun}": a * len(self._nouns) + n
                for a in members  # pairs that join to the same key keep one code (same string)
                for n, noun in enumerate(self._nouns)
            }
            self._groups.append(array("q", (codes[key] for key in sorted(codes))))
            total += len(codes)
        self._len = total

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        i = operator.index(i)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(i)
        g = bisect.bisect_right(self._starts, i) - 1
        group, offset = self._groups[g], i - self._starts[g]
        if isinstance(group, int):
            return f"{self._adjs[group]}-{self._nouns[offset]}"
        adj, noun = divmod(group[offset], len(self._nouns))
        return f"{self._adjs[adj]}-{self._nouns[noun]}"


@lru_cache(maxsize=1)
def _pair_words() -> _PairWords:
    return _PairWords(_wonderwords("adjective"), _wonderwords("noun"))


def _random_value(kind: str, rng: random.Random) -> str:
    if kind == "numbers":
        return str(rng.randint(10**6, 10**7 - 1))
    if kind == "words":
        return rng.choice(_pair_words())
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    raise ValueError(f"unknown needle type {kind!r} (numbers, words, uuids)")


def _random_letters(rng: random.Random, k: int, alphabet: str) -> str:
    return "".join(rng.choices(alphabet, k=k))


# --- searching the haystack size -----------------------------------------------------------------


def _count(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


_MAX_PROBES = 100


def _search_size(
    measure: Callable[[int], int], budget: int, lo: int, step: int, hi: int, strict: bool = False
) -> int | None:
    """The largest size on the grid lo, lo+step, ... <= hi whose measure fits the budget.

    Fits means measure <= budget (< when `strict`). None when `lo` already does not fit. The
    measure is assumed to grow with the size (a token count of a haystack of that size): the
    linear scan of MemAgent's fork and the binary search of RULER HEAD then both return this
    size. Each step extrapolates the crossing from the measured counts and also measures the next
    grid point, so a near-linear measure settles in a few counts; bisection every other step
    bounds the worst case.
    """

    def fits(m: int) -> bool:
        return m < budget if strict else m <= budget

    top = lo + max(0, hi - lo) // step * step
    seen: dict[int, int] = {}

    def probe(n: int) -> int:
        if n not in seen:
            seen[n] = measure(n)
        return seen[n]

    def snap(x: float) -> int:
        return min(top, max(lo, lo + math.floor((x - lo) / step) * step))

    if not fits(probe(lo)):
        return None
    good, bad = lo, None
    for attempt in range(_MAX_PROBES):
        if good >= top or (bad is not None and bad - good <= step):
            return good
        if bad is None:
            below = [n for n in seen if n < good and fits(seen[n])]
            base = max(below) if below else 0
            slope = (seen[good] - (seen[base] if below else 0)) / (good - base)
            cand = snap(good + (budget - seen[good]) / max(slope, 1e-9))
            cand = max(cand, good + step)
        elif attempt % 2:
            cand = snap((good + bad) / 2)
        else:
            slope = (seen[bad] - seen[good]) / (bad - good)
            cand = snap(good + (budget - seen[good]) / max(slope, 1e-9))
        cand = max(good + step, cand if bad is None else min(cand, bad - step))
        if fits(probe(cand)):
            good = cand
            nxt = cand + step
            if nxt <= top and (bad is None or nxt < bad):
                good, bad = (nxt, bad) if fits(probe(nxt)) else (good, nxt)
        else:
            bad = cand
            prev = cand - step
            if prev > good:
                good, bad = (prev, bad) if fits(probe(prev)) else (good, prev)
    raise RuntimeError(f"size search did not converge after {_MAX_PROBES} counts")


def _too_small(task: str, length: int, detail: str) -> ValueError:
    return ValueError(f"RULER {task} @ {length}: length too small for the task ({detail})")


# --- sample draws --------------------------------------------------------------------------------


@dataclass
class _Build:
    """Everything one (task, length, variant) build shares."""

    task: str
    variant: str
    length: int
    config: dict[str, Any]
    tokenizer: Tokenizer
    seed: int

    @property
    def ttg(self) -> int:
        return self.config["tokens_to_generate"]

    def count(self, text: str) -> int:
        return _count(self.tokenizer, text)

    def incremental(self, essay: bool) -> int:
        """Units added per step of the fork's scan / removed per over-budget retry (NIAH)."""
        if essay:
            return 500
        return 5 if self.length < 4096 else 25


def _chunks(n_samples: int, seed: int, variant: str) -> Iterator[tuple[int, range]]:
    """(seed, global sample indices) per chunk: MemAgent's 8 chunks seeded seed+i, or one."""
    if variant == "upstream":
        yield seed, range(n_samples)
        return
    start = 0
    for i in range(MEMAGENT_CHUNKS):
        size = n_samples // MEMAGENT_CHUNKS + (1 if i < n_samples % MEMAGENT_CHUNKS else 0)
        yield seed + i, range(start, start + size)
        start += size


# A generator: (size, rng, shuffle_seed, sample index) -> _Sample. The shuffle seed is the chunk
# seed: the scripts shuffle needles, word lists and documents with a fresh Random(random_seed).
Generate = Callable[[int, random.Random, int, int], _Sample]


def _draw(
    build: _Build,
    generate: Generate,
    size: int,
    rng: random.Random,
    shuffle_seed: int,
    index: int,
    shrink: int,
    floor: int,
) -> tuple[_Sample, int]:
    """One sample at `size`, regenerated `shrink` units smaller while it is over budget.

    Returns the sample and its token count (memagent: input + context; upstream: the prompt).
    """
    while True:
        sample = generate(size, rng, shuffle_seed, index)
        if build.variant == "memagent":
            tokens = build.count(sample.input + sample.context)
        else:
            tokens = build.count(sample.prompt())
        if tokens + build.ttg <= build.length:
            return sample, tokens
        if size <= floor:
            raise _too_small(
                build.task, build.length, f"sample {index} has {tokens} tokens at size {size}"
            )
        size = max(floor, size - shrink)


def _search_text(build: _Build, sample: _Sample) -> str:
    """What the size search counts: the fork appends the answers (its quirk, kept)."""
    if build.variant == "upstream":
        return sample.prompt()
    family = build.config["family"]
    if family == "niah":
        return sample.input + " ".join(sample.answers) + " " + sample.context
    if family == "common_words_extraction":
        return sample.input + sample.context + " " + _numbered(sample.answers)
    return sample.input + f" {sample.answers}" + sample.context  # vt, qa: the list's repr


def _probe(build: _Build, generate: Generate, extra: int = 0) -> Callable[[int], int]:
    """The search's measure: tokens of a probe sample (fresh probe generator) + the budget."""

    def measure(size: int) -> int:
        sample = generate(size, random.Random(build.seed), build.seed, 0)
        return build.count(_search_text(build, sample)) + build.ttg + extra

    return measure


def _rows(build: _Build, n_samples: int, draw: Callable[..., tuple[_Sample, int]]) -> list[dict]:
    rows = []
    for chunk_seed, indices in _chunks(n_samples, build.seed, build.variant):
        rng = random.Random(chunk_seed)
        for index in indices:
            sample, tokens = draw(rng, chunk_seed, index)
            row = {
                "index": index,
                "task": build.task,
                "length": build.length,
                "input": sample.input,
                "context": sample.context,
                "answers": sample.answers,
                "answer_prefix": sample.prefix,
                "num_tokens": tokens,
            }
            if build.variant == "upstream":
                row["context_at"] = len(sample.before)
            rows.append(row)
    return rows


def _grid_search(
    build: _Build, generate: Generate, lo: int, step: int, hi: int, extra: int = 0
) -> int:
    """Size by the variant's search; a ValueError when even the smallest size is over budget."""
    measure = _probe(build, generate, extra)
    size = _search_size(measure, build.length, lo, step, hi)
    if size is None:
        raise _too_small(build.task, build.length, f"{measure(lo)} tokens at the smallest size")
    return size


def _upstream_hi(
    build: _Build, generate: Generate, lo: int, extra: int = 0, factor: int = 3
) -> int:
    """HEAD's upper bound: `factor` x the size the tokens-per-unit estimate at `lo` allows."""
    per_unit = max(_probe(build, generate, extra)(lo) - build.ttg - extra, 1) / lo
    return max(int(build.length / per_unit * factor), 2 * lo)


# --- NIAH ----------------------------------------------------------------------------------------


def _haystack_text(words: Sequence[str], size: int, variant: str) -> str:
    """The first `size` essay words; memagent stops at the essay's end, upstream cycles."""
    if variant == "memagent" or size <= len(words):
        return " ".join(words[:size])
    repeats, rest = divmod(size, len(words))
    return " ".join([*words] * repeats + [*words[:rest]])


def _insert_at_depths(text: str, needles: Sequence[str], rng: random.Random) -> str:
    """Needles between sentences at sorted depths drawn from DEPTHS, joined with spaces."""
    sentences = split_sentences(text.strip())
    cuts = sorted(int(len(sentences) * d / 100) for d in rng.sample(DEPTHS, len(needles)))
    bounds = [0, *cuts, len(sentences)]
    parts = []
    for i in range(1, len(bounds)):
        parts.append(" ".join(sentences[bounds[i - 1] : bounds[i]]))
        if i - 1 < len(needles):
            parts.append(needles[i - 1])
    return " ".join(parts)


def _niah_generator(build: _Build, words: Sequence[str] | None) -> Generate:
    c, variant = build.config, build.variant
    k = max(c["num_needle_k"], c["num_needle_q"])  # niah.py raises k to at least q
    v, q = c["num_needle_v"], c["num_needle_q"]
    kind_k, kind_v = c["type_needle_k"], c["type_needle_v"]
    haystack = c["type_haystack"]
    template, prefix, type_v = c["template"], c["answer_prefix"], kind_v
    if q * v == 1:
        if variant == "upstream":  # RULER rewrites template + answer prefix as one string
            template, prefix = _singular(template + _CONTEXT_SLOT + prefix).split(_CONTEXT_SLOT)
        else:  # the fork rewrites the template only: its prefix keeps "are"
            template = _singular(template)
        type_v = kind_v[:-1]

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> _Sample:
        keys, values, needles = [], [], []
        for _ in range(k):
            keys.append(_random_value(kind_k, rng))
            values.append([])
            for _ in range(v):
                values[-1].append(_random_value(kind_v, rng))
                needles.append(
                    NEEDLE.format(type_needle_v=kind_v, key=keys[-1], value=values[-1][-1])
                )
        random.Random(shuffle_seed).shuffle(needles)
        if haystack == "essay":
            context = _insert_at_depths(_haystack_text(words, size, variant), needles, rng)
        else:
            if haystack == "needle":
                lines = [
                    NEEDLE.format(
                        type_needle_v=kind_v,
                        key=_random_value(kind_k, rng),
                        value=_random_value(kind_v, rng),
                    )
                    for _ in range(size)
                ]
            else:
                lines = [NOISE] * size
            for at, needle in zip(
                sorted(rng.sample(range(size), len(needles)), reverse=True), needles, strict=True
            ):
                lines.insert(at, needle)
            context = "\n".join(lines)
        chosen = rng.sample(range(k), q)
        queries = [keys[i] for i in chosen]
        answers = [a for i in chosen for a in values[i]]
        query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
        return _render(
            template, prefix, variant, context, answers, type_needle_v=type_v, query=query
        )

    return generate


def _build_niah(build: _Build, n_samples: int, essay_text: str | None) -> list[dict]:
    haystack = build.config["type_haystack"]
    allowed = ("essay", "needle", _NOISE_NAMES[build.variant])
    if haystack not in allowed:
        raise ValueError(
            f"RULER {build.task}: haystack {haystack!r} is not one of {allowed} ({build.variant})"
        )
    words = None
    if haystack == "essay":
        if essay_text is None:
            raise ValueError(f"RULER {build.task}: needs essay_text (the essay haystack)")
        words = essay_words(essay_text)
    generate = _niah_generator(build, words)
    inc = build.incremental(haystack == "essay")
    needles = max(build.config["num_needle_k"], build.config["num_needle_q"])
    needles *= build.config["num_needle_v"]
    floor = max(inc, needles)
    if build.variant == "memagent":
        # the fork scans multiples of inc; an essay stops growing at its end (then its length)
        hi = -(-len(words) // inc) * inc if words is not None else floor + build.length * inc
        size = _grid_search(build, generate, floor, inc, hi)
        if words is not None:
            size = min(size, len(words))
    else:
        size = _grid_search(build, generate, floor, 1, _upstream_hi(build, generate, floor))

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[_Sample, int]:
        return _draw(build, generate, size, rng, shuffle_seed, index, inc, floor)

    return _rows(build, n_samples, draw)


# --- variable tracking ---------------------------------------------------------------------------


def _chains(
    rng: random.Random, num_chains: int, num_hops: int, icl: bool
) -> tuple[list[list[str]], list[list[str]]]:
    """Variable names and assignment statements ("VAR X = 12345", "VAR Y = VAR X ") per chain."""
    k = 3 if icl else 5
    hops = min(10, num_hops) if icl else num_hops
    names = [
        _random_letters(rng, k, string.ascii_uppercase) for _ in range((hops + 1) * num_chains)
    ]
    while len(set(names)) < num_chains * (hops + 1):
        names.append(_random_letters(rng, k, string.ascii_uppercase))
    names = list(dict.fromkeys(names))  # the scripts keep a repeat and then index past a chain
    names_out, chains = [], []
    for i in range(0, len(names), hops + 1):
        chain_names = names[i : i + hops + 1]
        value = ICL_VALUE if icl else str(rng.randint(10000, 99998))
        statements = [f"VAR {chain_names[0]} = {value}"]
        statements += [f"VAR {chain_names[j + 1]} = VAR {chain_names[j]} " for j in range(hops)]
        names_out.append(chain_names)
        chains.append(statements)
    return names_out, chains


def _vt_generator(build: _Build, icl: bool = False) -> Generate:
    c, variant = build.config, build.variant
    if c["type_haystack"] != _NOISE_NAMES[variant]:
        raise ValueError(
            f"RULER {build.task}: haystack {c['type_haystack']!r} is not supported for variable "
            f"tracking ({variant} uses {_NOISE_NAMES[variant]!r})"
        )
    num_chains, num_hops = c["num_chains"], c["num_hops"]

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> _Sample:
        names, chains = _chains(rng, num_chains, num_hops, icl)
        # the fork joins "\n"-terminated noise lines with spaces; HEAD joins plain lines with "\n"
        lines = [NOISE + "\n"] * size if variant == "memagent" else [NOISE] * size
        for chain in chains:
            positions = sorted(rng.sample(range(len(lines)), len(chain)))
            for j, at in enumerate(positions):
                lines.insert(at + j, chain[j])
        joiner = " " if variant == "memagent" else "\n"
        context = joiner.join(lines).replace(". \n", ".\n")
        value = chains[0][0].split("=")[-1].strip()
        hops = min(10, num_hops) if icl else num_hops
        return _render(
            c["template"],
            c["answer_prefix"],
            variant,
            context,
            names[0],
            query=value,
            num_v=hops + 1,
        )

    return generate


def _vt_icl_example(build: _Build, rng: random.Random) -> str:
    """HEAD's one-shot example: a chain with 3-letter names and value 12345, built at 500 tokens
    with no generation budget, written as prompt + " " + answer + "\\n"."""
    config = {**build.config, "tokens_to_generate": 0}
    icl = _Build(build.task, build.variant, 500, config, build.tokenizer, build.seed)
    generate = _vt_generator(icl, icl=True)
    lo = 5
    size = _grid_search(icl, generate, lo, 1, _upstream_hi(icl, generate, lo))
    sample, _ = _draw(icl, generate, size, rng, build.seed, 0, lo, lo)
    return sample.prompt() + " " + " ".join(sample.answers) + "\n"


def _randomize_icl(example: str, num_hops: int, rng: random.Random) -> str:
    """Fresh names (every occurrence) and a fresh value for the example, per sample (HEAD)."""
    for name in example.split()[-(num_hops + 1) :]:
        example = example.replace(name, _random_letters(rng, len(name), string.ascii_uppercase))
    return example.replace(ICL_VALUE, str(rng.randint(10000, 99998)))


def _build_vt(build: _Build, n_samples: int) -> list[dict]:
    generate = _vt_generator(build)
    inc = 10 if build.variant == "memagent" or build.length >= 4096 else 5
    if build.variant == "memagent":  # no one-shot example (commented out in the fork)
        size = _grid_search(build, generate, inc, inc, inc + build.length * inc)

        def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[_Sample, int]:
            return _draw(build, generate, size, rng, shuffle_seed, index, inc, inc)

        return _rows(build, n_samples, draw)

    example = _vt_icl_example(build, random.Random(build.seed))
    extra = build.count(example)
    size = _grid_search(
        build, generate, inc, 1, _upstream_hi(build, generate, inc, extra), extra=extra
    )
    num_hops = build.config["num_hops"]

    def with_example(size: int, rng: random.Random, shuffle_seed: int, index: int) -> _Sample:
        sample = generate(size, rng, shuffle_seed, index)
        sample.before = _randomize_icl(example, num_hops, rng) + "\n" + sample.before
        return sample

    def draw_upstream(rng: random.Random, shuffle_seed: int, index: int) -> tuple[_Sample, int]:
        return _draw(build, with_example, size, rng, shuffle_seed, index, inc, inc)

    return _rows(build, n_samples, draw_upstream)


# --- common words extraction ---------------------------------------------------------------------


def _numbered(words: Sequence[str]) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))


@lru_cache(maxsize=1)
def _common_words() -> tuple[str, ...]:
    return tuple(
        sorted(set(_wonderwords("noun") + _wonderwords("adjective") + _wonderwords("verb")))
    )


def _word_list(
    size: int,
    repeats: tuple[int, int],
    num_cw: int,
    pool: Sequence[str],
    english: Sequence[str] | None,
    rng: random.Random,
    shuffle_seed: int,
) -> tuple[str, list[str]]:
    """RULER's numbered list: `num_cw` words x repeats[0], the others x repeats[1], shuffled."""
    if size <= len(pool):
        chosen = rng.sample(pool, size)
    elif english is not None and size <= len(english):
        chosen = rng.sample(english, size)
    else:
        have = len(english) if english is not None else 0
        raise ValueError(
            f"cwe needs {size} distinct words: wonderwords has {len(pool)}, english_words "
            f"{have} (pass RULER's json/english_words.json values as english_words)"
        )
    common, uncommon = chosen[:num_cw], chosen[num_cw:]
    listed = common * repeats[0] + uncommon * repeats[1]
    random.Random(shuffle_seed).shuffle(listed)
    return _numbered(listed), common


def _build_cwe(build: _Build, n_samples: int, english: Sequence[str] | None) -> list[dict]:
    c, variant = build.config, build.variant
    num_cw, short = c["num_cw"], build.length < 4096
    repeats = (6, 1) if short else (c["freq_cw"], c["freq_ucw"])
    inc = 10
    pools: dict[int, list[str]] = {}

    def pool(shuffle_seed: int) -> list[str]:  # the scripts shuffle the pool with Random(seed)
        if shuffle_seed not in pools:
            pools[shuffle_seed] = list(_common_words())
            random.Random(shuffle_seed).shuffle(pools[shuffle_seed])
        return pools[shuffle_seed]

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> _Sample:
        words = pool(shuffle_seed)
        shots = ""
        if variant == "upstream":  # HEAD's one example list, with its answer
            example = (20, (3, 1)) if short else (40, (10, 3))
            ctx, answer = _word_list(*example, num_cw, words, english, rng, shuffle_seed)
            shot = _render(c["template"], c["answer_prefix"], variant, ctx, answer)
            shots = shot.prompt() + " " + _numbered(answer) + "\n"
        else:
            size = min(size, len(words))  # the fork never lists more words than wonderwords has
        context, common = _word_list(size, repeats, num_cw, words, english, rng, shuffle_seed)
        sample = _render(c["template"], c["answer_prefix"], variant, context, common)
        sample.before = shots + sample.before
        return sample

    if variant == "memagent":
        top = len(_common_words())
        size = min(_grid_search(build, generate, inc, inc, -(-top // inc) * inc), top)
    else:
        # HEAD estimates tokens per word at 4096 words (fewer if the word lists are shorter)
        probe = min(4096, max(len(_common_words()), len(english or ())))
        per_word = (_probe(build, generate)(probe) - build.ttg) / probe
        hi = max(int(build.length // per_word) * 2, 2 * inc)
        size = _grid_search(build, generate, inc, 1, hi)

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[_Sample, int]:
        return _draw(build, generate, size, rng, shuffle_seed, index, inc, inc)

    return _rows(build, n_samples, draw)


# --- frequent words extraction -------------------------------------------------------------------


def zeta(s: float) -> float:
    """Riemann zeta for s > 1 (Euler-Maclaurin; stands in for scipy.special.zeta)."""
    if s <= 1:
        raise ValueError(f"zeta needs s > 1, got {s}")
    n = 20
    total = math.fsum(k**-s for k in range(1, n)) + n ** (1 - s) / (s - 1) + n**-s / 2
    bernoulli = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66)
    rising = s
    for j, b in enumerate(bernoulli, start=1):
        total += b / math.factorial(2 * j) * rising * n ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return total


def _coded_vocab(size: int, wordlen: int, rng: random.Random, shuffle_seed: int) -> list[str]:
    """`size` distinct random lower-case words, sorted, seed-shuffled, the first one "..."."""
    vocab = [_random_letters(rng, wordlen, string.ascii_lowercase) for _ in range(size)]
    while len(set(vocab)) < size:
        vocab.append(_random_letters(rng, wordlen, string.ascii_lowercase))
    vocab = sorted(set(vocab))
    random.Random(shuffle_seed).shuffle(vocab)
    vocab[0] = "..."  # the top-ranked "word" is noise
    return vocab


def _coded_text(vocab: Sequence[str], num_words: int, alpha: float, shuffle_seed: int) -> str:
    """Word of rank k repeated floor(num_words * k^-alpha / zeta(alpha)) times, shuffled."""
    z = zeta(alpha)
    words = [w for k, w in enumerate(vocab, start=1) for _ in range(int(num_words * k**-alpha / z))]
    random.Random(shuffle_seed).shuffle(words)
    return " ".join(words)


def _build_fwe(build: _Build, n_samples: int) -> list[dict]:
    """FWE keeps its vocabulary while shrinking a sample (one draw per sample, as the scripts).

    memagent: the coded text alone must stay under `length` (the fork counts neither template nor
    generation budget); upstream: the whole prompt under length - tokens_to_generate.
    """
    c, variant = build.config, build.variant
    max_len = build.length if variant == "memagent" else build.length - build.ttg
    vocab_size = max_len // 50
    inc, start = max_len // 32, max_len // c["coded_wordlen"]
    if vocab_size < 4 or inc < 1:
        raise _too_small(build.task, build.length, f"a vocabulary of {vocab_size} coded words")

    def sample_of(vocab: list[str], num_words: int, shuffle_seed: int) -> _Sample:
        context = _coded_text(vocab, num_words, c["alpha"], shuffle_seed)
        return _render(c["template"], c["answer_prefix"], variant, context, vocab[1:4])

    def measured(sample: _Sample) -> int:
        return build.count(sample.context if variant == "memagent" else sample.prompt())

    probe_vocab = _coded_vocab(
        vocab_size, c["coded_wordlen"], random.Random(build.seed), build.seed
    )

    def measure(num_words: int) -> int:
        return measured(sample_of(probe_vocab, num_words, build.seed))

    # grow from max_len // 6 by max_len // 32 while under max_len, then one step back
    found = _search_size(measure, max_len, start, inc, start + max_len * inc, strict=True)
    size = found if found is not None else start - inc

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[_Sample, int]:
        vocab = _coded_vocab(vocab_size, c["coded_wordlen"], rng, shuffle_seed)
        num_words = size
        while num_words > 0:
            sample = sample_of(vocab, num_words, shuffle_seed)
            tokens = measured(sample)
            if tokens <= max_len:
                if variant == "memagent":  # the row reports input + context, like the others
                    tokens = build.count(sample.input + sample.context)
                return sample, tokens
            num_words -= inc
        raise _too_small(build.task, build.length, f"sample {index} fits no coded words")

    return _rows(build, n_samples, draw)


# --- QA ------------------------------------------------------------------------------------------


def read_squad(squad: dict) -> tuple[list[dict], list[str]]:
    """RULER's `read_squad`: (answerable questions, sorted unique paragraphs).

    Each question: {query, outputs (every answer text, duplicates kept), context ([own paragraph
    id]), more_context (the article's other paragraph ids)}.
    """
    if not isinstance(squad, dict) or not isinstance(squad.get("data"), list):
        raise ValueError('squad: expected the SQuAD v2 JSON object {"version", "data": [...]}')
    for i, article in enumerate(squad["data"]):
        try:
            for paragraph in article["paragraphs"]:
                texts = [paragraph["context"]]
                for qa in paragraph["qas"]:
                    texts += [qa["question"], *(a["text"] for a in qa["answers"])]
                if not all(isinstance(t, str) for t in texts):
                    raise TypeError("a context, question or answer is not a string")
        except (KeyError, TypeError) as e:
            raise ValueError(f"squad: article {i}: not in the SQuAD v2 schema ({e!r})") from e
    docs = sorted({p["context"] for a in squad["data"] for p in a["paragraphs"]})
    ids = {doc: i for i, doc in enumerate(docs)}
    qas = []
    for article in squad["data"]:
        article_ids = [ids[p["context"]] for p in article["paragraphs"]]
        for paragraph in article["paragraphs"]:
            own = ids[paragraph["context"]]
            for qa in paragraph["qas"]:
                if qa.get("is_impossible", False):
                    continue
                qas.append(
                    {
                        "query": qa["question"],
                        "outputs": [a["text"] for a in qa["answers"]],
                        "context": [own],
                        "more_context": [d for d in article_ids if d != own],
                    }
                )
    return qas, docs


def read_hotpot(records: list) -> tuple[list[dict], list[str]]:
    """RULER's `read_hotpotqa`: every question with its 10 paragraphs as gold; no more_context.

    The pool is `memrl.data.hotpotqa.build_pool` (title + "\\n" + sentences, unique, sorted).
    """
    from memrl.data.hotpotqa import build_pool, question_records

    if not isinstance(records, list):
        raise ValueError(f"hotpot: expected the official JSON list, got {type(records).__name__}")
    for i, row in enumerate(records):
        if not isinstance(row, dict) or not {"question", "answer", "context"} <= row.keys():
            raise ValueError(f"hotpot: row {i}: expected an object with question/answer/context")
    pool = build_pool(records)
    qas = [
        {"query": q["question"], "outputs": q["answers"], "context": q["doc_ids"]}
        for q in question_records(records, pool)
    ]
    return qas, pool


def _qa_generator(build: _Build, qas: list[dict], docs: list[str]) -> Generate:
    c, variant = build.config, build.variant

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> _Sample:
        question = qas[index]
        gold, more = list(question["context"]), list(question.get("more_context", []))
        if size < len(docs):
            if size - len(gold) > len(more):
                taken = set(gold) | set(more)
                others = [i for i in range(len(docs)) if i not in taken]
                ids = gold + more + rng.sample(others, max(0, size - len(gold) - len(more)))
            else:
                ids = gold + rng.sample(more, size - len(gold))
        elif variant == "memagent":
            ids = list(range(len(docs)))
        else:  # HEAD repeats the whole pool as often as needed
            ids = [i % len(docs) for i in range(size)]
        random.Random(shuffle_seed).shuffle(ids)
        context = "\n\n".join(DOCUMENT.format(i=i + 1, document=docs[d]) for i, d in enumerate(ids))
        answers = list(question["outputs"])
        fields = {"query": question["query"]}
        return _render(c["template"], c["answer_prefix"], variant, context, answers, **fields)

    return generate


def _build_qa(build: _Build, n_samples: int, squad: dict | None, hotpot: list | None) -> list[dict]:
    dataset = build.config["dataset"]
    source = squad if dataset == "squad" else hotpot
    if source is None:
        raise ValueError(f"RULER {build.task}: needs the {dataset} data ({dataset}=...)")
    qas, docs = read_squad(source) if dataset == "squad" else read_hotpot(source)
    if n_samples > len(qas):
        raise ValueError(
            f"RULER {build.task}: {n_samples} samples asked, {dataset} has {len(qas)} questions"
        )
    # The number of documents is sized on question 0, as in both scripts: the largest count that
    # fits (the fork gets within 10 of it by extrapolating from 1000 documents, then steps of
    # 10; HEAD bisects). Each sample then drops 10 documents while over budget, never its own.
    generate = _qa_generator(build, qas, docs)
    inc = 10  # documents removed per over-budget retry
    lo = len(qas[0]["context"])  # question 0 sizes the haystack; its own docs are the floor
    if build.variant == "memagent":
        size = _grid_search(build, generate, lo, 1, len(docs))
    else:
        size = _grid_search(build, generate, lo, 1, _upstream_hi(build, generate, max(lo, inc)))

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[_Sample, int]:
        floor = len(qas[index]["context"])
        return _draw(build, generate, max(size, floor), rng, shuffle_seed, index, inc, floor)

    return _rows(build, n_samples, draw)


# --- the entry point -----------------------------------------------------------------------------


def build_task(
    task: str,
    length: int,
    n_samples: int,
    *,
    variant: str,
    tokenizer: Tokenizer,
    seed: int,
    essay_text: str | None = None,
    squad: dict | None = None,
    hotpot: list | None = None,
    english_words: Sequence[str] | None = None,
) -> list[dict]:
    """`n_samples` rows of one RULER task at `length` target tokens (see the module docstring).

    `essay_text` is the essay haystack (PaulGrahamEssays.json's text) for the essay NIAH tasks,
    `squad` the SQuAD v2 dev JSON (qa_1), `hotpot` the HotpotQA dev distractor JSON list (qa_2),
    `english_words` RULER's english_words.json values, which upstream CWE needs once a list has
    more words than wonderwords (about 8K).
    """
    _check(task, variant)
    if n_samples < 1:
        raise ValueError(f"RULER {task}: n_samples must be >= 1, got {n_samples}")
    config = task_config(task, variant)
    if length <= config["tokens_to_generate"]:
        raise _too_small(task, length, f"{config['tokens_to_generate']} tokens to generate")
    build = _Build(task, variant, length, config, tokenizer, seed)
    family = config["family"]
    if family == "niah":
        return _build_niah(build, n_samples, essay_text)
    if family == "variable_tracking":
        return _build_vt(build, n_samples)
    if family == "common_words_extraction":
        return _build_cwe(build, n_samples, english_words)
    if family == "freq_words_extraction":
        return _build_fwe(build, n_samples)
    return _build_qa(build, n_samples, squad, hotpot)
