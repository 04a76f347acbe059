import bisect
import math
import random
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from memrepro.data import ruler
from memrepro.data.essays import load_essay_text
from memrepro.data.io import read_json
from memrepro.data.ruler import (
    NOISE,
    RULER_TASKS,
    VARIANTS,
    build_task,
    corpus_of,
    families,
    read_hotpot,
    read_squad,
    ruler_prompt,
    split_sentences,
    task_config,
    tokens_to_generate,
    zeta,
)
from memrepro.data.ruler.search import _chunks, search_size
from memrepro.data.ruler.words import _pair_words, _PairWords
from memrepro.data.sources import fixture_path
from memrepro.scoring.ruler import (
    postprocess_pred,
    score_ruler,
    string_match_all,
    string_match_part,
)

N = 9  # MemAgent chunks of 2, 1, 1, 1, 1, 1, 1, 1; SQuAD's fixture has 9 answerable questions
NIAH = [t for t in RULER_TASKS if t.startswith("niah")]
NEEDLE_COUNT = {  # needles hidden per sample: keys x values
    "niah_single_1": 1,
    "niah_single_2": 1,
    "niah_single_3": 1,
    "niah_multikey_1": 4,
    "niah_multivalue": 4,
    "niah_multiquery": 4,
}


class WhitespaceTokenizer:
    """One token per whitespace-separated word."""

    def encode(self, text, add_special_tokens=True):
        assert add_special_tokens is False
        return text.split()


TOK = WhitespaceTokenizer()


def count(text):
    return len(TOK.encode(text, add_special_tokens=False))


@cache
def corpora():
    return {
        "essay_text": load_essay_text(fixture_path("essay_fixture.json")),
        "squad": read_json(fixture_path("squad_dev_fixture.json")),
        "hotpot": read_json(fixture_path("hotpot_dev_fixture.json")),
    }


@cache
def build(task, variant, length=2048, n=N, seed=42):
    return build_task(task, length, n, variant=variant, tokenizer=TOK, seed=seed, **corpora())


ALL = [(task, variant) for task in RULER_TASKS for variant in VARIANTS]


# --- the task table ------------------------------------------------------------------------------


def test_task_table():
    assert len(RULER_TASKS) == 13 and set(RULER_TASKS) == set(ruler.TASKS)
    assert VARIANTS == ("memagent", "upstream")
    budgets = {"niah_single_1": 128, "vt": 30, "cwe": 120, "fwe": 50, "qa_1": 32, "qa_2": 32}
    assert {t: tokens_to_generate(t) for t in budgets} == budgets
    assert [t for t in RULER_TASKS if corpus_of(t) == "essay"] == [
        "niah_single_2",
        "niah_single_3",
        "niah_multikey_1",
        "niah_multivalue",
        "niah_multiquery",
    ]
    assert (corpus_of("qa_1"), corpus_of("qa_2"), corpus_of("vt")) == ("squad", "hotpotqa", None)


@pytest.mark.parametrize("task", ["niah_single_1", "vt"])
def test_variants_name_the_noise_haystack_differently(task):
    assert task_config(task, "memagent")["type_haystack"] == "repeat"
    assert task_config(task, "upstream")["type_haystack"] == "noise"
    assert task_config(task, "memagent")["answer_prefix"].startswith(
        " Answer:" if task == "vt" else " The"
    )
    assert task_config(task, "upstream")["answer_prefix"].startswith(" ")


def test_memagent_templates_have_no_context_slot():
    for task in RULER_TASKS:
        assert "{context}" not in task_config(task, "memagent")["template"]
        assert "{context}" in task_config(task, "upstream")["template"]
    assert task_config("qa_1", "memagent")["template"] == (
        "Answer the question based on the given documents. {query}"
    )


MEMAGENT_PREFIX = {  # the fork's answer_prefix per family, as its rows carry it (filled)
    "niah": " The special magic {type_needle_v} for {query} mentioned in the provided text are",
    "vt": " Answer: According to the chain(s) of variable assignment in the text above, 5 "
    "variables are assgined the value {query}, they are: ",
    "cwe": " Answer: The top 10 words that appear most often in the list are:",
    "fwe": " Answer: According to the coded text above, the three most frequently appeared "
    "words are:",
    "qa": " Answer:",
}


@pytest.mark.parametrize("task", RULER_TASKS)
def test_memagent_rows_carry_the_forks_answer_prefix(task):
    """Filled as the fork fills it; the prompt (`input`, then the context) never includes it."""
    config = task_config(task, "memagent")
    for row in build(task, "memagent"):
        if task.startswith("niah"):
            query = re.search(r"for (.+) mentioned in the provided text\?$", row["input"])[1]
            kind = config["type_needle_v"]
            one = config["num_needle_v"] * config["num_needle_q"] == 1
            expected = MEMAGENT_PREFIX["niah"].format(
                type_needle_v=kind[:-1] if one else kind, query=query
            )
        elif task == "vt":
            value = re.search(r"assigned the value (\d{5}) in the text above\.$", row["input"])[1]
            expected = MEMAGENT_PREFIX["vt"].format(query=value)
        else:
            expected = MEMAGENT_PREFIX[task.split("_")[0]]
        assert row["answer_prefix"] == expected
        assert row["answer_prefix"] not in row["input"] + row["context"]
        if task in ("cwe", "fwe"):  # the question alone, as before
            assert row["input"] == config["template"]


# --- properties of every task in both variants ---------------------------------------------------


def fits(row, task, variant, length):
    """The variant's length check, recounted."""
    ttg = tokens_to_generate(task)
    if variant == "upstream":
        tokens = count(ruler_prompt(row))
        return tokens == row["num_tokens"] and tokens + ttg <= length
    tokens = count(row["input"] + row["context"])
    if task == "fwe":  # the fork checks the coded text alone against the whole length
        return tokens == row["num_tokens"] and count(row["context"]) <= length
    return tokens == row["num_tokens"] and tokens + ttg <= length


@pytest.mark.parametrize(("task", "variant"), ALL)
def test_rows_fit_and_follow_the_contract(task, variant):
    rows = build(task, variant)
    assert [r["index"] for r in rows] == list(range(N))
    for row in rows:
        assert {"index", "task", "length", "input", "context", "answers", "answer_prefix"} <= set(
            row
        )
        assert (row["task"], row["length"]) == (task, 2048)
        assert fits(row, task, variant, 2048), row["num_tokens"]
        assert row["context"] and row["context"] not in row["input"]
        assert row["answers"] and all(isinstance(a, str) and a for a in row["answers"])
        if variant == "memagent":  # the row records the prefix, the prompt never ends with it
            assert row["answer_prefix"].startswith(" ") and "context_at" not in row
            assert row["answer_prefix"] not in row["input"] + row["context"]
        else:
            assert row["answer_prefix"].startswith(" ")
            prompt = ruler_prompt(row)
            assert prompt.endswith(
                row["context"] + row["input"][row["context_at"] :] + row["answer_prefix"]
            )
        if task != "qa_2":  # HotpotQA golds can be "yes"/"no"
            assert all(a in row["context"] for a in row["answers"])


FILLING = [case for case in ALL if case != ("qa_1", "memagent")]  # the fork stops at 9 paragraphs


@pytest.mark.parametrize(("task", "variant"), FILLING)
def test_haystacks_fill_the_length(task, variant):
    ttg = tokens_to_generate(task)
    for row in build(task, variant):
        assert row["num_tokens"] + ttg > 0.6 * 2048


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("task", ["niah_multikey_3", "vt", "fwe", "qa_1"])
def test_deterministic_given_seed(task, variant):
    rows = build(task, variant)
    again = build_task(task, 2048, N, variant=variant, tokenizer=TOK, seed=42, **corpora())
    assert again == rows
    other = build_task(task, 2048, N, variant=variant, tokenizer=TOK, seed=7, **corpora())
    assert other != rows


# --- NIAH ----------------------------------------------------------------------------------------


def queried_keys(row):
    query = re.search(r"for (.+) mentioned in the provided text\?", row["input"])[1]
    return re.split(r", and |, ", query)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("task", NIAH)
def test_niah_needles(task, variant):
    config = task_config(task, variant)
    plural = config["type_needle_v"]
    for row in build(task, variant):
        context = row["context"]
        found = []
        for key in queried_keys(row):
            pattern = rf"One of the special magic {plural} for {re.escape(key)} is: (\S+)\."
            found += re.findall(pattern, context)
        assert sorted(found) == sorted(row["answers"])
        assert all(context.count(f"is: {value}.") == 1 for value in row["answers"])
        if task in NEEDLE_COUNT:
            assert context.count("One of the special magic") == NEEDLE_COUNT[task]
        if config["type_haystack"] == "needle":  # distractor needles fill the haystack
            assert all(line.startswith("One of the special magic") for line in context.split("\n"))


@pytest.mark.parametrize("variant", VARIANTS)
def test_niah_singular_rewrite(variant):
    single = build("niah_single_3", variant)[0]
    assert single["input"].startswith("A special magic uuid is hidden within the following text.")
    assert "What is the special magic uuid for" in single["input"]
    assert "One of the special magic uuids for" in single["context"]  # the needle stays plural
    several = build("niah_multivalue", variant)[0]
    assert several["input"].startswith("Some special magic numbers are hidden")
    assert "What are all the special magic numbers for" in several["input"]
    assert several["answer_prefix"].endswith("mentioned in the provided text are")
    if variant == "upstream":
        assert single["answer_prefix"].endswith("mentioned in the provided text is")
        assert "I will quiz you about the uuid afterwards.\n" in single["input"]
    else:  # the fork rewrites the template only; its prefix takes the singular type, keeps "are"
        assert single["answer_prefix"].startswith(" The special magic uuid for ")
        assert single["answer_prefix"].endswith("mentioned in the provided text are")
        assert "quiz" not in single["input"]


def test_niah_searches_differ():
    """Linear scan on multiples of 5 lines (fork) vs the largest size that fits (binary)."""
    line, ttg = count(NOISE), 128
    for row in build("niah_single_1", "memagent"):
        assert row["context"].count(NOISE) % 5 == 0
        slack = 2048 - row["num_tokens"] - ttg
        assert 0 <= slack < 5 * line + 2  # the fork's scan also counts the answer
    for row in build("niah_single_1", "upstream"):
        assert 0 <= 2048 - row["num_tokens"] - ttg < line + 1


def test_niah_essay_capped_or_repeated():
    essay = corpora()["essay_text"]
    second = split_sentences(" ".join(essay.split()))[1]
    capped = build("niah_single_2", "memagent", length=8192, n=2)
    repeated = build("niah_single_2", "upstream", length=8192, n=2)
    words = len(essay.split())
    for row in capped:
        assert count(row["context"]) <= words + 30
        assert row["context"].count(second) == 1
    for row in repeated:
        assert row["num_tokens"] + 128 > 0.95 * 8192
        assert row["context"].count(second) == 2 and count(row["context"]) > words


# --- word keys -----------------------------------------------------------------------------------


def brute_keys(adjs, nouns):
    """RULER's word keys as niah.py builds them."""
    return sorted({f"{adj}-{noun}" for adj in adjs for noun in nouns})


def test_word_keys_are_rulers_sorted_set_on_tricky_lists():
    """Hyphenated adjectives interleave with their root's keys and pairs joining to the same
    string collapse; index i is still RULER's sorted(set(...))[i] (checked exhaustively)."""
    adjs = ["old", "old-fashioned", "old-fashioned-x", "older", "ad hoc", "ad", "x-rated", "Zany"]
    adjs += ["o'", "old", "-", "a-"]
    nouns = ["snowplow", "fashioned-snowplow", "tomato", "fashioned", "Apple", "a b", "x", "tomato"]
    keys = _PairWords(adjs, nouns)
    expected = brute_keys(adjs, nouns)
    assert len(keys) == len(expected) < len(set(adjs)) * len(set(nouns))  # collisions collapse
    assert list(keys) == expected and keys[-1] == expected[-1]
    interleaved = ["old-fashioned", "old-fashioned-snowplow", "old-snowplow"]
    assert sorted(interleaved, key=expected.index) == interleaved
    with pytest.raises(IndexError):
        keys[len(keys)]
    rng = random.Random(0)

    def words():
        return [
            "".join(rng.choices("ab- 'A", k=rng.randint(1, 4))) for _ in range(rng.randint(1, 9))
        ]

    for _ in range(200):  # random lists heavy in "-", " ", "'" and capitals
        adjs, nouns = words(), words()
        assert list(_PairWords(adjs, nouns)) == brute_keys(adjs, nouns), (adjs, nouns)


def test_word_keys_on_wonderwords_follow_rulers_order():
    keys = _pair_words()
    assert len(keys) == 6_171_620  # wonderwords 3.0.1: 910 x 6,782 pairs, no two join alike
    # niah_multikey_2 with seed 42 draws index 3,803,481 as its 34th key (Random(42)
    # alternates a key and a 7-digit value). RULER's sorted set has "old-snowplow" there; the
    # adjective x noun product had "old-fashioned-snowplow".
    rng = random.Random(42)
    draws = [(rng.randrange(len(keys)), rng.randint(10**6, 10**7 - 1))[0] for _ in range(34)]
    assert draws[33] == 3_803_481 and keys[3_803_481] == "old-snowplow"
    at = bisect.bisect_left(keys, "old-fashioned-snowplow")
    assert keys[at] == "old-fashioned-snowplow" and at != 3_803_481
    # sorted around every group boundary and at random indices
    starts = {max(start - 1, 0) for start in keys._starts}
    for i in starts | set(random.Random(1).sample(range(len(keys) - 1), 3000)):
        assert keys[i] < keys[i + 1], i


@pytest.mark.parametrize("variant", VARIANTS)
def test_niah_multikey_2_seed_42_draws_rulers_key(variant):
    """The example: sample 0's 34th key draw is "old-snowplow", as in RULER's order."""
    lines = build("niah_multikey_2", variant)[0]["context"].split("\n")
    assert any(" for old-snowplow is: " in line for line in lines[32:34])  # the needle may precede
    assert not any("old-fashioned-snowplow" in line for line in lines)


# --- variable tracking ---------------------------------------------------------------------------


def resolve(context, value):
    """Every variable whose chain of assignments ends at `value`."""
    assigned = dict(re.findall(r"VAR ([A-Z]+) = (VAR [A-Z]+|\d+)", context))

    def final(name, seen=()):
        target = assigned[name]
        return target if not target.startswith("VAR ") else final(target[4:], (*seen, name))

    return {name for name in assigned if final(name) == value}


@pytest.mark.parametrize("variant", VARIANTS)
def test_vt_chain_resolves_to_the_value(variant):
    for row in build("vt", variant):
        value = re.findall(r"assigned the value (\d{5})", row["input"])[-1]
        assert resolve(row["context"], value) == set(row["answers"])
        assert len(row["answers"]) == 5 and all(
            re.fullmatch(r"[A-Z]{5}", a) for a in row["answers"]
        )
        assert row["context"].index(f"VAR {row['answers'][0]} = {value}") < row["context"].index(
            f"= VAR {row['answers'][0]}"
        )
        if variant == "memagent":
            assert "Memorize and track" in row["input"] and "\n " in row["context"]
            assert "5 variables are assgined the value " + value in row["answer_prefix"]
        else:  # HEAD's one-shot example precedes the task, with fresh names and value
            example = row["input"].rsplit("Memorize and track", 1)[0]
            assert example.count("Memorize and track") == 1 and "12345" not in example
            names = example.split("they are: ")[1].split()
            assert len(names) == 5 and all(re.fullmatch(r"[A-Z]{3}", n) for n in names)
            assert row["answer_prefix"].startswith(" Answer: According to the chain(s)")
            assert "5 variables are assigned the value " + value in row["answer_prefix"]


def test_memagent_chunks_and_seeds():
    assert [(s, list(r)) for s, r in _chunks(10, 42, "memagent")][:3] == [
        (42, [0, 1]),
        (43, [2, 3]),
        (44, [4]),
    ]
    assert [len(r) for _, r in _chunks(128, 0, "memagent")] == [16] * 8
    assert [(s, r) for s, r in _chunks(5, 42, "upstream")] == [(42, range(5))]
    # chunk i draws like a build seeded 42 + i (VT's size does not depend on the draws)
    rows = build("vt", "memagent", n=8)
    other = build("vt", "memagent", n=8, seed=43)
    assert {**rows[1], "index": 0} == other[0]


# --- common and frequent words -------------------------------------------------------------------


def listed_words(context):
    return re.split(r"(?:^| )\d+\. ", context)[1:]


CWE_CASES = [(v, n, (6, 1) if n < 4096 else (30, 3)) for v in VARIANTS for n in (2048, 4096)]


@pytest.mark.parametrize(("variant", "length", "freq"), CWE_CASES)
def test_cwe_frequencies(variant, length, freq):
    for row in build("cwe", variant, length=length, n=3):
        counts = Counter(listed_words(row["context"]))
        assert len(row["answers"]) == 10
        assert all(counts[w] == freq[0] for w in row["answers"])
        assert all(c == freq[1] for w, c in counts.items() if w not in row["answers"])
        examples = row["input"].count("Below is a numbered list")
        assert examples == (2 if variant == "upstream" else 1)


def test_cwe_needs_english_words_beyond_wonderwords(monkeypatch):
    pool = tuple(f"pool{i}" for i in range(40))
    monkeypatch.setattr(families, "_common_words", lambda: pool)
    with pytest.raises(ValueError, match="english_words"):
        build_task("cwe", 2048, 2, variant="upstream", tokenizer=TOK, seed=1)
    english = [f"eng{i}" for i in range(3000)]
    rows = build_task(
        "cwe", 2048, 2, variant="upstream", tokenizer=TOK, seed=1, english_words=english
    )
    assert all(a.startswith("eng") for row in rows for a in row["answers"])
    capped = build_task("cwe", 2048, 2, variant="memagent", tokenizer=TOK, seed=1)
    assert all(set(listed_words(row["context"])) <= set(pool) for row in capped)


@pytest.mark.parametrize("variant", VARIANTS)
def test_fwe_answer_is_vocab_1_to_4(variant):
    for row in build("fwe", variant):
        ranked = [w for w, _ in Counter(row["context"].split(" ")).most_common(4)]
        assert ranked == ["...", *row["answers"]]
        assert all(re.fullmatch(r"[a-z]{6}", a) for a in row["answers"])


def test_zeta():
    assert zeta(2.0) == pytest.approx(math.pi**2 / 6, rel=1e-15)
    assert zeta(4.0) == pytest.approx(math.pi**4 / 90, rel=1e-15)
    assert zeta(3.0) == pytest.approx(1.2020569031595942, rel=1e-15)
    with pytest.raises(ValueError):
        zeta(1.0)


# --- QA ------------------------------------------------------------------------------------------


def documents(context):
    return re.split(r"(?:^|\n\n)Document \d+:\n", context)[1:]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("task", "length"), [("qa_1", 300), ("qa_2", 2048)])
def test_qa_gold_documents_and_numbering(task, variant, length):
    c = corpora()
    qas, docs = read_squad(c["squad"]) if task == "qa_1" else read_hotpot(c["hotpot"])
    for j, row in enumerate(build(task, variant, length=length)):
        numbers = [int(n) for n in re.findall(r"(?:^|\n\n)Document (\d+):\n", row["context"])]
        assert numbers == list(range(1, len(numbers) + 1))
        assert len(numbers) < len(docs)
        assert row["input"].endswith(qas[j]["query"])  # sample j asks question j
        assert row["answers"] == qas[j]["outputs"]
        present = documents(row["context"])
        assert all(docs[d] in present for d in qas[j]["context"])
        assert len(set(present)) == len(present) and set(present) <= set(docs)


def test_qa_whole_pool_capped_or_repeated():
    docs = read_squad(corpora()["squad"])[1]
    for row in build("qa_1", "memagent", length=8192, n=3):
        assert sorted(documents(row["context"])) == sorted(docs)
    for row in build("qa_1", "upstream", length=8192, n=3):
        present = documents(row["context"])
        assert set(present) == set(docs) and len(present) > 2 * len(docs)
    memagent = build("qa_1", "memagent", length=1024)[0]["input"]
    assert (
        memagent
        == "Answer the question based on the given documents. "
        + read_squad(corpora()["squad"])[0][0]["query"]
    )


def test_read_squad_keeps_answerable_questions_and_duplicate_answers():
    qas, docs = read_squad(corpora()["squad"])
    assert len(docs) == 9 and docs == sorted(docs)
    assert len(qas) == 9  # the fixture's one impossible question is dropped
    assert any(len(set(q["outputs"])) < len(q["outputs"]) for q in qas)
    assert all(
        len(q["more_context"]) == 2 and q["context"][0] not in q["more_context"] for q in qas
    )


# --- the size search -----------------------------------------------------------------------------


def test_search_size_on_a_linear_count():
    calls = []

    def measure(n):
        calls.append(n)
        return 3 * n + 10

    assert search_size(measure, 100, 5, 5, 10**6) == 30
    assert len(calls) <= 6  # extrapolation, not a scan
    assert search_size(measure, 100, 5, 1, 10**6) == 30
    assert search_size(measure, 100, 5, 1, 10**6, strict=True) == 29
    assert search_size(measure, 100, 5, 1, 20) == 20
    assert search_size(measure, 20, 5, 1, 100) is None


def test_search_size_matches_a_scan_on_monotone_counts():
    rng = random.Random(0)
    for _ in range(200):
        steps = [rng.choice([0, 1, 1, 2, 5, 9]) for _ in range(400)]
        table = [sum(steps[: i + 1]) for i in range(400)]
        lo, step = rng.randint(1, 5), rng.choice([1, 3, 10])
        budget = rng.randint(table[lo], table[-1])
        grid = range(lo, 400, step)
        expected = max(n for n in grid if table[n] <= budget)
        assert search_size(lambda n, t=table: t[n], budget, lo, step, 399) == expected


def test_split_sentences():
    text = 'He left. "Why?" she asked. Dr. Grey stayed, e.g. for tea. 3 cats slept.The end.'
    assert split_sentences(text) == [
        "He left.",
        '"Why?" she asked.',
        "Dr. Grey stayed, e.g. for tea.",
        "3 cats slept.The end.",
    ]
    assert split_sentences("  ") == []


# --- errors --------------------------------------------------------------------------------------


def test_bad_input_errors():
    kwargs = {"variant": "memagent", "tokenizer": TOK, "seed": 0}
    with pytest.raises(ValueError, match="unknown RULER task 'niah'"):
        build_task("niah", 2048, 1, **kwargs)
    with pytest.raises(ValueError, match="unknown RULER variant 'head'"):
        build_task("vt", 2048, 1, variant="head", tokenizer=TOK, seed=0)
    with pytest.raises(ValueError, match="length too small"):
        build_task("vt", 30, 1, **kwargs)
    with pytest.raises(ValueError, match="length too small"):
        build_task("niah_single_2", 512, 1, essay_text=corpora()["essay_text"], **kwargs)
    with pytest.raises(ValueError, match="length too small"):
        build_task("qa_2", 300, 1, hotpot=corpora()["hotpot"], **kwargs)
    with pytest.raises(ValueError, match="needs essay_text"):
        build_task("niah_single_2", 2048, 1, **kwargs)
    with pytest.raises(ValueError, match="essay text is empty"):
        build_task("niah_single_2", 2048, 1, essay_text=" \n", **kwargs)
    with pytest.raises(ValueError, match="needs the squad data"):
        build_task("qa_1", 2048, 1, **kwargs)
    with pytest.raises(ValueError, match="10 samples asked, squad has 9 questions"):
        build_task("qa_1", 2048, 10, squad=corpora()["squad"], **kwargs)
    with pytest.raises(ValueError, match="n_samples must be >= 1"):
        build_task("vt", 2048, 0, **kwargs)
    with pytest.raises(ValueError, match="squad: article 0"):
        build_task("qa_1", 2048, 1, squad={"data": [{"title": "x"}]}, **kwargs)
    with pytest.raises(ValueError, match="hotpot: row 0"):
        build_task("qa_2", 2048, 1, hotpot=[{"question": "q"}], **kwargs)
    with pytest.raises(ValueError, match="not an upstream RULER row"):
        ruler_prompt(build("vt", "memagent")[0])
    with pytest.raises(ValueError, match="unknown RULER task"):
        tokens_to_generate("nope")


# --- scoring -------------------------------------------------------------------------------------


def test_string_match_metrics():
    assert string_match_all("Values: 123 and 456.", ["123", "456", "789"]) == pytest.approx(2 / 3)
    assert string_match_all("ABC-def", ["abc-DEF"]) == 1.0
    assert string_match_part("Values: 123", ["999", "123"]) == 1.0
    assert string_match_part("Values: 123", ["999", "888"]) == 0.0
    with pytest.raises(ValueError):
        string_match_all("x", [])
    assert postprocess_pred("  a\tb\x00c\n ") == "a\nb\nc"


def test_score_ruler_memagent():
    golds = ["1234567", "7654321"]
    response = (
        "<think>the answer is 0</think>I found 1234567. So the answer is 1234567 and 7654321."
    )
    scores = score_ruler("niah_multivalue", response, golds, "memagent")
    assert scores == {"pred": "1234567 and 7654321", "score": 1.0, "string_match": 1.0}
    partial = score_ruler("niah_multivalue", "the answer is 7654321", golds, "memagent")
    assert partial["score"] == 0.5
    missing = score_ruler("niah_single_1", "The answer is 1234567", ["1234567"], "memagent")
    assert missing == {"pred": None, "score": 0.0, "string_match": 0.0}  # case-sensitive marker
    golds = ["the engineer Hesper Calde", "x"]
    qa = score_ruler("qa_1", "Therefore, the answer is Hesper Calde.", golds, "memagent")
    assert qa == {
        "pred": "Hesper Calde",
        "score": 1.0,
        "sub_em": 1.0,
        "sub_em_strict": 1.0,
        "em": 0.0,
        "f1": 0.8,
    }
    second_gold_only = score_ruler("qa_1", "the answer is Orla", ["Tesk", "Orla"], "memagent")
    assert second_gold_only["score"] == 0.0  # only the first gold counts
    empty = score_ruler("qa_1", "", ["Tesk"], "memagent")
    assert empty == {
        "pred": None,
        "score": 0.0,
        "sub_em": 0.0,
        "sub_em_strict": 0.0,
        "em": 0.0,
        "f1": 0.0,
    }


def test_score_ruler_upstream():
    niah = score_ruler("niah_multivalue", " 1234567,\n7654321 ", ["1234567", "999"], "upstream")
    assert niah == {"pred": "1234567,\n7654321", "score": 0.5, "string_match": 0.5}
    qa = score_ruler("qa_1", "Orla", ["Tesk", "orla"], "upstream")
    assert qa["score"] == 1.0
    assert set(score_ruler("qa_1", "", ["Tesk"], "upstream")) == {"pred", "score", "string_match"}
    with pytest.raises(ValueError, match="unknown RULER variant"):
        score_ruler("qa_1", "x", ["y"], "head")


def test_ruler_set_command_builds_a_set_and_names_a_bad_corpus_file(tmp_path):
    import json

    from memrepro import cli
    from memrepro.data.sources import fixture_corpus
    from memrepro.models.tiny import build_tokenizer

    tokenizer_dir = tmp_path / "tokenizer"
    build_tokenizer(fixture_corpus(), 2048, 1 << 20).save_pretrained(tokenizer_dir)
    bad_squad = tmp_path / "squad.json"
    bad_squad.write_text(json.dumps({"version": "v2.0", "data": [{"title": "x"}]}))

    def run(task: str, out: Path, squad: Path) -> None:
        settings = {"task": task, "length": 1024, "samples": 2, "variant": "memagent", "seed": 42}
        cli.main(
            [
                *("ruler-set", "--settings", json.dumps(settings)),
                *("--essays", str(fixture_path("essay_fixture.json"))),
                *(
                    "--squad",
                    str(squad),
                    "--hotpotqa",
                    str(fixture_path("hotpot_dev_fixture.json")),
                ),
                *("--tokenizer", str(tokenizer_dir), "--out", str(out)),
            ]
        )

    run("niah_single_2", tmp_path / "set.jsonl", fixture_path("squad_dev_fixture.json"))
    rows = [json.loads(line) for line in (tmp_path / "set.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["num_tokens"] + 128 <= 1024 for r in rows)
    with pytest.raises(ValueError, match=r"squad\.json: "):
        run("qa_1", tmp_path / "qa.jsonl", bad_squad)
    assert not (tmp_path / "qa.jsonl").exists()
