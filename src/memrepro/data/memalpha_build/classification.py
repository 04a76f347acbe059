"""PubMed-RCT, NLU and TREC-C as Mem-α's test-time-learning training instances (Appendix A.1).

Each chunk is a dated exchange in which the user shares labelled examples. The questions ask for
the label of new sentences, answered as `\\boxed{label}`.

- **PubMed-RCT** (`pietrolesci/pubmed-200k-rct`, train): 100 instances of 10 chunks, each chunk
  a random budget of 1,024-2,048 tokens of "Sample: …\\nLabels: <digit>" lines. Its 100 questions
  are sentences no chunk used. The labels are the dataset's numbers (0-4), never their names.
- **NLU and TREC-C** (`ai-hyz/MemoryAgentBench`, Test_Time_Learning): the first row of each
  source, its context parsed into (sentence, label) pairs. Each of 200 instances spreads about
  2,000 tokens of examples over 10 chunks. One example of every label missing from them is added
  to chunk 0, so each instance holds every label.

TREC-C and NLU questions (`questions=`):
- `benchmark` (the official script, which made the released set): the row's own 100 test
  questions, the very questions MemoryAgentBench asks at evaluation.
- `held_out`: 100 of the context's examples that no chunk of the instance holds. The paper does
  not say which questions it used; this variant keeps the evaluation's questions out of training.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrepro.data.memalpha_build.common import (
    CLASSIFICATION_TEMPLATES,
    SEPARATOR,
    Count,
    SourceError,
    dialogue_chunk,
    field,
    instance,
)

PUBMED_PROMPT = (
    "You are a scientific document classifier. I will provide you with chunks of medical "
    "abstracts. Each chunk is labeled with a number. The meaning of each label must be learned "
    "from context — you will not be told what each number represents explicitly.\n\nYour task has "
    "two steps:\n\n1. **Memorize label mappings**: As you read each labeled chunk, learn to "
    "associate the label number with the type of content it represents. Memorize the relationship "
    "between the chunk content and its numeric label. **Classify**: After seeing enough labeled "
    "examples, I will give you a new chunk. Based on your memory of label meanings, classify the "
    "new chunk and output only the number (0–4) that best represents it.\n\nOutput format: A "
    "single number from 0 to 4.\n\nLet's begin with the labeled examples."
)
PUBMED_QUESTION = (
    "Sentence: {text}\nWhat are the labels for the above medical abstract sentence? Put your "
    "final answer as \\boxed{{label}}."
)
TTL_QUESTION = (
    "Sentence: {text}\nWhat are the labels for the above sentence? Put your final answer as "
    "\\boxed{{label}}."
)
TTL_PROMPT = (
    "I will provide you with classification training examples for {name}. Please analyze each "
    "chunk and store the classification patterns and labels to answer test questions correctly."
)
PUBMED_CHUNK_TOKENS = (1024, 2048)
PUBMED_TRUNCATE_CHARS = 1000  # a chunk's first sample, if alone too long, is cut to this
TTL_SOURCES = {"NLU": "nlu", "TREC-C": "trec_coarse"}  # the name, what its MAB source contains
TTL_TOKENS = 2000  # an instance's examples, in tokens
QUESTIONS = ("benchmark", "held_out")


def pubmed_instances(
    rows: Sequence[Mapping[str, Any]],
    count: Count,
    rng: random.Random,
    where: str,
    instances: int = 100,
    chunks_per_instance: int = 10,
    questions: int = 100,
    chunk_tokens: tuple[int, int] = PUBMED_CHUNK_TOKENS,
) -> list[dict[str, Any]]:
    """PubMed-RCT's sentences (`text`, numeric `labels`) as instances: every sentence is used
    once, by a chunk or as a question, in one seeded order."""
    samples = [_pubmed_sample(row, f"{where}: row {n}") for n, row in enumerate(rows)]
    stream = rng.sample(range(len(samples)), len(samples))
    built = []
    for _ in range(instances):
        chunks = []
        for k in range(chunks_per_instance):
            text, stream = _pubmed_chunk(samples, stream, count, rng.randint(*chunk_tokens))
            if not text:
                break
            chunks.append(dialogue_chunk(text, k, rng, CLASSIFICATION_TEMPLATES, gap="\n\n"))
        if len(chunks) < chunks_per_instance or len(stream) < questions:
            break
        asked, stream = stream[:questions], stream[questions:]
        pairs = [
            {"question": PUBMED_QUESTION.format(text=samples[i][0]), "answer": samples[i][1]}
            for i in asked
        ]
        built.append(instance("pubmed-rct", PUBMED_PROMPT, chunks, pairs))
    return built


def _pubmed_sample(row: Mapping[str, Any], where: str) -> tuple[str, str]:
    label = field(row, "labels", where)
    if isinstance(label, bool) or not str(label).strip().isdigit():
        raise SourceError(f"{where}, labels: expected a class number, got {label!r}")
    return str(field(row, "text", where)), str(label).strip()


def _pubmed_chunk(
    samples: Sequence[tuple[str, str]], stream: list[int], count: Count, budget: int
) -> tuple[str, list[int]]:
    """One chunk's "Sample/Labels" text from the head of the stream, and the rest of it."""
    lines: list[str] = []
    used = taken = 0
    for index in stream:
        text, label = samples[index]
        line = f"Sample: {text}\nLabels: {label}"
        tokens = count(line)
        if not lines and tokens > budget:  # cut a long first sample, or skip it
            line = f"Sample: {text[:PUBMED_TRUNCATE_CHARS]}\nLabels: {label}"
            tokens = count(line)
            taken += 1
            if tokens <= budget:
                lines.append(line)
                used = tokens
            continue
        if used + tokens > budget:
            break
        lines.append(line)
        used += tokens
        taken += 1
    return SEPARATOR.join(lines), stream[taken:]


def ttl_rows(rows: Iterable[Mapping[str, Any]], where: str) -> dict[str, dict[str, Any]]:
    """The first MemoryAgentBench row of each TTL training source: {name: {source, examples,
    questions, answers}}; a SourceError names any source no row holds."""
    found: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows):
        at = f"{where}: row {n}"
        source = str(field(field(row, "metadata", at), "source", f"{at}, metadata"))
        for name, part in TTL_SOURCES.items():
            if part in source and name not in found:
                answers = field(row, "answers", at)
                found[name] = {
                    "source": source,
                    "examples": labelled_examples(str(field(row, "context", at))),
                    "questions": [str(q) for q in field(row, "questions", at)],
                    "answers": [str(a[0]) if not isinstance(a, str) else a for a in answers],
                }
    missing = [name for name in TTL_SOURCES if name not in found]
    if missing:
        raise SourceError(f"{where}: no row whose metadata.source holds {missing}")
    return found


def labelled_examples(context: str) -> list[tuple[str, str]]:
    """The (sentence, label) pairs of a TTL context: a line, then a "label: x" line."""
    lines = [line.strip() for line in context.strip().split("\n")]
    pairs = []
    for line, following in zip(lines, [*lines[1:], ""], strict=True):
        if line and not line.startswith("label:") and following.startswith("label:"):
            pairs.append((line, following.removeprefix("label:").strip()))
    return pairs


def ttl_instances(
    name: str,
    row: Mapping[str, Any],
    count: Count,
    rng: random.Random,
    questions: str = "benchmark",
    instances: int = 200,
    chunks_per_instance: int = 10,
    held_out: int = 100,
    tokens: int = TTL_TOKENS,
) -> list[dict[str, Any]]:
    """`instances` instances of one TTL source (`name`: NLU or TREC-C) from its row (`ttl_rows`)."""
    if questions not in QUESTIONS:
        raise ValueError(f"questions={questions!r}: expected one of {QUESTIONS}")
    examples = row["examples"]
    if not examples:
        raise SourceError(f"{name} ({row['source']}): its context holds no labelled example")
    mean = sum(count(text) for text, _ in examples) / len(examples)
    needed = max(chunks_per_instance, int(tokens / mean))
    built = []
    for _ in range(instances):
        chosen = rng.sample(range(len(examples)), min(needed, len(examples)))
        chosen = [chosen[i % len(chosen)] for i in range(needed)]
        parts = _spread(chosen, chunks_per_instance)
        added = _missing_labels(examples, chosen, rng)
        parts[0] += added
        chunks = [
            dialogue_chunk(
                SEPARATOR.join(_example(examples[i]) for i in part),
                k,
                rng,
                CLASSIFICATION_TEMPLATES,
            )
            for k, part in enumerate(parts)
        ]
        pairs = _ttl_pairs(row, examples, {*chosen, *added}, rng, questions, held_out)
        built.append(instance(row["source"], TTL_PROMPT.format(name=name), chunks, pairs))
    return built


def _example(example: tuple[str, str]) -> str:
    return f"Sentence: {example[0]}\nLabel: {example[1]}"


def _spread(chosen: list[int], parts: int) -> list[list[int]]:
    """`chosen` cut into `parts` runs whose sizes differ by at most one."""
    size, extra = divmod(len(chosen), parts)
    runs, start = [], 0
    for k in range(parts):
        end = start + size + (k < extra)
        runs.append(chosen[start:end])
        start = end
    return runs


def _missing_labels(
    examples: Sequence[tuple[str, str]], chosen: Sequence[int], rng: random.Random
) -> list[int]:
    """One random example of each label the chosen examples lack, in label order."""
    present = {examples[i][1] for i in chosen}
    by_label: dict[str, list[int]] = {}
    for i, (_, label) in enumerate(examples):
        by_label.setdefault(label, []).append(i)
    return [rng.choice(by_label[label]) for label in sorted(set(by_label) - present)]


def _ttl_pairs(
    row: Mapping[str, Any],
    examples: Sequence[tuple[str, str]],
    used: set[int],
    rng: random.Random,
    questions: str,
    held_out: int,
) -> list[dict[str, Any]]:
    if questions == "benchmark":
        asked = zip(row["questions"], row["answers"], strict=True)
    else:
        unused = [i for i in range(len(examples)) if i not in used]
        asked = (examples[i] for i in sorted(rng.sample(unused, min(held_out, len(unused)))))
    return [{"question": TTL_QUESTION.format(text=q), "answer": a} for q, a in asked]
