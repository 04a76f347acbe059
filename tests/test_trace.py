"""Case-study traces (Appendix C / F): MemAgent records the memory after every chunk (its changes),
the evaluation stores them in the predictions, and `memrepro trace` renders chosen samples, with the
chunks holding gold evidence, as Markdown and HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_evaluation import CharTokenizer

from memrepro.agents.chunking import token_chunks
from memrepro.agents.driver import run_batched
from memrepro.agents.memagent import NO_MEMORY, MemAgentConfig, MemoryTrace, memagent
from memrepro.benchmarks import Task
from memrepro.benchmarks.base import row_chunks
from memrepro.engines.base import Completion
from memrepro.evaluation import evaluate, load_finished, merge_shards, summarize, workflow_runner
from memrepro.report.trace import (
    CaseStudy,
    by_task,
    case_study,
    find_evidence,
    gold_chunks,
    memory_after_chunks,
    render_html,
    render_markdown,
    select,
    verdict,
    write_report,
)
from memrepro.scoring.evidence import evidence_strings
from memrepro.systems.longcontext import longcontext_system
from memrepro.systems.memagent import memagent_system

HQA = Task("ruler_hqa", "hqa")


def between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


class NoteTakingEngine:
    """Keeps its memory until a section mentions Paris, then notes it; answers from memory.
    A question containing `fail_on` fails at its `fail_at`-th memory turn."""

    def __init__(self, tokenizer=None, fail_on: str | None = None, fail_at: int = 0):
        self.tokenizer = tokenizer or CharTokenizer()
        self.fail_on, self.fail_at = fail_on, fail_at
        self.turns: dict[str, int] = {}
        self.calls = 0

    def chat(self, requests, sampling):
        self.calls += 1
        return [self.reply(r.messages[-1]["content"]) for r in requests]

    def reply(self, content: str) -> Completion:
        if "<problem>" not in content:  # a long-context prompt
            return Completion(text="Therefore, the answer is Paris.")
        problem = between(content, "<problem> \n", "\n</problem>")
        memory = between(content, "<memory>\n", "\n</memory>")
        if "<section>" not in content:
            answer = "Paris" if "paris" in memory.lower() else "unknown"
            return Completion(text=f"Therefore, the answer is {answer}.")
        turn = self.turns.get(problem, 0)
        self.turns[problem] = turn + 1
        if self.fail_on and self.fail_on in problem and turn == self.fail_at:
            return Completion(text="", error="HTTP 500")
        if "paris" in between(content, "<section>\n", "\n</section>").lower():
            return Completion(text=f"<think>found it</think>Noted: Paris (turn {turn}).")
        return Completion(text=memory)  # the memory kept as it was


def rows(n: int = 2) -> list[dict]:
    contexts = [
        "aaaaaaaaaa" + "bbb PARIS " + "cccccccccc" + "Paris dddd" + "eeeeeeeeee" + "ff",
        "dddddddddd" * 4,
    ]
    return [
        {
            "index": i,
            "input": f"Where is it {i}?",
            "answers": ["Paris"],
            "num_tokens": len(contexts[i % 2]),
            "context": contexts[i % 2],
        }
        for i in range(n)
    ]


AGENT = MemAgentConfig(chunk_tokens=10, memory_tokens=64, final_tokens=16)


def run_memagent(data, engine, path: Path):
    system = memagent_system(HQA, engine.tokenizer, None, AGENT)
    return evaluate(data, workflow_runner(HQA, system, engine, None), path, batch_size=len(data))


# --- the workflow records the memory after every chunk -------------------------------------


class Replies:
    def __init__(self, texts):
        self.tokenizer = CharTokenizer()
        self.texts = iter(texts)

    def chat(self, requests, sampling):
        return [Completion(text=next(self.texts)) for _ in requests]


def test_the_trace_keeps_only_the_chunks_after_which_the_memory_changed():
    replies = [NO_MEMORY, "m1", "<think>same</think>m1", "m2", "m2", "Therefore, the answer is x."]
    trace = MemoryTrace()
    workflow = memagent("q", ["c0", "c1", "c2", "c3", "c4"], AGENT, trace)
    [rollout] = run_batched([workflow], Replies(replies), sampling=None)
    assert rollout.answer == "Therefore, the answer is x." and len(rollout.conversations) == 6
    # chunk 0 wrote "No previous memory" again: no change; chunk 2 wrote m1 again (after </think>)
    assert trace.changes == [(1, "m1"), (3, "m2")] and trace.n_chunks == 5
    assert trace.memory == "m2"
    as_record = [{"chunk": i, "memory": m} for i, m in trace.changes]
    assert memory_after_chunks(as_record, 5) == [NO_MEMORY, "m1", "m1", "m2", "m2"]
    assert memory_after_chunks([], 3) == [NO_MEMORY] * 3


def test_a_trace_that_does_not_fit_its_chunk_count_is_refused():
    with pytest.raises(ValueError, match="rising index below n_chunks=2"):
        memory_after_chunks([{"chunk": 2, "memory": "m"}], 2)
    with pytest.raises(ValueError, match="chunk 1 after chunk 1"):
        memory_after_chunks([{"chunk": 1, "memory": "a"}, {"chunk": 1, "memory": "b"}], 3)


# --- the evaluation stores it ----------------------------------------------------------------


def test_memagent_predictions_carry_the_memory_trace_and_the_chunk_count(tmp_path):
    path = tmp_path / "p.jsonl"
    predictions = run_memagent(rows(2), NoteTakingEngine(), path)
    # 52 characters in 10-token chunks, Paris in chunks 1 and 3; 40 without it: 4 chunks
    first, second = predictions
    assert first["n_chunks"] == 6 and second["n_chunks"] == 4
    assert first["memory_trace"] == [
        {"chunk": 1, "memory": "Noted: Paris (turn 1)."},
        {"chunk": 3, "memory": "Noted: Paris (turn 3)."},
    ]
    assert second["memory_trace"] == []  # never changed: "No previous memory" throughout
    assert first["score"] == 1.0 and second["score"] == 0.0
    written = [json.loads(line) for line in path.read_text().splitlines()]
    assert written == predictions
    # the old fields are all still there, unchanged in meaning
    assert {"index", "input", "answers", "num_tokens", "n_calls", "response", "failed"} <= set(
        first
    )
    assert first["n_calls"] == 7


def test_a_failed_sample_keeps_the_trace_of_the_chunks_it_read(tmp_path):
    engine = NoteTakingEngine(fail_on="it 0?", fail_at=3)
    [prediction] = run_memagent(rows(1), engine, tmp_path / "p.jsonl")
    assert prediction["failed"] and prediction["n_chunks"] == 3  # chunks 0-2 read, 3 failed
    assert prediction["memory_trace"] == [{"chunk": 1, "memory": "Noted: Paris (turn 1)."}]


def test_other_systems_records_are_unchanged(tmp_path):
    engine = NoteTakingEngine()
    system = longcontext_system(HQA, engine.tokenizer, None, 1000, None)
    [prediction] = evaluate(
        rows(1), workflow_runner(HQA, system, engine, None), tmp_path / "p.jsonl", 1
    )
    assert "memory_trace" not in prediction and "n_chunks" not in prediction


def test_metrics_and_merging_ignore_the_trace(tmp_path):
    predictions = run_memagent(rows(4), NoteTakingEngine(), tmp_path / "p.jsonl")
    trace_keys = ("memory_trace", "n_chunks", "evidence_chunks")
    stripped = [{k: v for k, v in p.items() if k not in trace_keys} for p in predictions]
    traced = summarize(predictions, "ruler_hqa", "hqa", "s", 2)
    assert sum(traced.pop("memory_patterns").values()) == 4  # every sample's pattern, 0 primacy
    assert traced == summarize(stripped, "ruler_hqa", "hqa", "s", 2)  # the scores ignore it
    mixed = merge_shards([predictions[:2], stripped[2:]])  # an old shard beside a new one
    assert [p["index"] for p in mixed] == [0, 1, 2, 3]


def test_a_predictions_file_written_before_traces_resumes(tmp_path):
    path = tmp_path / "p.jsonl"
    old = run_memagent(rows(1), NoteTakingEngine(), tmp_path / "old.jsonl")[0]
    old = {k: v for k, v in old.items() if k not in ("memory_trace", "n_chunks")}
    path.write_text(json.dumps(old) + "\n")
    engine = NoteTakingEngine()
    predictions = run_memagent(rows(3), engine, path)
    assert engine.turns.keys() == {"Where is it 1?", "Where is it 2?"}  # sample 0 was kept
    assert [p["index"] for p in load_finished(path)] == [0, 1, 2]
    assert "memory_trace" not in predictions[0] and "memory_trace" in predictions[1]
    assert summarize(predictions, "ruler_hqa", "hqa", "s", 2)["n_items"] == 3
    # and its sample renders, without a trace
    markdown = render_markdown([case_study(predictions[0], task="hqa")], "t")
    assert "No memory trace recorded" in markdown


# --- gold evidence -------------------------------------------------------------------------


def test_gold_chunks_are_those_holding_an_evidence_string_in_any_case():
    chunks = ["nothing here", "the capital: PARIS.", "paris again", "Lyon", "pa", "ris"]
    assert gold_chunks(chunks, ["Paris"]) == [1, 2]  # cut by a boundary (4|5): in neither
    assert gold_chunks(iter(chunks), ["lyon", "nothing"]) == [0, 3]
    assert gold_chunks(chunks, []) == []
    found = find_evidence(["x" * 300 + " Paris " + "y" * 300], ["paris"], context_chars=5)
    assert found == {0: "…xxxx Paris yyyy…"}
    assert find_evidence(["xParisy"], ["paris"]) == {}  # a whole word only
    assert find_evidence(["Paris"], ["paris"]) == {0: "Paris"}


def test_evidence_strings_are_the_answers_unless_the_caller_gives_some():
    assert evidence_strings(["Paris", " paris ", "", "Rome"]) == ("Paris", "Rome")
    assert evidence_strings(["yes"], ["Adriana Trigiani", "Greenwich Village"]) == (
        "Adriana Trigiani",
        "Greenwich Village",
    )


def test_gold_chunks_of_a_doc_id_row_as_the_evaluation_cuts_it():
    pool = ["alpha", "Paris beta", "gamma"]
    row = {"index": 0, "input": "q", "answers": ["Paris"], "doc_ids": [2, 1, 0]}
    tokenizer = CharTokenizer()
    chunks = list(row_chunks(row, pool, tokenizer, 10))
    text = "Document 1:\ngamma\n\nDocument 2:\nParis beta\n\nDocument 3:\nalpha"
    assert chunks == list(token_chunks(tokenizer, [text], 10))
    assert gold_chunks(chunks, ["paris"]) == [3]


# --- choosing samples ------------------------------------------------------------------------


def test_samples_are_chosen_by_index_or_as_the_first_k_of_a_verdict():
    preds = [
        {"index": 0, "score": 1.0, "failed": False},
        {"index": 1, "score": 0.0, "failed": False},
        {"index": 2, "score": 0.0, "failed": True},
        {"index": 3, "score": 0.5, "failed": False},
        {"index": 4, "score": 1.0, "failed": False},
    ]
    assert [verdict(p) for p in preds] == ["correct", "wrong", "failed", "wrong", "correct"]
    assert [p["index"] for p in select(preds, first=2)] == [0, 1]
    assert [p["index"] for p in select(preds)] == [0, 1, 2, 3, 4]
    assert [p["index"] for p in select(preds, only="wrong")] == [1, 3]
    assert [p["index"] for p in select(preds, only="failed")] == [2]
    assert [p["index"] for p in select(preds, only="correct", first=1)] == [0]
    assert [p["index"] for p in select(preds, indices=[4, 1])] == [4, 1]
    with pytest.raises(ValueError, match=r"no prediction for sample\(s\) \[9\]"):
        select(preds, indices=[9])
    with pytest.raises(ValueError, match="only must be one of"):
        select(preds, only="bad")
    preds[3]["input"] = "The director of the romantic comedy 'Big Stone Gap' is based where?"
    asked = select(preds, first=2, question="big stone gap")  # the paper's sample first
    assert [p["index"] for p in asked] == [3, 0, 1]
    assert [p["index"] for p in select(preds, first=2, question="Nowhere")] == [0, 1]
    lines = [{"task": "a", "index": 0}, {"task": "b", "index": 0}, {"task": "a", "index": 1}]
    assert {t: [p["index"] for p in ps] for t, ps in by_task(lines).items()} == {
        "a": [0, 1],
        "b": [0],
    }


# --- rendering -------------------------------------------------------------------------------


def prediction(**extra) -> dict:
    return {
        "index": 7,
        "input": "Where is <the> director based?",
        "answers": ["Greenwich Village"],
        "pred": "Greenwich Village, New York City",
        "response": "Therefore, the answer is Greenwich Village, New York City.",
        "score": 1.0,
        "failed": False,
        "error": None,
        "n_calls": 61,
        **extra,
    }


def traced_prediction() -> dict:
    trace = [
        {"chunk": 0, "memory": "Ghost is based in New York City."},
        {"chunk": 10, "memory": "<b>Trigiani</b> & co: based in greenwich village ```x```"},
    ]
    return prediction(memory_trace=trace, n_chunks=60)


def chunks_with_gold(n: int, gold: set[int]) -> list[str]:
    return [
        f"doc {i} " + ("Adriana lives in Greenwich Village." if i in gold else "x")
        for i in range(n)
    ]


def test_steps_show_changes_and_gold_chunks_and_collapse_the_rest():
    study = case_study(traced_prediction(), chunks_with_gold(60, {10, 30}), task="hqa")
    assert study.n_chunks == 60 and sorted(study.evidence) == [10, 30] and not study.notes
    assert study.memories()[9] == "Ghost is based in New York City."
    assert study.memories()[59].startswith("<b>Trigiani</b>")
    steps = [(s.first, s.last, s.changed, s.gold) for s in study.steps()]
    assert steps == [
        (0, 0, True, False),
        (1, 9, False, False),
        (10, 10, True, True),
        (11, 29, False, False),
        (30, 30, False, True),  # gold evidence, yet the memory stayed as it was
        (31, 59, False, False),
    ]


def test_the_bridge_paragraph_that_holds_no_answer_marks_its_chunk_too():
    from memrepro.data.ruler_hqa import document_start, document_title, render_context

    bridge = (
        "Big Stone Gap (film)\nBig Stone Gap is a 2014 drama film directed by Adriana Trigiani."
    )
    answer = "Adriana Trigiani\nAdriana Trigiani is an author based in Greenwich Village."
    pool = ["filler", bridge, answer]
    # where RULER-HQA's renderer puts them: documents 2 and 3 of a context
    context = render_context([0, 1, 2], pool)
    supporting = {document_title(doc): document_start(doc) for doc in (bridge, answer)}
    assert all(start in context for start in supporting.values())
    chunks = [f"doc {i} x" for i in range(40)]
    chunks[4] = f"Document 9:\n{bridge}\n\nDocument 10:\nfiller"
    chunks[30] = f"Document 77:\n{answer}"
    study = case_study(traced_prediction(), chunks, task="hqa", supporting=supporting)
    assert study.supporting == {"Big Stone Gap (film)": 4, "Adriana Trigiani": 30}
    assert sorted(study.evidence) == [4, 30]
    assert study.evidence[4] == "[supporting paragraph begins] Big Stone Gap (film)"
    assert study.evidence[30].endswith("Village.\n[supporting paragraph begins] Adriana Trigiani")
    md = render_markdown([study], "Case study")
    assert (
        "**Supporting paragraphs:** Big Stone Gap (film): chunk 4 (memory unchanged); "
        "Adriana Trigiani: chunk 30 (memory unchanged)" in md
    )
    assert "#### Chunk 4 · gold evidence: yes · memory unchanged" in md
    # a paragraph whose header a chunk boundary cuts is found in no chunk: said so
    cut = case_study(
        traced_prediction(), ["Document 9:\nBig Stone", " Gap (film)"], supporting=supporting
    )
    assert cut.supporting == {"Big Stone Gap (film)": None, "Adriana Trigiani": None}
    assert "Big Stone Gap (film): not found (a chunk boundary" in render_markdown([cut], "x")


def test_markdown_trace(tmp_path):
    study = case_study(traced_prediction(), chunks_with_gold(60, {10, 30}), task="hqa")
    md = render_markdown([study], "Case study")
    assert md.startswith("# Case study\n")
    assert "## hqa · sample 7 · correct (score 1.00)" in md
    assert "- **Question:** Where is &lt;the&gt; director based?" in md
    assert "- **Gold answers:** Greenwich Village" in md
    assert "- chunks 1–9: memory unchanged" in md
    assert "- chunks 11–29: memory unchanged" in md and "- chunks 31–59: memory unchanged" in md
    assert "#### Chunk 10 · gold evidence: yes · memory changed" in md
    assert "#### Chunk 30 · gold evidence: yes · memory unchanged" in md
    assert "#### Chunk 0 · gold evidence: no · memory changed" in md
    assert "Gold evidence in:** 10 (memory changed), 30 (memory unchanged)" in md
    # a memory with a backtick run is fenced by a longer fence, verbatim
    assert "````text\n<b>Trigiani</b> & co: based in greenwich village ```x```\n````" in md
    assert md.count("#### Chunk") == 3


def test_a_memory_update_shows_what_it_added_and_dropped_and_the_last_memory_whole():
    from memrepro.report.trace import memory_diff

    before = "Ghost is in New York. Its director is unknown.\nTrigiani wrote it."
    after = "Trigiani wrote it. Ghost is in New York. She lives in Greenwich Village."
    added, dropped = memory_diff(before, after)
    assert added == ["She lives in Greenwich Village."]  # a moved sentence is neither
    assert dropped == ["Its director is unknown."]
    trace = [
        {"chunk": 0, "memory": before},
        {"chunk": 3, "memory": after},
        {"chunk": 5, "memory": "Greenwich Village."},
    ]
    study = case_study(prediction(memory_trace=trace, n_chunks=6), task="hqa")
    md = render_markdown([study], "t")
    first = (
        "+ Ghost is in New York.\n+ Its director is unknown.\n+ Trigiani wrote it.\n- " + NO_MEMORY
    )
    assert f"```diff\n{first}\n```" in md
    assert "```diff\n+ She lives in Greenwich Village.\n- Its director is unknown.\n```" in md
    assert "Final memory (after this chunk):\n\n```text\nGreenwich Village.\n```" in md
    assert md.count("The update (+ added, - dropped):") == 2
    assert '<pre class="update">+ She lives' in render_html([study], "t")


def test_html_trace_escapes_and_marks_the_evidence():
    study = case_study(traced_prediction(), chunks_with_gold(60, {10, 30}), task="hqa")
    page = render_html([study], "Case <study>")
    assert page.startswith("<!DOCTYPE html>") and "<title>Case &lt;study&gt;</title>" in page
    assert "<b>Trigiani</b>" not in page and "&lt;b&gt;Trigiani&lt;/b&gt; &amp; co" in page
    assert "<mark>greenwich village</mark>" in page  # the evidence, whatever its case
    assert "Where is &lt;the&gt; director based?" in page
    assert '<td colspan="4">chunks 11–29: memory unchanged</td>' in page
    assert page.count('<tr class="changed') == 2 and page.count('<td class="gold">yes') == 2
    assert '<a href="#sample-hqa-7">' in page and '<section id="sample-hqa-7">' in page


def test_without_the_chunks_the_trace_renders_with_gold_unknown():
    study = case_study(traced_prediction(), task="hqa")
    assert study.evidence is None and study.n_chunks is None
    assert [(s.first, s.last) for s in study.steps()] == [(0, 0), (1, 9), (10, 10), (11, 59)]
    md = render_markdown([study], "t")
    assert "#### Chunk 10 · gold evidence: unknown · memory changed" in md
    assert "Gold evidence in:** unknown" in md
    assert "unknown" in render_html([study], "t")


def test_a_failed_sample_shows_the_chunks_it_never_read():
    record = prediction(
        failed=True, score=0.0, memory_trace=[{"chunk": 1, "memory": "m"}], n_chunks=3
    )
    study = case_study(record, chunks_with_gold(8, {6}))
    assert not study.notes  # fewer chunks read than the context has: expected when failed
    steps = [(s.first, s.last, s.read, s.gold) for s in study.steps()]
    assert steps == [
        (0, 0, True, False),
        (1, 1, True, False),
        (2, 2, True, False),
        (3, 5, False, False),
        (6, 6, False, True),
        (7, 7, False, False),
    ]
    md = render_markdown([study], "t")
    assert "sample 7 · failed (score 0.00)" in md
    assert "- chunks 3–5: not read (the sample failed before them)" in md
    assert "#### Chunk 6 · gold evidence: yes · not read" in md


def test_a_chunking_that_differs_from_the_runs_is_noted():
    study = case_study(traced_prediction(), chunks_with_gold(12, {10}))
    assert study.notes and "differ from the run's" in study.notes[0]
    assert "Note: the run read 60 chunks" in render_markdown([study], "t")


def test_write_report_writes_both_files_atomically(tmp_path):
    study = case_study(traced_prediction())
    md, page = write_report([study], tmp_path / "out" / "trace", "t")
    assert (md.name, page.name) == ("trace.md", "trace.html")
    assert sorted(p.name for p in md.parent.iterdir()) == ["trace.html", "trace.md"]
    empty = render_markdown([], "t")
    assert "No sample was selected." in empty and isinstance(CaseStudy(prediction()), CaseStudy)


# --- `memrepro trace` end to end ---------------------------------------------------------------


CORPUS = [
    "The director of the film is based in Greenwich Village, New York City.",
    "Ghost is a team based in New York. Paris is the capital of France.",
    "Document one two three four five six seven eight nine ten.",
] * 20


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    from memrepro.models.tiny import build_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    build_tokenizer(CORPUS, 400, 1 << 16).save_pretrained(out)
    return out


def test_cli_trace_end_to_end(tmp_path, tokenizer_dir, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    from memrepro import cli
    from memrepro.data.io import write_jsonl_atomic

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # no tracking in this test
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    pool = [f"Filler document number {i}, one two three four five." for i in range(6)]
    pool[2] = "Lyon Hall\nThe director was born at Lyon Hall."  # the bridge paragraph
    pool.append("Paris is the capital of France; the director lives in Paris.")
    pool_path = tmp_path / "pool_docs.parquet"
    pq.write_table(pa.table({"doc": pool, "tokens": [8] * len(pool)}), pool_path)
    questions_path = tmp_path / "pool_questions.parquet"
    questions = [  # sample 0's two hops: the bridge (doc 2) and the answer's paragraph (doc 6)
        {"index": i, "question": q, "answers": [a], "doc_ids": [2, 6], "gold_doc_ids": [[2], [6]]}
        for i, q, a in ((0, "Where?", "Paris"), (1, "Which?", "Rome"))
    ]
    pq.write_table(pa.Table.from_pylist(questions), questions_path)
    data = [
        {
            "index": 0,
            "input": "Where?",
            "answers": ["Paris"],
            "num_tokens": 0,
            "doc_ids": [0, 1, 2, 3, 6, 4, 5],
        },
        {
            "index": 1,
            "input": "Which?",
            "answers": ["Rome"],
            "num_tokens": 0,
            "context": "Ghost is a team based in New York. " * 6,
        },
    ]
    data_path = tmp_path / "hqa.jsonl"
    write_jsonl_atomic(data_path, data)
    agent = MemAgentConfig(chunk_tokens=16, memory_tokens=64, final_tokens=16)
    system = memagent_system(HQA, tokenizer, pool, agent)
    engine = NoteTakingEngine(tokenizer)
    predictions = evaluate(
        data, workflow_runner(HQA, system, engine, None), tmp_path / "p.partial", 2
    )
    predictions_path = tmp_path / "eval" / "50.predictions.jsonl"
    write_jsonl_atomic(predictions_path, [{"task": "hqa", **p} for p in predictions])
    chunks = list(row_chunks(data[0], pool, tokenizer, 16))
    gold = gold_chunks(chunks, ["Paris"])
    assert gold and predictions[0]["n_chunks"] == len(chunks)
    assert [e["chunk"] for e in predictions[0]["memory_trace"]] == gold

    settings = {
        "benchmark": "ruler_hqa",
        "system": "memagent-tiny",
        "length": 50,
        "tasks": ["hqa"],
        "agent": {"chunk_tokens": 16},
        "first": 5,
    }
    prefix = tmp_path / "report" / "trace" / "ruler_hqa-50"
    argv = ["trace", "--settings", json.dumps(settings), "--predictions", str(predictions_path)]
    rebuild = [
        "--data",
        str(data_path),
        "--pool",
        str(pool_path),
        "--tokenizer",
        str(tokenizer_dir),
    ]
    cli.main([*argv, *rebuild, "--out-prefix", str(prefix)])
    md = (prefix.parent / "ruler_hqa-50.md").read_text()
    page = (prefix.parent / "ruler_hqa-50.html").read_text()
    assert md.startswith("# MemAgent memory traces · ruler\\_hqa · memagent-tiny · 50\n")
    assert "## hqa · sample 0 · correct (score 1.00)" in md
    assert "## hqa · sample 1 · wrong (score 0.00)" in md
    assert f"#### Chunk {gold[0]} · gold evidence: yes · memory changed" in md
    assert f"- **Chunks:** {len(chunks)} of {len(chunks)} read" in md
    assert "Note:" not in md  # the rebuilt chunks are the run's
    assert "<mark>Paris</mark>" in page
    assert "Supporting paragraphs" not in md  # without the pool's questions

    cli.main(
        [*argv, *rebuild, "--pool-questions", str(questions_path), "--out-prefix", str(prefix)]
    )
    md = (prefix.parent / "ruler_hqa-50.md").read_text()
    [bridge] = [i for i, chunk in enumerate(chunks) if ":\nLyon Hall" in chunk]
    assert bridge not in gold
    assert f"**Supporting paragraphs:** Lyon Hall: chunk {bridge} (memory unchanged)" in md
    assert f"#### Chunk {bridge} · gold evidence: yes · memory unchanged" in md
    assert sorted(p.name for p in prefix.parent.iterdir()) == [
        "ruler_hqa-50.html",
        "ruler_hqa-50.md",
    ]

    # from the predictions alone: the chosen sample, its gold column unknown
    only = {**settings, "samples": [0], "title": "Appendix C"}
    argv = ["trace", "--settings", json.dumps(only), "--predictions", str(predictions_path)]
    cli.main([*argv, "--out-prefix", str(tmp_path / "alone")])
    md = (tmp_path / "alone.md").read_text()
    assert md.startswith("# Appendix C\n") and "sample 1" not in md
    assert re.search(r"#### Chunk \d+ · gold evidence: unknown · memory changed", md)

    # the paper's own sample asked for by its question: first when the set has it, else noted
    for question, first, noted in (
        ("which", "sample 1", False),
        ("Big Stone Gap", "sample 0", True),
    ):
        asked = {**settings, "question": question}
        argv = ["trace", "--settings", json.dumps(asked), "--predictions", str(predictions_path)]
        cli.main([*argv, "--out-prefix", str(tmp_path / "asked")])
        md = (tmp_path / "asked.md").read_text()
        assert md.split("## hqa · ")[1].startswith(first)
        assert ("no sample of this set asks about 'Big Stone Gap'" in md) is noted

    with pytest.raises(SystemExit, match="--data and --tokenizer go together"):
        cli.main([*argv, "--data", str(data_path), "--out-prefix", str(tmp_path / "x")])


def test_a_case_study_of_a_model_that_cannot_reproduce_opens_with_the_machinery_line():
    from memrepro.report.cells import machinery_line

    study = case_study(
        {"index": 0, "question": "q?", "answers": ["a"], "output": "a", "score": 1.0}, None
    )
    banner = machinery_line("these memories come from")
    md = render_markdown([study], "t", banner).splitlines()
    assert md[2] == f"> {banner}" and md[2].startswith("> Machinery check only: ")
    page = render_html([study], "t", banner)
    assert '<p class="banner">Machinery check only: ' in page
    assert "<code>reproduces: false</code>" in page and "`" not in page
    assert "Machinery" not in render_markdown([study], "t")  # a model that can: no line


def test_a_training_curve_says_whether_its_run_can_reproduce(repo):
    from memrepro import config as cfg

    smoke = cfg.load_config([repo / "config/smoke.yaml"])
    assert cfg.training_curve_settings(smoke, "rl-memagent-tiny")["machinery_only"] is True
    assert cfg.training_curve_settings(smoke, "memalpha-tiny-grpo")["curve"] == "memalpha"
    paper = cfg.load_config([repo / "config/config.yaml"])
    settings = cfg.training_curve_settings(paper, next(iter(cfg.memagent_runs(paper))))
    assert settings["machinery_only"] is False and settings["labels"] == ["stage I", "stage II"]


def test_the_papers_turn_counts_are_set_against_their_arithmetic():
    from memrepro.report.turns import paper_turns, turns

    assert turns(105) == 106
    niah, training = paper_turns()
    assert "105 memory updates and 106 turns" in niah and "holds counting with the answer" in niah
    # a 32K training context: 7 updates, 8 turns with the answer: "5 to 7" counts updates alone
    assert "7 memory updates and 8 turns" in training and training.endswith("updates alone.")
    assert "holds in no reading" in paper_turns(chunk_tokens=1000)[1]  # 33 updates


def test_a_case_study_gives_its_samples_turns_and_the_papers():
    from memrepro.report.trace import case_study, render_html, render_markdown

    prediction = {
        "index": 0,
        "input": "Q?",
        "answers": ["Paris"],
        "pred": "Paris",
        "score": 1.0,
        "memory_trace": [{"chunk": 1, "memory": "Paris."}],
        "n_chunks": 3,
    }
    study = case_study(prediction)
    markdown = render_markdown([study], "Case studies")
    assert "- **Turns:** 4: 3 memory updates, then the answer" in markdown
    assert "The papers' turn counts:" in markdown and "more than 100 turns at 512K" in markdown
    assert "<dt>Turns</dt><dd>4: 3 memory updates, then the answer</dd>" in render_html(
        [study], "Case studies"
    )
