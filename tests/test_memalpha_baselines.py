"""Mem-α's baselines on its benchmarks: the context prompts, RAG-Top2's retrieval, MemAgent's
memory loop and answers, MEM1's summary loop, and their records through the shared QA runner."""

from __future__ import annotations

import pytest
from memalpha_fakes import Replying, RuleQA, WordTokenizer

from memrepro.agents.retrieval import BM25Retriever
from memrepro.baselines.context_qa import context_request, system_prompt, tail, user_message
from memrepro.engines.base import Completion, SamplingParams, prompt_ids
from memrepro.evaluation import (
    Judge,
    Question,
    context_questions,
    evaluate,
    instance_qa_runner,
    summarize,
)
from memrepro.systems.mem1 import mem1_memorize_runner, memory_context_questions
from memrepro.systems.memagent import answered_questions, memagent_memorize_runner

# --- prompts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "start"),
    [
        ("booksum", "You are a helpful assistant with access to comprehensive book"),
        ("infbench_sum_eng_shots2", "You are a helpful assistant with access to comprehensive"),
        ("icl_nlu_8296shot_balance", "You are a helpful assistant specialized in test-time"),
        ("pubmed-rct", "You are a helpful assistant specialized in test-time"),
        ("longmemeval_s*", "You are a helpful assistant with access to personalized"),
        ("lme_train", "You are a helpful assistant with access to personalized"),
        ("squad", "You are a helpful assistant. Answer the question as accurately"),
        ("ruler_qa1_197K", "You are a helpful assistant. Answer the question as accurately"),
    ],
)
def test_system_prompt_per_source_follows_the_official_rules(source, start):
    assert system_prompt(source).startswith(start)


def test_user_message_joins_prompt_context_and_question_with_blank_lines():
    assert user_message("Task.", ["c1", "c2"], "Q?") == "Task.\n\nc1\n\nc2\n\nQ?"
    assert user_message("Task.", "memory text", "Q?") == "Task.\n\nmemory text\n\nQ?"


def test_bm25_over_chunks_ranks_the_raw_question_best_first_as_rag_top2_does():
    chunks = ["the cat sat", "dogs bark loudly", "a dog and a cat", "nothing here"]
    bm25 = BM25Retriever()
    assert bm25.top_k("Which dogs bark?", chunks, 2)[0] == 1
    assert bm25.top_k("   ", chunks, 2) == [0, 1]  # no query: the first k, as officially
    assert bm25.top_k("zebra", chunks, 2) == [0, 1]  # all scores tie: chunk order


def test_a_question_is_exactly_one_of_request_response_error():
    with pytest.raises(ValueError, match="exactly one"):
        Question()
    with pytest.raises(ValueError, match="exactly one"):
        Question(response="a", error="b")


def test_context_request_left_truncates_the_user_message_to_fit_the_cap():
    tokenizer = WordTokenizer()
    chunks = [f"w{i}" for i in range(50)]
    request = context_request(tokenizer, "squad", "Task here.", chunks, "Who?", 40, 7)
    system, user = request.messages
    assert system == {"role": "system", "content": system_prompt("squad")}
    assert len(prompt_ids(tokenizer, request)) == 40  # fits exactly: the oldest words went first
    assert user["content"].endswith("w48 w49 Who?") and "Task" not in user["content"]
    assert request.max_tokens == 7 and request.enable_thinking is None  # Qwen3's default
    short = context_request(tokenizer, "pubmed-rct", "T.", ["x"], "Sentence: s", 1000, 7)
    # the query prompt of the source is prepended to the question
    assert short.messages[1]["content"].startswith("T.\n\nx\n\nYour core memory is used")
    with pytest.raises(ValueError, match="system prompt alone"):
        context_request(tokenizer, "squad", "T.", ["x"], "Q?", 5, 7)


def test_tail_keeps_the_last_tokens_of_the_joined_context():
    assert tail(WordTokenizer(), ["a b", "c d e"], 3) == "c d e"
    assert tail(WordTokenizer(), ["a b"], 3) == "a b"


# --- runners -----------------------------------------------------------------------------------


ROWS = [
    {
        "index": 0,
        "task": "ruler_qa1_197K",
        "prompt": "Read.",
        "chunks": ["Paris is in France", "Berlin is in Germany", "Rome is in Italy"],
        "questions": ["Where is Berlin?", "Where is Rome?"],
        "answers": [["Germany"], ["Italy"]],
        "num_tokens": 12,
    },
    {
        "index": 1,
        "task": "longmemeval_s*",
        "prompt": "Chat.",
        "chunks": ["I bought rugs"],
        "questions": ["What did I buy?"],
        "answers": ["rugs"],
        "num_tokens": 3,
    },
]


def judge() -> Judge:
    return Judge(SamplingParams(0.6, 0.95), 8)


def test_rag_top2_asks_each_question_over_its_own_chunks_and_reports_the_context_size(tmp_path):
    def reply(text):  # answers with the first country in the prompt: right iff retrieved first
        for country in ("Germany", "Italy", "France"):
            if country in text:
                return f"It is in {country.lower()}."
        return "rugs"

    engine = RuleQA(reply)
    runner = instance_qa_runner(
        engine,
        SamplingParams(0.1, 1.0),
        judge(),
        context_questions(engine, cap=100, max_tokens=9, retriever=BM25Retriever(), top_k=1),
        "baseline",
    )
    records = evaluate(ROWS, runner, tmp_path / "p.jsonl", batch_size=2)
    # RULER under the baselines' protocol: lower-cased containment of the first gold
    assert [r["scores"] for r in records] == [[1.0, 1.0], [1.0]]
    assert records[0]["memory_tokens"] == 12  # the whole context, not the retrieved chunk
    berlin = engine.requests[0].messages[1]["content"]
    assert berlin == "Read.\n\nBerlin is in Germany\n\nWhere is Berlin?"
    assert records[0]["n_calls"] == 2 and records[1]["n_calls"] == 2  # answer + judge
    assert summarize(records, "mab", "x", "rag", 0)["mean_memory_tokens"] == pytest.approx(7.5)


def test_baseline_protocol_scores_ruler_by_containment_of_the_first_gold():
    from memrepro.scoring.memalpha import score_answer

    # normalised substring EM (agent protocol) drops punctuation; plain containment does not
    assert score_answer("ruler_qa1_197K", "U.S.A", ["USA"], "agent") == 1.0
    assert score_answer("ruler_qa1_197K", "U.S.A", ["USA"], "baseline") == 0.0
    assert score_answer("ruler_qa2_421K", "in the usa", ["USA", "x"], "baseline") == 1.0
    assert score_answer("ruler_qa2_421K", "x", ["USA", "x"], "baseline") == 0.0  # gold[0] only
    assert score_answer("squad", "Paris!", ["paris"], "baseline") == 1.0
    with pytest.raises(ValueError, match="protocol"):
        score_answer("squad", "a", ["a"], "other")


def test_long_context_reads_the_tail_of_every_chunk_under_its_cap(tmp_path):
    engine = RuleQA(lambda text: "Germany")
    runner = instance_qa_runner(
        engine,
        SamplingParams(0.1, 1.0),
        judge(),
        context_questions(engine, cap=40, max_tokens=9),
        "baseline",
    )
    records = evaluate(ROWS[:1], runner, tmp_path / "p.jsonl", batch_size=1)
    assert records[0]["scores"] == [1.0, 0.0]
    assert records[0]["memory_tokens"] == 12  # min(context, cap)
    for request in engine.requests:
        assert len(prompt_ids(WordTokenizer(), request)) <= 40
        assert "Rome is in Italy" in request.messages[1]["content"]
        assert not request.messages[1]["content"].startswith("Read.")  # cut from the left


def test_memagent_memorises_with_the_task_prompt_then_answers_in_boxed(tmp_path):
    engine = Replying(["memory after chunk 1", "final memory", "\\boxed{rugs}"])
    row = {**ROWS[1], "chunks": ["I bought rugs", "and a lamp"]}
    runner = memagent_memorize_runner(engine, SamplingParams(0.1, 0.95), 16, 8)
    [memorized] = evaluate([row], runner, tmp_path / "m.jsonl", batch_size=1)
    assert memorized["memory"] == "final memory" and memorized["n_calls"] == 3
    assert memorized["responses"] == {"0": "\\boxed{rugs}"} and not memorized["failed"]
    first, second, final = (r.messages[0]["content"] for r in engine.requests)
    assert "<problem> \nChat.\n</problem>" in first and "I bought rugs" in first
    assert "memory after chunk 1" in second
    assert "\\boxed{}" in final and "What did I buy?" in final and "final memory" in final
    assert [r.max_tokens for r in engine.requests] == [16, 16, 8]

    qa = RuleQA(lambda text: "unused")
    scorer = instance_qa_runner(
        qa, SamplingParams(0.6, 0.95), judge(), answered_questions(qa), "baseline"
    )
    [record] = evaluate(
        [{**row, "memorized": memorized}], scorer, tmp_path / "q.jsonl", batch_size=1
    )
    assert record["scores"] == [1.0] and record["memory_tokens"] == 2
    assert len(qa.requests) == 1 and qa.requests[0].messages[0]["content"].startswith("I will")
    assert record["n_calls"] == 4  # three MemAgent calls and the judge


def test_a_question_aware_memagent_writes_a_memory_per_question_then_answers_over_it(tmp_path):
    """MemAgent's own protocol on an instance: a memory loop per question, written for it (the
    question as the problem), each question answered over its own memory; the memory measured
    as the mean over the questions'."""
    replies = {"What did I buy?": "rugs bought", "Where?": "no place said"}

    def reply(text: str) -> str:
        if "\\boxed{}" in text:
            return "\\boxed{rugs}" if "rugs bought" in text else "\\boxed{home}"
        return next(memory for q, memory in replies.items() if q in text)

    engine = RuleQA(reply)
    row = {
        **ROWS[0],
        "prompt": "TASK-DESCRIPTION",
        "chunks": ["I bought rugs", "and a lamp"],
        "questions": ["What did I buy?", "Where?"],
        "answers": [["rugs"], ["nowhere"]],
    }
    runner = memagent_memorize_runner(engine, SamplingParams(0.1, 0.95), 16, 8, True)
    [memorized] = evaluate([row], runner, tmp_path / "m.jsonl", batch_size=1)
    assert memorized["n_calls"] == 2 * 2 + 2  # two chunks per question's loop, two answers
    assert memorized["memories"] == {"0": "rugs bought", "1": "no place said"}
    assert memorized["responses"] == {"0": "\\boxed{rugs}", "1": "\\boxed{home}"}
    updates = [
        r.messages[0]["content"]
        for r in engine.requests
        if "\\boxed{}" not in r.messages[0]["content"]
    ]
    assert len(updates) == 4 and all("TASK-DESCRIPTION" not in u for u in updates)
    assert sum("What did I buy?" in u for u in updates) == 2
    qa = RuleQA(lambda text: "unused")
    scorer = instance_qa_runner(
        qa, SamplingParams(0.6, 0.95), judge(), answered_questions(qa), "baseline"
    )
    [record] = evaluate(
        [{**row, "memorized": memorized}], scorer, tmp_path / "q.jsonl", batch_size=1
    )
    assert record["scores"] == [1.0, 0.0] and record["memory_tokens"] == 2  # (2 + 3) / 2, a count


def test_a_question_whose_own_memory_failed_has_that_error_and_the_rest_answer(tmp_path):
    def reply(text: str) -> Completion | str:
        if "\\boxed{}" in text:
            return "\\boxed{rugs}"
        return Completion("", error="HTTP 500") if "Where?" in text else "rugs bought"

    row = {**ROWS[0], "questions": ["What did I buy?", "Where?"], "answers": [["rugs"], ["x"]]}
    runner = memagent_memorize_runner(RuleQA(reply), SamplingParams(0.1, 0.95), 16, 8, True)
    [memorized] = evaluate([row], runner, tmp_path / "m.jsonl", batch_size=1)
    assert not memorized["failed"] and memorized["responses"] == {"0": "\\boxed{rugs}"}
    assert memorized["question_errors"] == {"1": "HTTP 500"}


def test_a_failed_memagent_memory_fails_the_instance(tmp_path):
    broken = RuleQA(lambda text: Completion("", error="HTTP 500"))
    runner = memagent_memorize_runner(broken, SamplingParams(0.1, 0.95), 16, 8)
    [memorized] = evaluate(ROWS[1:], runner, tmp_path / "m.jsonl", batch_size=1)
    assert memorized["failed"] and memorized["error"] == "HTTP 500"
    assert memorized["responses"] == {}
    qa = RuleQA(lambda text: "x")
    scorer = instance_qa_runner(
        qa, SamplingParams(0.6, 0.95), judge(), answered_questions(qa), "baseline"
    )
    [record] = evaluate(
        [{**ROWS[1], "memorized": memorized}], scorer, tmp_path / "q.jsonl", batch_size=1
    )
    assert record["failed"] and record["score"] == 0.0 and qa.requests == []


# --- MEM1 --------------------------------------------------------------------------------------


def test_think_state_is_the_first_think_block_stripped_inside():
    from memrepro.agents.mem1 import think_state

    assert think_state("x <think>\n a \n</think> <think>b</think>") == "<think>a</think>"
    assert think_state("no block") is None
    assert think_state("</think> then <think>open") is None  # no complete block


def test_mem1_continues_its_memory_per_chunk_and_keeps_it_without_a_new_one(tmp_path):
    from memrepro.agents.mem1 import MEM1_INSTRUCTION, NEW_CONTEXT

    engine = Replying(
        [
            "reasoning <think> Paris: France </think><search>q</search>",
            "nothing to add",  # no think block: the memory stays
            "<think>Paris: France; Rome: Italy</think><answer>x</answer>",
        ]
    )
    runner = mem1_memorize_runner(engine, SamplingParams(0.01, 0.95), 32)
    [memorized] = evaluate(ROWS[:1], runner, tmp_path / "m.jsonl", batch_size=1)
    assert memorized["memory"] == "<think>Paris: France; Rome: Italy</think>"
    assert memorized["n_calls"] == 3 and not memorized["failed"]
    first, second, third = engine.requests
    instruction = MEM1_INSTRUCTION.format(task="Read.") + NEW_CONTEXT
    assert first.messages == ({"role": "user", "content": instruction + "Paris is in France"},)
    assert not first.continue_final  # no memory yet: a plain new assistant turn
    for request in (second, third):  # the memory so far, prefilled and continued
        assert request.continue_final and request.max_tokens == 32
        assert request.messages[1] == {
            "role": "assistant",
            "content": "<think>Paris: France</think>",
        }
    assert third.messages[0]["content"] == instruction + "Rome is in Italy"


def test_mem1_memory_is_the_context_of_the_long_context_prompt(tmp_path):
    qa = RuleQA(lambda text: "germany" if "Germany" in text else "unknown")
    memorized = {"memory": "<think>Berlin: Germany</think>", "n_calls": 3, "failed": False}
    runner = instance_qa_runner(
        qa, SamplingParams(0.1, 1.0), judge(), memory_context_questions(qa, 100, 9), "baseline"
    )
    [record] = evaluate(
        [{**ROWS[0], "memorized": memorized}], runner, tmp_path / "q.jsonl", batch_size=1
    )
    assert record["scores"] == [1.0, 0.0]
    assert record["memory_tokens"] == 2  # the memory, tags and all, in the QA model's tokens
    assert record["n_calls"] == 5  # three MEM1 steps, two answers
    ask = qa.requests[0]
    assert (
        ask.messages[1]["content"] == "Read.\n\n<think>Berlin: Germany</think>\n\nWhere is Berlin?"
    )
    assert ask.max_tokens == 9 and ask.messages[0]["role"] == "system"

    failed = {"memory": "", "n_calls": 1, "failed": True, "error": "HTTP 500"}
    [record] = evaluate(
        [{**ROWS[0], "memorized": failed}], runner, tmp_path / "r.jsonl", batch_size=1
    )
    assert record["failed"] and record["score"] == 0.0 and record["error"] == "HTTP 500"


def test_source_statistics_counts_instances_chunks_tokens_and_questions():
    from memrepro.data.memalpha import source_statistics

    grouped = {
        "squad": [
            {"chunks": ["a b", "c d e f"], "questions": ["q1", "q2", "q3"]},
            {"chunks": ["g h i"], "questions": ["q4"]},
        ],
        "booksum": [{"chunks": ["x"], "questions": ["summarise"]}],
    }

    def count(texts):
        return [len(t.split()) for t in texts]

    assert source_statistics(grouped, count) == [
        {
            "task": "squad",
            "instances": 2,
            "chunks_per_instance": 1.5,
            "tokens_per_chunk": 3.0,  # (2 + 4 + 3) / 3 chunks
            "questions_per_instance": 2.0,
        },
        {
            "task": "booksum",
            "instances": 1,
            "chunks_per_instance": 1.0,
            "tokens_per_chunk": 1.0,
            "questions_per_instance": 1.0,
        },
    ]


class CharTokenizer:
    """One token per character (decode joins them back): chunk boundaries are easy to count."""

    def encode(self, text, add_special_tokens=False):
        return list(text)

    def decode(self, ids, skip_special_tokens=False):
        return "".join(ids)


def test_ruler_hqa_samples_become_instances_chunked_in_the_policys_tokens(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from memrepro.benchmarks.ruler_hqa import instance_rows
    from memrepro.data.io import write_jsonl_atomic

    pool = tmp_path / "pool_docs.parquet"
    pq.write_table(pa.table({"doc": ["Ada was born in Caldre.", "Varn has a port."]}), pool)
    data = tmp_path / "eval_2.jsonl"
    rows = [
        {
            "index": 0,
            "input": "Where was Ada born?",
            "answers": ["Caldre"],
            "num_tokens": 9,
            "doc_ids": [1, 0],
        },
        {
            "index": 1,
            "input": "What has Varn?",
            "answers": ["a port"],
            "num_tokens": 4,
            "context": "Varn has a port.",
        },
    ]
    write_jsonl_atomic(data, rows)
    spec = {"source": "ruler_qa2_421K", "chunk_tokens": 16, "prompt": "Remember."}
    settings = {"benchmark": "ruler_hqa", "ruler_hqa": spec}
    first, second = instance_rows(settings, CharTokenizer(), pool)("hqa", data)
    context = "Document 1:\nVarn has a port.\n\nDocument 2:\nAda was born in Caldre."
    assert "".join(first["chunks"]) == context and {len(c) for c in first["chunks"][:-1]} == {16}
    assert first["questions"] == ["Where was Ada born?"] and first["answers"] == [["Caldre"]]
    assert (first["task"], first["prompt"], first["num_tokens"]) == (
        "ruler_qa2_421K",
        "Remember.",
        9,
    )
    assert second["chunks"] == ["Varn has a port."]
    with pytest.raises(SystemExit, match="pass --pool"):
        instance_rows(settings, CharTokenizer(), None)("hqa", data)
