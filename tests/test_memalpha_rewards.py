"""Mem-α's GRPO reward terms, each against hand-computed cases (Mem-α's official code)."""

from __future__ import annotations

import pytest

from memrepro.agents.memalpha_tools import ToolCall, ToolResult
from memrepro.scoring.memalpha import score_answer
from memrepro.train.memalpha_rewards import (
    CONTENT_JUDGE_PROMPTS,
    compression_reward,
    content_judge_request,
    content_reward,
    content_verdict,
    judged_content,
    step_rewards,
    tool_call_reward,
)

OK = ToolResult(True, "[tool new_memory_insert executed successfully] → {'status': 'ok'}")
SKIPPED = ToolResult(True, "[tool new_memory_insert executed successfully] → skipped", True)
ERROR = ToolResult(False, "[tool memory_update error] Invalid argument value: no id")


def test_r2_is_the_share_of_calls_that_executed_and_were_not_skipped():
    assert tool_call_reward([OK, OK, SKIPPED, ERROR]) == 0.5
    assert tool_call_reward([SKIPPED]) == 0.0  # a duplicate insert is a failure
    assert tool_call_reward([]) == 0.0  # a chunk without calls


def test_r3_is_one_minus_memory_over_chunk_tokens_and_may_be_negative():
    assert compression_reward(250, 1000) == 0.75
    assert compression_reward(1500, 1000) == -0.5
    with pytest.raises(ValueError, match="0 chunk tokens"):
        compression_reward(10, 0)


def call(name: str, arguments: str, malformed: str | None = None) -> ToolCall:
    return ToolCall(name, arguments, malformed)


@pytest.mark.parametrize(
    ("tool_call", "expected"),
    [
        (
            call("new_memory_insert", '{"memory_type": "semantic_memory", "content": "Paris"}'),
            ("semantic", "Paris"),
        ),
        (
            call("memory_update", '{"memory_type": "core_memory", "new_content": "User: Ada"}'),
            ("core", "User: Ada"),
        ),
        (
            call("memory_update", '{"memory_type": "episodic", "new_content": "At 9: met"}'),
            ("episodic", "At 9: met"),
        ),  # unsuffixed: stripping is a no-op
        (
            call("new_memory_insert", '{"memory_type": "semantic_memory", "content": "a",}'),
            ("semantic", "a"),
        ),  # repaired as the executor repairs it
        (call("memory_delete", '{"memory_type": "semantic_memory", "memory_id": "ab12"}'), None),
        (call("search_memory", '{"memory_type": "semantic_memory", "query": "x"}'), None),
        (call("new_memory_insert", '{"memory_type": "procedural", "content": "x"}'), None),
        (call("new_memory_insert", '{"memory_type": "semantic_memory", "content": "  "}'), None),
        (call("new_memory_insert", '{"memory_type": "semantic_memory", "content": 3}'), None),
        (call("memory_update", '{"memory_type": "core_memory", "content": "wrong field"}'), None),
        (call("new_memory_insert", '["semantic_memory", "x"]'), None),
        (call("new_memory_insert", "", malformed="no arguments"), None),
    ],
)
def test_only_inserts_and_updates_with_a_type_and_text_are_judged(tool_call, expected):
    assert judged_content(tool_call) == expected


def test_the_judge_sees_the_official_prompt_and_the_content_alone():
    request = content_judge_request("episodic", "At 9:00 the user met Ada.", 512)
    system, user = request.messages
    assert system["content"] == CONTENT_JUDGE_PROMPTS["episodic"]
    assert system["content"].startswith("You are an expert memory analyst. Analyze the quality")
    assert system["content"].endswith('"brief explanation of the assessment"\n}\n```')
    assert user["content"] == "Analyze this episodic memory content:\n\nAt 9:00 the user met Ada."
    assert request.enable_thinking is False and request.max_tokens == 512
    assert '"core memory" appears' in CONTENT_JUDGE_PROMPTS["core"]


VALID = '```json\n{"VALID": true, "ISSUES": [], "EXPLANATION": "an event with a time"}\n```'


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        (VALID, 1.0),
        ("Sure.\n" + VALID + "\nDone.", 1.0),
        (VALID.replace("true", "false"), 0.0),
        (VALID.replace("true", '"true"'), 0.0),  # a string is not a boolean
        (VALID.replace("[]", '"none"'), 0.0),  # ISSUES must be a list
        (VALID.replace('"an event with a time"', "1"), 0.0),  # EXPLANATION a string
        (VALID.replace('"ISSUES": [], ', ""), 0.0),  # a key missing
        (VALID.replace("```json", "```"), 0.0),  # the block must be tagged json
        ('{"VALID": true, "ISSUES": [], "EXPLANATION": "x"}', 0.0),  # no block at all
        ('```json\n{"VALID": true, "ISSUES": [], "EXPLANATION": "x",}\n```', 0.0),  # not strict
        ("```json\n{VALID: true/false}\n```", 0.0),
        ("Error: connection refused", 0.0),
    ],
)
def test_content_verdict_follows_the_batch_endpoints_strict_rule(reply, verdict):
    assert content_verdict(reply) == verdict


def test_r4_averages_over_every_call_unjudged_calls_counting_zero():
    assert content_reward([1.0, 0.0, None, 1.0]) == 0.5  # a delete among them scores 0
    assert content_reward([None]) == 0.0
    assert content_reward([]) == 0.0


def test_each_chunk_row_gets_r1_plus_beta_r3_plus_its_r2_and_gamma_r4():
    rows = step_rewards(
        r1=0.6, r3=0.5, r2=[1.0, 0.5, 0.0], r4=[1.0, 0.0, 0.5], beta=0.05, gamma=0.1
    )
    assert rows == pytest.approx([0.6 + 0.025 + 1.0 + 0.1, 0.625 + 0.5, 0.625 + 0.05])
    with pytest.raises(ValueError, match="2 tool-call rewards for 1 content"):
        step_rewards(0.0, 0.0, [1.0, 1.0], [1.0], 0.05, 0.1)


@pytest.mark.parametrize(
    ("source", "prediction", "gold", "train", "agent"),
    [
        # keywords: split on "," in training, on ", " at evaluation
        ("booksum", "ferry and salt and the town", "ferry, salt,town", 1.0, 0.5),
        # labels: only \boxed{} (else the whole answer), in training as at evaluation
        ("pubmed-rct", "<answer>3</answer>", "3", 0.0, 0.0),
        ("pubmed-rct", "The label is \\boxed{ 3 }", "3", 1.0, 1.0),
        ("icl_nlu_8296shot_balance", " '12' ", "12", 1.0, 1.0),
        ("ttl_train_trec", "\\boxed{4}", "4", 1.0, None),  # a label only in training
        ("squad", "It is in Paris.", "paris", 1.0, 1.0),
        ("perltqa", "ada and Rome", "Ada;Rome", 0.5, 0.5),  # parts lowered, prediction not
    ],
)
def test_r1_training_metric_differs_from_evaluation_where_naive_py_does(
    source, prediction, gold, train, agent
):
    assert score_answer(source, prediction, gold, "train") == train
    if agent is not None:
        assert score_answer(source, prediction, gold, "agent") == agent
