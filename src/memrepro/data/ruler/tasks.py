"""RULER's task table (the official configurations of both variants) and the text helpers every
family uses."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
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


NOISE_NAMES = {"memagent": "repeat", "upstream": "noise"}


CONTEXT_SLOT = "\x00CONTEXT\x00"  # stands in for the context while a template is split


_ABBREVIATIONS = ("Mr.", "Mrs.", "Ms.", "Dr.", "St.", "Jr.", "Sr.", "vs.", "etc.", "e.g.", "i.e.")


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


class Tokenizer(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


def check_task(task: str, variant: str) -> None:
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
    check_task(task, variant)
    config = {"task": task, **TASKS[task]}
    family = FAMILIES[config["family"]]
    config["tokens_to_generate"] = family["tokens_to_generate"]
    config["template"] = family["template"][variant]
    config["answer_prefix"] = family["answer_prefix"][variant]
    if config.get("type_haystack") == "noise":
        config["type_haystack"] = NOISE_NAMES[variant]
    return config


def tokens_to_generate(task: str) -> int:
    """The generation budget RULER reserves for the task (same in both variants)."""
    check_task(task, "upstream")
    return FAMILIES[TASKS[task]["family"]]["tokens_to_generate"]


def corpus_of(task: str) -> str | None:
    """Which external corpus the task reads: "essay", "squad", "hotpotqa" or None."""
    check_task(task, "upstream")
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


def singular_template(template: str) -> str:
    """RULER's rewrite when exactly one value is asked for (plain replacements, in this order)."""
    for old, new in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
        template = template.replace(old, new)
    return template


@dataclass
class Sample:
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


def render_template(
    template: str, prefix: str, variant: str, context: str, answers: list[str], **fields: Any
) -> Sample:
    """Fill a template and its answer prefix; the upstream template is split around its context
    slot, the memagent one has none (and its prefix stays out of the prompt)."""
    if variant == "memagent":
        filled = prefix.format(**fields)
        return Sample(template.format(**fields), context, "", filled, answers, False)
    before, after = template.format(context=CONTEXT_SLOT, **fields).split(CONTEXT_SLOT)
    return Sample(before, context, after, prefix.format(**fields), answers)


def numbered_words(words: Sequence[str]) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))
