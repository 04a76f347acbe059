"""RULER's 13 synthetic tasks, built as MemAgent's fork built them or as RULER HEAD builds them.

Sources: RULER (Hsieh et al., 2024; github.com/NVIDIA/RULER, `scripts/data/synthetic`) and
MemAgent's fork of it (github.com/BytedTsinghua-SIA/MemAgent). Two variants:

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

The package: `tasks` (the task table, text helpers), `words` (the word lists), `search` (the
haystack-size search and the draws), `families` (each family's generator); `build_task` here.

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

from collections.abc import Sequence

from memrepro.data.ruler.families import (
    build_cwe,
    build_fwe,
    build_niah,
    build_qa,
    build_vt,
    read_hotpot,
    read_squad,
    zeta,
)
from memrepro.data.ruler.search import Build, too_small
from memrepro.data.ruler.tasks import (
    ESSAY_TASKS,
    FAMILIES,
    NOISE,
    RULER_TASKS,
    TASKS,
    VARIANTS,
    Tokenizer,
    check_task,
    corpus_of,
    essay_words,
    ruler_prompt,
    split_sentences,
    task_config,
    tokens_to_generate,
)

__all__ = [
    "ESSAY_TASKS",
    "FAMILIES",
    "NOISE",
    "RULER_TASKS",
    "TASKS",
    "VARIANTS",
    "build_task",
    "corpus_of",
    "essay_words",
    "read_hotpot",
    "read_squad",
    "ruler_prompt",
    "split_sentences",
    "task_config",
    "tokens_to_generate",
    "zeta",
]


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
    check_task(task, variant)
    if n_samples < 1:
        raise ValueError(f"RULER {task}: n_samples must be >= 1, got {n_samples}")
    config = task_config(task, variant)
    if length <= config["tokens_to_generate"]:
        raise too_small(task, length, f"{config['tokens_to_generate']} tokens to generate")
    build = Build(task, variant, length, config, tokenizer, seed)
    family = config["family"]
    if family == "niah":
        rows = build_niah(build, n_samples, essay_text)
    elif family == "variable_tracking":
        rows = build_vt(build, n_samples)
    elif family == "common_words_extraction":
        rows = build_cwe(build, n_samples, english_words)
    elif family == "freq_words_extraction":
        rows = build_fwe(build, n_samples)
    else:
        rows = build_qa(build, n_samples, squad, hotpot)
    _check_golds(rows, task, length, variant)
    return rows


def _check_golds(rows: list[dict], task: str, length: int, variant: str) -> None:
    """Every sample's scored golds can tell a right reply (`memrepro.scoring.golds`): a QA
    sample's answers come from SQuAD or HotpotQA as they are."""
    from memrepro.scoring.golds import bad_gold
    from memrepro.scoring.ruler import scored_golds

    for row in rows:
        problem = bad_gold(*scored_golds(task, variant, row["answers"]), published=True)
        if problem is not None:
            raise ValueError(f"RULER {task} @ {length}: sample {row['index']}: {problem}")
