"""The Mem-α workflows: memorising through tool calls (official prompts, one generation per
chunk, the visible-item window and the training prompt cap) and the frozen QA step (BM25 per
store, the memory server's prompt, the 30K cap)."""

from __future__ import annotations

import json

import pytest
from memalpha_fakes import Replying, RuleQA, call, words

from memrepro.agents.driver import run_batched
from memrepro.agents.memalpha import (
    MEMORIZE_USER_TEMPLATE,
    ChunkStep,
    MemAlphaConfig,
    QAPromptTooLong,
    answer,
    cut_response,
    kept_token_count,
    memorize,
    memorize_system_prompt,
    qa_request,
    qa_system_prompt,
    retrieve,
)
from memrepro.agents.structured_memory import TRUNCATION_SUFFIX, StructuredMemory
from memrepro.engines.base import Completion, SamplingParams
from memrepro.evaluation import (
    Judge,
    MemoryQA,
    check_failures,
    evaluate,
    requests_digest,
    summarize,
)
from memrepro.systems.memalpha import memorize_runner, memory_qa_runner


def test_memorize_drives_insert_update_delete_over_chunks_to_an_exact_final_memory():
    memory = StructuredMemory(words, seed=7)
    ids = StructuredMemory(words, seed=7)  # the same id stream, to name ids before they exist
    first, second, third = (ids._new_id() for _ in range(3))
    script = [
        # chunk 1: two parallel inserts and a core write, then a hallucinated result (ignored)
        "I will store this.\n"
        + call("new_memory_insert", memory_type="semantic_memory", content="Paris is in France")
        + call("new_memory_insert", memory_type="episodic_memory", content="At t1, user ran")
        + call("memory_update", memory_type="core_memory", new_content="User likes maps")
        + "✿RESULT✿: ok",
        # chunk 2: update the semantic item, a duplicate insert (skipped), a bad update
        call(
            "memory_update",
            memory_type="semantic_memory",
            memory_id=first,
            new_content="Paris is the capital of France",
        )
        + call("new_memory_insert", memory_type="episodic_memory", content="At t1, user ran")
        + call("memory_update", memory_type="semantic_memory", memory_id="zzzz", new_content="x"),
        # chunk 3: delete the episodic item, a missing delete (ok), a new insert, then "Done"
        call("memory_delete", memory_type="episodic_memory", memory_id=second)
        + call("memory_delete", memory_type="semantic", memory_id="beef")
        + call("new_memory_insert", memory_type="episodic_memory", content="At t3, user slept"),
        "Done",
    ]
    engine = Replying(script)
    trace = []
    workflow = memorize(["c1", "c2", "c3", "c4"], memory, MemAlphaConfig(), trace)
    [rollout] = run_batched([workflow], engine, SamplingParams(0.0, 1.0))

    assert memory.snapshot() == {
        "core": "User likes maps",
        "semantic": [{first: "Paris is the capital of France"}],
        "episodic": [{third: "At t3, user slept"}],
    }
    assert json.loads(rollout.answer) == memory.snapshot()
    assert [[r.succeeded for r in step.results] for step in trace] == [
        [True, True, True],
        [True, False, False],  # the duplicate is `skipped` (executed, not a success)
        [True, True, True],
        [],
    ]
    assert trace[1].results[1].ok and "skipped" in trace[1].results[1].message
    assert "Invalid argument value" in trace[1].results[2].message
    assert trace[3].response == "Done" and trace[3].calls == []
    # one generation per chunk, [system, user] only, greedy budget of the official eval
    assert len(engine.requests) == 4
    assert all(len(r.messages) == 2 and r.max_tokens == 2048 for r in engine.requests)
    assert all(r.enable_thinking is False for r in engine.requests)
    # the memory each chunk sees is the state after the previous chunk
    second_system = engine.requests[1].messages[0]["content"]
    assert f"[{first}] Paris is in France" in second_system
    assert "<core_memory>\nUser likes maps\n</core_memory>" in second_system
    assert engine.requests[0].messages[1]["content"] == MEMORIZE_USER_TEMPLATE.format(
        context="c1", max_new_tokens=1638
    )


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("no tags, no results", "no tags, no results"),
        ("a ✿FUNCTION✿: x ✿RESULT✿: made up ✿FUNCTION✿: y", "a ✿FUNCTION✿: x"),
        ("x</memory_update> y</memory_insert> z", "x</memory_update> y</memory_insert>"),
        ("x</memory_delete> y</memory_update> z", "x</memory_delete> y</memory_update>"),
        ("a ✿RESULT✿: r </done> b", "a"),  # the tag cut first, then the result cut
        ("a </done> b ✿RESULT✿: r", "a </done>"),
    ],
)
def test_training_cuts_a_response_at_closing_tags_then_at_a_made_up_result(text, kept):
    assert cut_response(text) == kept


def test_training_executes_no_call_after_a_made_up_result_and_trains_on_the_kept_tokens():
    reply = (
        call("new_memory_insert", memory_type="semantic_memory", content="kept")
        + "✿RESULT✿: ok\n"
        + call("new_memory_insert", memory_type="semantic_memory", content="dropped")
    )
    outcomes = {}
    for cut in (False, True):
        memory, trace = StructuredMemory(words), []
        workflow = memorize(["c1"], memory, MemAlphaConfig(cut_responses=cut), trace)
        run_batched([workflow], Replying([reply]), SamplingParams(0.0, 1.0))
        outcomes[cut] = ([c for _, c in memory.semantic], len(trace[0].results), trace[0].cut)
    assert outcomes == {False: (["kept", "dropped"], 2, False), True: (["kept"], 1, True)}

    class Characters:  # one token per character; "<eos>" is special
        def decode(self, ids, skip_special_tokens=False):
            return "".join(i for i in ids if not (skip_special_tokens and i == "<eos>"))

    ids = [" ", *reply, "<eos>"]
    cut = ChunkStep(cut_response(reply.strip()), cut=True)
    assert kept_token_count(Characters(), ids, cut) == 1 + len(cut.response)  # the space too
    assert kept_token_count(Characters(), ids, ChunkStep(reply.strip())) == len(ids)


def test_memorize_system_prompt_shows_core_in_full_and_the_last_items_with_ids():
    memory = StructuredMemory(words, seed=0)
    for n in range(7):
        memory.insert("semantic_memory", f"fact {n}")
    prompt = memorize_system_prompt(memory, visible_items=5)
    assert prompt.startswith("You are a personal assistant with a sophisticated memory system.")
    assert "<core_memory>\n\n</core_memory>" in prompt
    assert "<semantic_memory> (Only show the most recent 5 out of 7 memories)" in prompt
    assert "fact 1" not in prompt and all(f"fact {n}" in prompt for n in range(2, 7))
    assert "<episodic_memory> (Only show the most recent 0 out of 0 memories)\nEmpty." in prompt
    assert "make sure to call all the memory insertion functions in one turn.\n\n# Tools" in prompt
    hidden = memorize_system_prompt(memory, visible_items=0)
    assert "(Only show the most recent 0 out of 7 memories)\nEmpty." in hidden


def test_memorize_prompt_of_a_store_ablation_drops_its_cue_state_and_enum():
    memory = StructuredMemory(words, disabled=frozenset({"core", "episodic"}))
    prompt = memorize_system_prompt(memory, 5)
    assert "core_memory" not in prompt.split("# Tools")[0]
    assert "* semantic_memory:" in prompt and "* episodic_memory:" not in prompt
    assert '"enum": ["semantic_memory"]' in prompt


def test_training_prompt_cap_halves_the_visible_items_until_the_prompt_fits():
    memory = StructuredMemory(words, seed=0)
    for n in range(6):
        memory.insert("episodic_memory", " ".join(["event"] * 50) + str(n))
    size = lambda request: words(request.messages[0]["content"])  # noqa: E731
    full = size(next(memorize(["c"], memory, MemAlphaConfig())))
    sizes = {}
    for visible in (5, 2, 1, 0):
        request = next(memorize(["c"], memory, MemAlphaConfig(visible_items=visible)))
        sizes[visible] = size(request)
    config = MemAlphaConfig(prompt_cap=sizes[1])
    trace = []
    workflow = memorize(["c"], memory, config, trace, prompt_tokens=size)
    request = next(workflow)
    assert size(request) == sizes[1] < full
    with pytest.raises(StopIteration):
        workflow.send(Completion("Done"))
    assert trace[0].visible_items == 1
    with pytest.raises(ValueError, match="needs `prompt_tokens`"):
        next(memorize(["c"], memory, config))  # a cap is never silently ignored
    with pytest.raises(ValueError, match="even with no memory items shown"):
        next(memorize(["c"], memory, MemAlphaConfig(prompt_cap=sizes[0] - 1), None, size))


def test_core_updates_beyond_512_tokens_are_cut_with_the_official_suffix():
    memory = StructuredMemory(words)
    engine = Replying(
        [call("memory_update", memory_type="core_memory", new_content=" ".join(["w"] * 600))]
    )
    run_batched([memorize(["c"], memory, MemAlphaConfig())], engine, SamplingParams())
    assert memory.core.endswith(TRUNCATION_SUFFIX) and words(memory.core) == 512


# --- the QA step ---------------------------------------------------------------------------------


def qa_memory() -> StructuredMemory:
    memory = StructuredMemory(words, seed=1, core="The user is Ann.")
    for text in ("Ann owns a red bike", "Bob owns a blue car", "Ann likes tea"):
        memory.insert("semantic_memory", text)
    memory.insert("episodic_memory", "At 9am Ann rode the bike")
    return memory


def test_retrieve_ranks_each_store_by_bm25_and_an_empty_query_retrieves_nothing():
    memory = qa_memory()
    view = retrieve(memory, "Who has the red bike?", top_k=1)  # "red" is in one item only
    assert view == {"semantic": ["Ann owns a red bike"], "episodic": ["At 9am Ann rode the bike"]}
    unmatched = retrieve(memory, "zebra", top_k=2)  # all scores 0: store order
    assert unmatched["semantic"] == ["Ann owns a red bike", "Bob owns a blue car"]
    assert retrieve(memory, "?!", top_k=2) == {"semantic": [], "episodic": []}
    # a store without a word character: officially BM25's zero mean length kills the request
    wordless = StructuredMemory(words)
    wordless.insert("semantic_memory", "!!!")
    wordless.insert("semantic_memory", "...")
    assert retrieve(wordless, "Ann", top_k=2) == {"semantic": ["!!!", "..."], "episodic": []}


def test_qa_system_prompt_renders_core_then_numbered_items_without_ids():
    prompt = qa_system_prompt("Core text", {"semantic": ["a", "b"], "episodic": []})
    assert prompt.startswith("You are a reasoning assistant with access to structured memory.")
    assert "MEMORY STRUCTURE:\n- Core Memory: Fundamental facts about the user" in prompt
    assert "<core_memory>\nCore text\n</core_memory>\n\n<semantic_memory>\n1. a\n2. b\n" in prompt
    assert "<episodic_memory>\n(No memories stored)\n</episodic_memory>" in prompt
    assert prompt.endswith("- Be concise but comprehensive in your answers")
    without_core = qa_system_prompt("  ", {"semantic": [], "episodic": []})
    assert "- Core Memory" not in without_core and "<core_memory>" not in without_core


def test_qa_request_shrinks_top_k_below_the_cap_then_fails_clearly():
    memory = qa_memory()
    request = qa_request(memory, "Ann", words, top_k=3, cap=10**6)
    system, user = request.messages
    assert user == {"role": "user", "content": "Ann"} and request.enable_thinking is False
    assert "3. Bob owns a blue car" in system["content"]
    full = words(system["content"])
    # strictly below: at exactly the cap the official server's assertion fails the batch
    smaller = qa_request(memory, "Ann", words, top_k=3, cap=full)
    assert "3. " not in smaller.messages[0]["content"]
    with pytest.raises(QAPromptTooLong):
        qa_request(memory, "Ann", words, top_k=3, cap=5)
    engine = Replying(["Ann owns a red bike."])
    [rollout] = run_batched([answer(request)], engine, SamplingParams(0.7, 1.0))
    assert rollout.answer == "Ann owns a red bike." and engine.requests == [request]


# --- evaluation: memorise, then answer, judge and score per source --------------------------------


def test_memorize_then_memory_qa_scores_each_source_and_counts_failures(tmp_path):
    rows = [
        {
            "index": 0,
            "task": "squad",
            "chunks": ["c1", "c2"],
            "questions": ["Who built it?", "boom"],
            "answers": ["Ilse Brand", "x"],
        },
        {
            "index": 1,
            "task": "pubmed-rct",
            "chunks": ["c1"],
            "questions": ["Sentence: s\nWhat label?"],
            "answers": ["2"],
        },
        {
            "index": 2,
            "task": "longmemeval_s*",
            "chunks": ["c1"],
            "questions": ["What did I buy?"],
            "answers": ["rugs"],
        },
    ]
    policy = Replying(  # the first engine call carries every instance's first chunk
        [
            call("new_memory_insert", memory_type="semantic_memory", content="Ilse Brand built it"),
            call("new_memory_insert", memory_type="semantic_memory", content="label two: results"),
            call("memory_update", memory_type="core_memory", new_content="bought rugs"),
            "Done",
        ]
    )
    runner = memorize_runner(
        MemAlphaConfig(max_new_tokens=16),
        policy,
        SamplingParams(0.0, 1.0),
        lambda row: StructuredMemory(words, seed=row["index"]),
    )
    memorized = evaluate(rows, runner, tmp_path / "memories.jsonl", batch_size=3)
    assert [m["tool_calls"] for m in memorized] == [1, 1, 1]
    assert list(memorized[0]["memory"]["semantic"][0].values()) == ["Ilse Brand built it"]
    assert memorized[0]["steps"][1]["response"] == "Done" and memorized[0]["n_calls"] == 2

    answers = {
        "Who built it?": "Ilse Brand did.",
        "What label?": "\\boxed{2}",
        "What did I buy?": "Rugs.",
    }

    def reply(text):  # by the question (the message's last line); "boom" fails
        if text.endswith("boom"):
            return Completion("", error="HTTP 500")
        return answers[text.splitlines()[-1]]

    qa_engine = RuleQA(reply)
    qa = MemoryQA(SamplingParams(0.7, 1.0), 20, 30000, 16)
    judge = Judge(SamplingParams(0.6, 0.95), 8)
    by_index = {m["index"]: m for m in memorized}
    answered = evaluate(
        [{**row, "memorized": by_index[row["index"]], "num_tokens": 5} for row in rows],
        memory_qa_runner(qa_engine, qa, judge),
        tmp_path / "qa.jsonl",
        batch_size=3,
    )
    assert [r["scores"] for r in answered] == [[1.0, 0.0], [1.0], [1.0]]
    assert answered[0]["score"] == 0.5 and answered[0]["failed_questions"] == 1
    assert answered[0]["question_errors"] == {"1": "HTTP 500"}
    # a failed QA request fails its instance, as a failed MemAgent request fails its sample
    assert [r["failed"] for r in answered] == [True, False, False]
    assert answered[0]["error"] == "1 of 2 questions failed; the first: HTTP 500"
    assert answered[0]["memory_tokens"] == 4  # "Ilse Brand built it", counted by the QA tokenizer
    # the pubmed question carries the source's query prompt, which is also the BM25 query
    pubmed = next(r for r in qa_engine.requests if r.messages[-1]["content"].endswith("label?"))
    assert pubmed.messages[-1]["content"].startswith("Your core memory is used to store")
    judged = [r for r in qa_engine.requests if r.messages[0]["content"].startswith("I will give")]
    assert len(judged) == 1 and "Rubric: rugs" in judged[0].messages[0]["content"]
    assert judged[0].max_tokens == 8 and judged[0].enable_thinking is False
    # the prompt digests are the questions' requests (the judge's are not the system's)
    (label,) = [r for r in answered if r["questions"][0].endswith("What label?")]
    assert label["prompt_sha256"] == label["prompts_sha256"] == requests_digest([pubmed])
    assert [r["num_tokens"] for r in answered] == [5, 5, 5]
    summary = summarize(answered, "mab", "all", "memalpha", 0)
    assert summary["accuracy"] == pytest.approx(100 * (0.5 + 1 + 1) / 3)
    assert (summary["n_failed"], summary["accuracy_official"]) == (1, 100.0)
    assert summary["mean_memory_tokens"] == pytest.approx((4 + 3 + 2) / 3)
    with pytest.raises(SystemExit, match="1 of 3 samples failed"):
        check_failures(answered, 0.0, "memalpha on mab/all")
    # a rerun asks only the failed instance again
    healthy = RuleQA(lambda text: "x" if text.endswith("boom") else answers[text.splitlines()[-1]])
    rerun = evaluate(
        [{**row, "memorized": by_index[row["index"]], "num_tokens": 5} for row in rows],
        memory_qa_runner(healthy, qa, judge),
        tmp_path / "qa.jsonl",
        batch_size=3,
    )
    assert not any(r["failed"] for r in rerun) and len(healthy.requests) == 2


@pytest.mark.parametrize("status", ["HTTP 500", "HTTP 401", "timed out after 30 s"])
def test_an_endpoint_that_never_answers_fails_the_job_instead_of_scoring_zero(tmp_path, status):
    """Memories written against a healthy endpoint, QA against a dead one: every instance
    fails and the job stops naming the cause; nothing reads as accuracy 0.0."""
    memory = StructuredMemory(words, seed=0)
    memory.insert("semantic", "Ilse Brand built it")
    rows = [
        {
            "index": i,
            "task": "squad",
            "questions": ["Who built it?"],
            "answers": [["Ilse Brand"]],
            "num_tokens": 5,
            "memorized": {"memory": memory.snapshot(), "failed": False, "error": None},
        }
        for i in range(3)
    ]
    dead = RuleQA(lambda text: Completion("", error=status))
    qa = MemoryQA(SamplingParams(0.7, 1.0), 20, 30000, 16)
    answered = evaluate(
        rows, memory_qa_runner(dead, qa, Judge(SamplingParams(0.6, 0.95), 8)), tmp_path / "p", 3
    )
    assert all(r["failed"] for r in answered)
    with pytest.raises(SystemExit, match=f"(?s)3 of 3 samples failed.*{status}"):
        check_failures(answered, 0.0, "memalpha-tiny on memalpha/squad")


def test_a_qa_prompt_cap_too_small_for_any_question_fails_the_instance(tmp_path):
    memory = StructuredMemory(words, seed=0)
    memory.insert("semantic", "Ilse Brand built it")
    row = {
        "index": 0,
        "task": "squad",
        "questions": ["Who built it?"],
        "answers": [["Ilse Brand"]],
        "num_tokens": 5,
        "memorized": {"memory": memory.snapshot(), "failed": False, "error": None},
    }
    qa = MemoryQA(SamplingParams(0.7, 1.0), 20, 3, 16)  # 3 tokens: not even the question fits
    engine = RuleQA(lambda text: "Ilse Brand")
    (record,) = memory_qa_runner(engine, qa, Judge(SamplingParams(0.6, 0.95), 8))([row])
    assert record["failed"] and record["failed_questions"] == 1 and not engine.requests


# --- the datasets -------------------------------------------------------------------------------


def test_fixture_instances_group_by_source_with_their_query_prompts():
    from importlib.resources import files

    from memrepro.data.memalpha import instances_by_source, query

    path = files("memrepro") / "fixtures/memalpha/mab.parquet"
    grouped = instances_by_source(path)
    assert len(grouped) == 9 and sum(len(rows) for rows in grouped.values()) == 9
    [lme] = grouped["longmemeval_s*"]
    assert lme["index"] == 2 and lme["answers"] == ["The user bought thick rugs to reduce noise."]
    assert query("longmemeval_s*", "Q?") == "Q?"
    assert query("icl_nlu_8296shot_balance", "Q?").endswith("single number.\n\nQ?")
    with pytest.raises(KeyError, match="no query prompt for data source 'locomo'"):
        query("locomo", "Q?")


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("chunks", "[not json", "row 0, chunks: not valid JSON"),
        ("chunks", "[]", "row 0, chunks: expected a non-empty list of strings"),
        ("questions_and_answers", '[{"question": "q"}]', r"questions_and_answers\[0\]: expected"),
        ("data_source", "locomo", "row 0: data_source 'locomo' has no query prompt"),
    ],
)
def test_malformed_instances_fail_naming_file_row_and_field(tmp_path, column, value, message):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from memrepro.data.memalpha import instances_by_source

    row = {
        "chunks": '["c"]',
        "questions_and_answers": '[{"question": "q", "answer": "a"}]',
        "data_source": "squad",
        column: value,
    }
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    with pytest.raises(ValueError, match=message) as error:
        instances_by_source(path)
    assert str(path) in str(error.value)


def test_a_prompt_cap_in_evaluation_measures_prompts_in_the_engines_tokens(tmp_path):
    """`memalpha.agent.prompt_cap` (officially none in evaluation) works as in training: the
    memorize job measures each prompt with its engine's tokenizer."""
    row = {"index": 0, "task": "squad", "chunks": ["c1"], "questions": ["q"], "answers": ["a"]}
    policy = Replying([call("memory_update", memory_type="core_memory", new_content="c1 seen")])
    runner = memorize_runner(
        MemAlphaConfig(max_new_tokens=16, prompt_cap=100_000),
        policy,
        SamplingParams(0.0, 1.0),
        lambda row: StructuredMemory(words, seed=0),
    )
    (memorized,) = runner([row])
    assert not memorized["failed"] and memorized["memory"]["core"] == "c1 seen"
