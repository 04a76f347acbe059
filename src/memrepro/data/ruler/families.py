"""RULER's task families: NIAH, variable tracking, common and frequent words extraction, and QA."""

from __future__ import annotations

import math
import random
import string
from collections.abc import Sequence
from functools import lru_cache

from memrepro.data.ruler.search import (
    Build,
    Generate,
    draw_rows,
    draw_sample,
    grid_search,
    search_size,
    size_probe,
    too_small,
    upstream_upper_bound,
)
from memrepro.data.ruler.tasks import (
    CONTEXT_SLOT,
    DEPTHS,
    DOCUMENT,
    ICL_VALUE,
    NEEDLE,
    NOISE,
    NOISE_NAMES,
    Sample,
    essay_words,
    numbered_words,
    render_template,
    singular_template,
    split_sentences,
)
from memrepro.data.ruler.words import random_letters, random_value, wonderwords_list


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


def _niah_generator(build: Build, words: Sequence[str] | None) -> Generate:
    c, variant = build.config, build.variant
    k = max(c["num_needle_k"], c["num_needle_q"])  # niah.py raises k to at least q
    v, q = c["num_needle_v"], c["num_needle_q"]
    kind_k, kind_v = c["type_needle_k"], c["type_needle_v"]
    haystack = c["type_haystack"]
    template, prefix, type_v = c["template"], c["answer_prefix"], kind_v
    if q * v == 1:
        if variant == "upstream":  # RULER rewrites template + answer prefix as one string
            template, prefix = singular_template(template + CONTEXT_SLOT + prefix).split(
                CONTEXT_SLOT
            )
        else:  # the fork rewrites the template only: its prefix keeps "are"
            template = singular_template(template)
        type_v = kind_v[:-1]

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> Sample:
        keys, values, needles = [], [], []
        for _ in range(k):
            keys.append(random_value(kind_k, rng))
            values.append([])
            for _ in range(v):
                values[-1].append(random_value(kind_v, rng))
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
                        key=random_value(kind_k, rng),
                        value=random_value(kind_v, rng),
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
        return render_template(
            template, prefix, variant, context, answers, type_needle_v=type_v, query=query
        )

    return generate


def build_niah(build: Build, n_samples: int, essay_text: str | None) -> list[dict]:
    haystack = build.config["type_haystack"]
    allowed = ("essay", "needle", NOISE_NAMES[build.variant])
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
        size = grid_search(build, generate, floor, inc, hi)
        if words is not None:
            size = min(size, len(words))
    else:
        size = grid_search(build, generate, floor, 1, upstream_upper_bound(build, generate, floor))

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[Sample, int]:
        return draw_sample(build, generate, size, rng, shuffle_seed, index, inc, floor)

    return draw_rows(build, n_samples, draw)


def _chains(
    rng: random.Random, num_chains: int, num_hops: int, icl: bool
) -> tuple[list[list[str]], list[list[str]]]:
    """Variable names and assignment statements ("VAR X = 12345", "VAR Y = VAR X ") per chain."""
    k = 3 if icl else 5
    hops = min(10, num_hops) if icl else num_hops
    names = [random_letters(rng, k, string.ascii_uppercase) for _ in range((hops + 1) * num_chains)]
    while len(set(names)) < num_chains * (hops + 1):
        names.append(random_letters(rng, k, string.ascii_uppercase))
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


def _vt_generator(build: Build, icl: bool = False) -> Generate:
    c, variant = build.config, build.variant
    if c["type_haystack"] != NOISE_NAMES[variant]:
        raise ValueError(
            f"RULER {build.task}: haystack {c['type_haystack']!r} is not supported for variable "
            f"tracking ({variant} uses {NOISE_NAMES[variant]!r})"
        )
    num_chains, num_hops = c["num_chains"], c["num_hops"]

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> Sample:
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
        return render_template(
            c["template"],
            c["answer_prefix"],
            variant,
            context,
            names[0],
            query=value,
            num_v=hops + 1,
        )

    return generate


def _vt_icl_example(build: Build, rng: random.Random) -> str:
    """HEAD's one-shot example: a chain with 3-letter names and value 12345, built at 500 tokens
    with no generation budget, written as prompt + " " + answer + "\\n"."""
    config = {**build.config, "tokens_to_generate": 0}
    icl = Build(build.task, build.variant, 500, config, build.tokenizer, build.seed)
    generate = _vt_generator(icl, icl=True)
    lo = 5
    size = grid_search(icl, generate, lo, 1, upstream_upper_bound(icl, generate, lo))
    sample, _ = draw_sample(icl, generate, size, rng, build.seed, 0, lo, lo)
    return sample.prompt() + " " + " ".join(sample.answers) + "\n"


def _randomize_icl(example: str, num_hops: int, rng: random.Random) -> str:
    """Fresh names (every occurrence) and a fresh value for the example, per sample (HEAD)."""
    for name in example.split()[-(num_hops + 1) :]:
        example = example.replace(name, random_letters(rng, len(name), string.ascii_uppercase))
    return example.replace(ICL_VALUE, str(rng.randint(10000, 99998)))


def build_vt(build: Build, n_samples: int) -> list[dict]:
    generate = _vt_generator(build)
    inc = 10 if build.variant == "memagent" or build.length >= 4096 else 5
    if build.variant == "memagent":  # no one-shot example (commented out in the fork)
        size = grid_search(build, generate, inc, inc, inc + build.length * inc)

        def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[Sample, int]:
            return draw_sample(build, generate, size, rng, shuffle_seed, index, inc, inc)

        return draw_rows(build, n_samples, draw)

    example = _vt_icl_example(build, random.Random(build.seed))
    extra = build.count(example)
    size = grid_search(
        build, generate, inc, 1, upstream_upper_bound(build, generate, inc, extra), extra=extra
    )
    num_hops = build.config["num_hops"]

    def with_example(size: int, rng: random.Random, shuffle_seed: int, index: int) -> Sample:
        sample = generate(size, rng, shuffle_seed, index)
        sample.before = _randomize_icl(example, num_hops, rng) + "\n" + sample.before
        return sample

    def draw_upstream(rng: random.Random, shuffle_seed: int, index: int) -> tuple[Sample, int]:
        return draw_sample(build, with_example, size, rng, shuffle_seed, index, inc, inc)

    return draw_rows(build, n_samples, draw_upstream)


@lru_cache(maxsize=1)
def _common_words() -> tuple[str, ...]:
    return tuple(
        sorted(
            set(wonderwords_list("noun") + wonderwords_list("adjective") + wonderwords_list("verb"))
        )
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
    return numbered_words(listed), common


def build_cwe(build: Build, n_samples: int, english: Sequence[str] | None) -> list[dict]:
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

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> Sample:
        words = pool(shuffle_seed)
        shots = ""
        if variant == "upstream":  # HEAD's one example list, with its answer
            example = (20, (3, 1)) if short else (40, (10, 3))
            ctx, answer = _word_list(*example, num_cw, words, english, rng, shuffle_seed)
            shot = render_template(c["template"], c["answer_prefix"], variant, ctx, answer)
            shots = shot.prompt() + " " + numbered_words(answer) + "\n"
        else:
            size = min(size, len(words))  # the fork never lists more words than wonderwords has
        context, common = _word_list(size, repeats, num_cw, words, english, rng, shuffle_seed)
        sample = render_template(c["template"], c["answer_prefix"], variant, context, common)
        sample.before = shots + sample.before
        return sample

    if variant == "memagent":
        top = len(_common_words())
        size = min(grid_search(build, generate, inc, inc, -(-top // inc) * inc), top)
    else:
        # HEAD estimates tokens per word at 4096 words (fewer if the word lists are shorter)
        probe = min(4096, max(len(_common_words()), len(english or ())))
        per_word = (size_probe(build, generate)(probe) - build.ttg) / probe
        hi = max(int(build.length // per_word) * 2, 2 * inc)
        size = grid_search(build, generate, inc, 1, hi)

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[Sample, int]:
        return draw_sample(build, generate, size, rng, shuffle_seed, index, inc, inc)

    return draw_rows(build, n_samples, draw)


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
    vocab = [random_letters(rng, wordlen, string.ascii_lowercase) for _ in range(size)]
    while len(set(vocab)) < size:
        vocab.append(random_letters(rng, wordlen, string.ascii_lowercase))
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


def build_fwe(build: Build, n_samples: int) -> list[dict]:
    """FWE keeps its vocabulary while shrinking a sample (one draw per sample, as the scripts).

    memagent: the coded text alone must stay under `length` (the fork counts neither template nor
    generation budget); upstream: the whole prompt under length - tokens_to_generate.
    """
    c, variant = build.config, build.variant
    max_len = build.length if variant == "memagent" else build.length - build.ttg
    vocab_size = max_len // 50
    inc, start = max_len // 32, max_len // c["coded_wordlen"]
    if vocab_size < 4 or inc < 1:
        raise too_small(build.task, build.length, f"a vocabulary of {vocab_size} coded words")

    def sample_of(vocab: list[str], num_words: int, shuffle_seed: int) -> Sample:
        context = _coded_text(vocab, num_words, c["alpha"], shuffle_seed)
        return render_template(c["template"], c["answer_prefix"], variant, context, vocab[1:4])

    def measured(sample: Sample) -> int:
        return build.count(sample.context if variant == "memagent" else sample.prompt())

    probe_vocab = _coded_vocab(
        vocab_size, c["coded_wordlen"], random.Random(build.seed), build.seed
    )

    def measure(num_words: int) -> int:
        return measured(sample_of(probe_vocab, num_words, build.seed))

    # grow from max_len // 6 by max_len // 32 while under max_len, then one step back
    found = search_size(measure, max_len, start, inc, start + max_len * inc, strict=True)
    size = found if found is not None else start - inc

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[Sample, int]:
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
        raise too_small(build.task, build.length, f"sample {index} fits no coded words")

    return draw_rows(build, n_samples, draw)


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

    The pool is `memrepro.data.hotpotqa.build_pool` (title + "\\n" + sentences, unique, sorted).
    """
    from memrepro.data.hotpotqa import build_pool, question_records

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


def _qa_generator(build: Build, qas: list[dict], docs: list[str]) -> Generate:
    c, variant = build.config, build.variant

    def generate(size: int, rng: random.Random, shuffle_seed: int, index: int) -> Sample:
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
        return render_template(
            c["template"], c["answer_prefix"], variant, context, answers, **fields
        )

    return generate


def build_qa(build: Build, n_samples: int, squad: dict | None, hotpot: list | None) -> list[dict]:
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
        size = grid_search(build, generate, lo, 1, len(docs))
    else:
        size = grid_search(
            build, generate, lo, 1, upstream_upper_bound(build, generate, max(lo, inc))
        )

    def draw(rng: random.Random, shuffle_seed: int, index: int) -> tuple[Sample, int]:
        floor = len(qas[index]["context"])
        return draw_sample(build, generate, max(size, floor), rng, shuffle_seed, index, inc, floor)

    return draw_rows(build, n_samples, draw)
