"""Mem-α's structured memory and its tools: the official semantics, quirks included
(Mem-α's official code), the Qwen-Agent call format and a parser that never crashes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memalpha_fakes import words

from memrepro.agents.memalpha_tools import (
    ToolCall,
    execute,
    function_call_block,
    parse_calls,
    tool_schemas,
)
from memrepro.agents.structured_memory import (
    SKIPPED_MESSAGE,
    TRUNCATION_SUFFIX,
    MemoryOperationError,
    StructuredMemory,
    from_snapshot,
)

GOLDEN = Path(__file__).parent / "golden"


def memory(**kwargs) -> StructuredMemory:
    return StructuredMemory(words, **kwargs)


# --- the memory ------------------------------------------------------------------------------


def test_insert_appends_with_a_fresh_four_hex_id_and_skips_duplicates():
    m = memory()
    first = m.insert("semantic_memory", "Paris is the capital of France.")
    [(memory_id, content)] = first["new_memory"].items()
    assert first["status"] == "ok" and content == "Paris is the capital of France."
    assert len(memory_id) == 4 and int(memory_id, 16) >= 0
    assert m.insert("semantic", "Paris is the capital of France.") == {
        "status": "skipped",
        "message": SKIPPED_MESSAGE,
    }
    m.insert("episodic_memory", "Paris is the capital of France.")  # another store: no duplicate
    assert len(m.semantic) == 1 and len(m.episodic) == 1
    with pytest.raises(MemoryOperationError, match="Core memory cannot be inserted"):
        m.insert("core_memory", "x")


def test_ids_are_reproducible_per_seed_and_never_collide():
    a, b = memory(seed=3), memory(seed=3)
    for k in range(400):  # 16-bit ids: collisions are likely by now without the redraw
        a.insert("semantic", f"fact {k}")
        b.insert("semantic", f"fact {k}")
    assert a.semantic == b.semantic
    assert len({i for i, _ in a.semantic}) == 400
    assert memory(seed=4).insert("semantic", "fact 0") != memory(seed=3).insert(
        "semantic", "fact 0"
    )


def test_update_replaces_by_id_and_a_missing_id_is_an_error():
    m = memory()
    [memory_id] = m.insert("episodic_memory", "At 9am the user ran.")["new_memory"]
    assert m.update("episodic_memory", "At 9am the user swam.", memory_id) == {
        "status": "ok",
        "updated_memory": {memory_id: "At 9am the user swam."},
    }
    assert m.episodic == [(memory_id, "At 9am the user swam.")]
    with pytest.raises(MemoryOperationError, match="no episodic memory with id 'zzzz'"):
        m.update("episodic_memory", "x", "zzzz")
    with pytest.raises(MemoryOperationError):
        m.update("episodic_memory", "x")  # no id at all
    assert m.episodic == [(memory_id, "At 9am the user swam.")]


def test_core_is_replaced_whole_and_capped_at_512_tokens_word_by_word():
    m = memory()
    assert m.update("core_memory", "The user likes tea.", "ignored")["updated_memory"] == (
        "The user likes tea."
    )
    long_text = " ".join(f"w{i}" for i in range(600))
    m.update("core", long_text)
    # 512 minus the suffix's 5 tokens: the first 507 words, then the suffix
    assert m.core == " ".join(f"w{i}" for i in range(507)) + TRUNCATION_SUFFIX
    assert words(m.core) == 512
    exact = " ".join(f"w{i}" for i in range(512))
    assert m.update("core", exact)["updated_memory"] == exact  # at the cap: kept whole


def test_an_over_long_core_always_loses_a_word_even_if_the_rest_fits_re_joined():
    """The official loop pops a word before it measures. Here newlines count as tokens: 300
    newline-joined words are 599 tokens, but 300 space-joined words would fit in 507."""
    m = StructuredMemory(lambda text: len(text.split()) + text.count("\n"))
    m.update("core_memory", "\n".join(f"w{i}" for i in range(300)))
    assert m.core == " ".join(f"w{i}" for i in range(299)) + TRUNCATION_SUFFIX


def test_delete_clears_core_removes_by_id_and_a_missing_id_is_still_ok():
    m = memory()
    m.update("core_memory", "summary")
    [keep] = m.insert("semantic_memory", "a")["new_memory"]
    [gone] = m.insert("semantic_memory", "b")["new_memory"]
    assert m.delete("semantic", gone) == {"status": "ok"}
    assert m.delete("semantic_memory", "ffff") == {"status": "ok"}
    assert m.semantic == [(keep, "a")]
    m.delete("core_memory")
    assert m.core == ""


def test_total_length_counts_core_and_every_content_but_no_ids():
    m = memory()
    m.update("core_memory", "one two three")
    m.insert("semantic_memory", "four five")
    m.insert("episodic_memory", "six")
    assert m.total_length() == 6


def test_disabled_stores_refuse_operations_and_leave_core_none():
    m = memory(disabled=frozenset({"core", "episodic"}))
    assert m.core is None and m.enabled == ("semantic",)
    for op in (lambda: m.update("core_memory", "x"), lambda: m.insert("episodic_memory", "x")):
        with pytest.raises(MemoryOperationError, match="disabled"):
            op()
    with pytest.raises(ValueError, match="unknown memory types"):
        memory(disabled=frozenset({"procedural"}))
    with pytest.raises(MemoryOperationError, match="unknown memory type"):
        m.insert("procedural_memory", "x")


def test_snapshot_round_trips_in_the_official_layout():
    m = memory(seed=1)
    m.update("core_memory", "core text")
    [s] = m.insert("semantic_memory", "fact")["new_memory"]
    [e] = m.insert("episodic_memory", "event")["new_memory"]
    snapshot = m.snapshot()
    assert snapshot == {"core": "core text", "semantic": [{s: "fact"}], "episodic": [{e: "event"}]}
    again = from_snapshot(snapshot, words)
    assert again.snapshot() == snapshot


def test_search_ranks_a_store_by_bm25():
    m = memory()
    for text in ("cats purr softly", "dogs bark loudly at night", "the dog and the cat"):
        m.insert("semantic_memory", text)
    results = m.search("semantic_memory", "Why do dogs bark?", top_k=2)
    assert next(iter(results[0].values())) == "dogs bark loudly at night"
    assert len(results) == 2 and memory().search("episodic", "x") == []


# --- schemas and the prompt's tool block -------------------------------------------------------


def test_schemas_filter_enums_to_enabled_stores_and_drop_empty_tools():
    full = tool_schemas(memory())
    assert [t["name"] for t in full] == ["new_memory_insert", "memory_update", "memory_delete"]
    update = full[1]["parameters"]
    assert update["properties"]["memory_type"]["enum"] == [
        "core_memory",
        "semantic_memory",
        "episodic_memory",
    ]
    assert update["required"] == ["memory_type", "new_content"]
    core_only = tool_schemas(memory(disabled=frozenset({"semantic", "episodic"})))
    assert [t["name"] for t in core_only] == ["memory_update", "memory_delete"]
    assert core_only[0]["parameters"]["properties"]["memory_type"]["enum"] == ["core_memory"]


@pytest.mark.parametrize("variant", ["full", "no_core"])
def test_tool_block_matches_qwen_agent_0_0_29(variant):
    # The golden files are qwen-agent 0.0.29's `QwenFnCallPrompt.preprocess_fncall_messages`
    # (lang en, parallel calls, function_choice auto) applied to a system message "SYSTEM" and
    # these schemas: the format Memalpha-4B was trained on.
    disabled = frozenset() if variant == "full" else frozenset({"core"})
    expected = (GOLDEN / f"qwen_agent_0.0.29_system_{variant}.txt").read_text()
    assert "SYSTEM\n\n" + function_call_block(tool_schemas(memory(disabled=disabled))) == expected


# --- parsing and executing calls ---------------------------------------------------------------


def test_parallel_calls_are_parsed_in_order_with_the_reasoning_before_them():
    text = (
        "I will store two facts.\n"
        '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"memory_type": "semantic_memory", "content": "A"}\n'
        '✿FUNCTION✿: memory_update ✿ARGS✿: {"memory_type": "core_memory", "new_content": "B"} trailing\n'
        "✿RESULT✿: hallucinated"
    )
    reasoning, calls = parse_calls(text)
    assert reasoning == "I will store two facts."
    assert [(c.name, c.arguments) for c in calls] == [
        ("new_memory_insert", '{"memory_type": "semantic_memory", "content": "A"}'),
        ("memory_update", '{"memory_type": "core_memory", "new_content": "B"}'),
    ]
    m = memory()
    assert all(execute(m, c).ok for c in calls)
    assert m.core == "B" and [c for _, c in m.semantic] == ["A"]


def test_a_reply_without_calls_loses_its_thinking():
    assert parse_calls("<think>\nhmm\n</think>\n\nDone") == ("Done", [])


def test_results_name_the_tool_and_the_outcome():
    m = memory()
    call = ToolCall("new_memory_insert", '{"memory_type": "semantic_memory", "content": "A"}')
    result = execute(m, call)
    assert result.ok and result.message.startswith(
        "[tool new_memory_insert executed successfully] → "
    )
    skipped = execute(m, call)
    assert skipped.ok and "skipped" in skipped.message  # a duplicate is not a failed call
    delete = execute(m, ToolCall("memory_delete", '{"memory_type": "semantic", "memory_id": "0"}'))
    assert delete.ok  # delete takes bare names; a missing id is fine
    search = execute(
        m, ToolCall("search_memory", '{"memory_type": "semantic_memory", "query": "A"}')
    )
    assert search.ok  # callable while memorising


MALFORMED = [
    # (generation, the error kind every call in it must report)
    ("✿FUNCTION✿: new_memory_insert\n✿ARGS✿: ", "Invalid JSON arguments"),
    ("✿FUNCTION✿: new_memory_insert\n✿ARGS✿: not json at all", "Invalid JSON arguments"),
    ("✿FUNCTION✿: new_memory_insert\n✿ARGS✿: [1, 2]", "Unexpected error"),
    ("✿FUNCTION✿: new_memory_insert\n✿ARGS✿: 42", "Unexpected error"),
    ('✿FUNCTION✿: new_memory_insert\n✿ARGS✿: "text"', "Unexpected error"),
    ("✿FUNCTION✿: new_memory_insert\n✿ARGS✿: null", "Unexpected error"),
    ('✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"content": "x"}', "Missing required argument"),
    (
        '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"memory_type": "semantic_memory"}',
        "Missing required argument",
    ),
    (
        '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"memory_type": "semantic", "content": "x"}',
        "Unexpected error",
    ),
    (
        '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"memory_type": "core_memory", "content": "x"}',
        "Unexpected error",
    ),
    (
        '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"memory_type": null, "content": "x"}',
        "Unexpected error",
    ),
    (
        '✿FUNCTION✿: memory_update\n✿ARGS✿: {"memory_type": "semantic_memory", "new_content": "x", "memory_id": "beef"}',
        "Invalid argument value",
    ),
    (
        '✿FUNCTION✿: memory_update\n✿ARGS✿: {"memory_type": "semantic_memory", "new_content": "x"}',
        "Invalid argument value",
    ),
    (
        '✿FUNCTION✿: memory_update\n✿ARGS✿: {"memory_type": "core_memory"}',
        "Missing required argument",
    ),
    (
        '✿FUNCTION✿: memory_update\n✿ARGS✿: {"memory_type": "core", "new_content": "x"}',
        "Unexpected error",
    ),
    (
        '✿FUNCTION✿: memory_update\n✿ARGS✿: {"memory_type": "procedural_memory", "new_content": "x"}',
        "Unexpected error",
    ),
    ('✿FUNCTION✿: memory_delete\n✿ARGS✿: {"memory_id": "beef"}', "Missing required argument"),
    ('✿FUNCTION✿: memory_delete\n✿ARGS✿: {"memory_type": "procedural"}', "Invalid argument value"),
    ('✿FUNCTION✿: memory_delete\n✿ARGS✿: {"memory_type": 3}', "Invalid argument value"),
    (
        '✿FUNCTION✿: memory_remove\n✿ARGS✿: {"memory_type": "core_memory"}',
        "Missing required argument",
    ),
    ('✿FUNCTION✿: \n✿ARGS✿: {"memory_type": "core_memory"}', "Missing required argument"),
    (
        '✿FUNCTION✿: search_memory\n✿ARGS✿: {"memory_type": "core_memory", "query": "x"}',
        "Invalid argument value",
    ),
    (
        '✿FUNCTION✿: search_memory\n✿ARGS✿: {"memory_type": "semantic_memory"}',
        "Missing required argument",
    ),
]


UNREADABLE = [
    "✿FUNCTION✿: new_memory_insert",  # cut off by the token limit
    "✿FUNCTION✿: new_memory_insert ✿RESULT✿: ok",
    '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"content": "a ✿ b"}',  # ✿ inside the arguments
    "✿FUNCTION✿:\n\n\n✿ARGS✿ {}",
    "✿FUNCTION✿✿ARGS✿: {}",
]


@pytest.mark.parametrize("text", UNREADABLE)
def test_an_unreadable_block_is_skipped_officially_or_fails_when_counted(text):
    good = '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"memory_type": "semantic_memory", "content": "A"}\n'
    reasoning, calls = parse_calls("Reasoning first.\n" + good + text)
    assert reasoning == "Reasoning first." and [c.name for c in calls] == ["new_memory_insert"]
    _, counted = parse_calls(good + text, count_unreadable=True)
    assert [c.name for c in counted] == ["new_memory_insert", ""]
    result = execute(memory(), counted[1])
    assert not result.ok and "error] Invalid tool call:" in result.message


def test_the_tool_name_may_sit_on_the_line_after_the_marker():
    text = '✿FUNCTION✿:\nmemory_update\n✿ARGS✿: {"memory_type": "core_memory", "new_content": "B"}'
    [call] = parse_calls(text)[1]
    assert call.name == "memory_update"
    m = memory()
    assert execute(m, call).ok and m.core == "B"


@pytest.mark.parametrize(("value", "stored"), [(42, "42"), (["a", 1], "['a', 1]"), (None, "None")])
def test_non_string_content_is_stored_as_its_text(value, stored):
    m = memory()
    arguments = json.dumps({"memory_type": "semantic_memory", "content": value})
    assert execute(m, ToolCall("new_memory_insert", arguments)).succeeded
    update = json.dumps({"memory_type": "core_memory", "new_content": value})
    assert execute(m, ToolCall("memory_update", update)).succeeded
    assert [c for _, c in m.semantic] == [stored] and m.core == stored


def test_delete_strips_every_memory_suffix_as_officially():
    m = memory()
    [memory_id] = m.insert("episodic_memory", "At 9am the user ran.")["new_memory"]
    arguments = json.dumps({"memory_type": "episodic_memory_memory", "memory_id": memory_id})
    assert execute(m, ToolCall("memory_delete", arguments)).succeeded and m.episodic == []
    doubled = json.dumps({"memory_type": "semantic_memory_memory", "content": "x"})
    assert not execute(m, ToolCall("new_memory_insert", doubled)).ok  # insert asserts the type


@pytest.mark.parametrize(("text", "kind"), MALFORMED)
def test_every_malformed_call_fails_without_raising_or_touching_memory(text, kind):
    m = memory()
    [memory_id] = m.insert("semantic_memory", "keep me")["new_memory"]
    _, calls = parse_calls("Reasoning first.\n" + text)
    assert len(calls) == 1
    result = execute(m, calls[0])
    assert not result.ok
    assert f"error] {kind}:" in result.message, result.message
    assert m.semantic == [(memory_id, "keep me")] and m.core == ""


def test_a_bad_call_does_not_stop_the_good_ones_after_it():
    text = (
        "✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {broken\n"
        '✿FUNCTION✿: new_memory_insert\n✿ARGS✿: {"memory_type": "episodic_memory", "content": "ok"}'
    )
    m = memory()
    results = [execute(m, c) for c in parse_calls(text)[1]]
    assert [r.ok for r in results] == [False, True] and [c for _, c in m.episodic] == ["ok"]
