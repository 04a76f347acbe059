"""Rollouts → Multi-Conv training rows: chunking, groups, rewards, order, empty and failed turns."""

from __future__ import annotations

import pytest

from memrepro.agents.memagent import MemAgentConfig
from memrepro.engines.base import Completion, SamplingParams
from memrepro.train.rollout import collect_rollouts

AGENT = MemAgentConfig(chunk_tokens=3, memory_tokens=5, final_tokens=20, final_prompt="boxed")
SAMPLING = SamplingParams(temperature=1.0, top_p=1.0, seed=0)


class CharTokenizer:
    """One token per character (ids are code points): exact, and needs no training."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


class ScriptedEngine:
    """Memory turns answer "mem"; final turns pop the next scripted answer for their question."""

    def __init__(self, finals, fail_when=None):
        self.tokenizer = CharTokenizer()
        self.finals = {question: list(answers) for question, answers in finals.items()}
        self.fail_when = fail_when
        self.calls = 0

    def chat(self, requests, sampling):
        self.calls += 1
        return [self._reply(request.messages[0]["content"]) for request in requests]

    def _reply(self, prompt):
        prompt_ids = self.tokenizer.encode(prompt)
        if self.fail_when and self.fail_when(prompt):
            return Completion(text="", prompt_ids=prompt_ids, error="boom")
        if "Updated memory:" in prompt:
            text = "mem"
        else:
            question = next(q for q in self.finals if q in prompt)
            text = self.finals[question].pop(0)
        return Completion(
            text=text, prompt_ids=prompt_ids, response_ids=self.tokenizer.encode(text)
        )


ROWS = [
    {"index": 10, "input": "Capital of France?", "answers": ["Paris"], "context": "abcdef"},
    {"index": 11, "input": "Colour of the sky?", "answers": ["blue"], "context": "xyz"},
]


def test_groups_rewards_and_turn_major_order():
    engine = ScriptedEngine(
        {"France": ["So \\boxed{Paris}", "no idea"], "sky": ["\\boxed{Blue}", "\\boxed{red}"]}
    )
    batch = collect_rollouts(engine, ROWS, 2, AGENT, max_chunks=8, sampling=SAMPLING)
    assert batch.group_ids == [0, 0, 1, 1]  # trajectory q*G + g belongs to question q
    assert batch.rewards == [1.0, 0.0, 1.0, 0.0]  # strict boxed verifier, case-insensitive
    assert batch.failed == [False] * 4
    # question 0 has 2 chunks (3 conversations per rollout), question 1 has 1 chunk (2)
    assert batch.n_conversations == 10 and batch.n_empty == 0
    # turn 0 of all, turn 1 of q0's rollouts, then every final answer in trajectory order
    assert batch.traj_index == [0, 1, 2, 3, 0, 1, 0, 1, 2, 3]
    assert batch.is_final == [False] * 6 + [True] * 4
    tokenizer = engine.tokenizer
    assert "<section>\nabc\n</section>" in tokenizer.decode(batch.prompt_ids[0])
    assert "<section>\ndef\n</section>" in tokenizer.decode(batch.prompt_ids[4])
    assert "\\boxed{}" in tokenizer.decode(batch.prompt_ids[6])  # the training final prompt
    assert tokenizer.decode(batch.response_ids[6]) == "So \\boxed{Paris}"
    assert all(tokenizer.decode(r) == "mem" for r in batch.response_ids[:6])


def test_an_empty_final_response_adds_no_row_but_keeps_the_trajectory():
    engine = ScriptedEngine({"France": ["", "\\boxed{Paris}"]})
    batch = collect_rollouts(engine, ROWS[:1], 2, AGENT, max_chunks=8, sampling=SAMPLING)
    assert batch.rewards == [0.0, 1.0]
    assert batch.n_empty == 1 and batch.n_conversations == 5
    # trajectory 0 keeps its two memory updates (they get its advantage) but has no final row
    assert batch.traj_index == [0, 1, 0, 1, 1]
    assert batch.is_final == [False, False, False, False, True]
    assert all(batch.response_ids)


def test_a_failed_rollout_gets_reward_zero_and_its_failed_turn_no_row():
    # the second memory update of every rollout fails: the workflow stops there
    engine = ScriptedEngine({"France": []}, fail_when=lambda prompt: "<memory>\nmem\n" in prompt)
    batch = collect_rollouts(engine, ROWS[:1], 2, AGENT, max_chunks=8, sampling=SAMPLING)
    assert batch.failed == [True, True]
    assert batch.rewards == [0.0, 0.0]
    assert batch.n_empty == 2
    assert batch.traj_index == [0, 1] and batch.is_final == [False, False]


def test_a_context_shorter_than_a_chunk_and_max_chunks_truncation():
    engine = ScriptedEngine({"France": ["\\boxed{Paris}"]})
    row = dict(ROWS[0], context="abcdefghij")
    batch = collect_rollouts(engine, [row], 1, AGENT, max_chunks=2, sampling=SAMPLING)
    sections = [engine.tokenizer.decode(p) for p in batch.prompt_ids[:2]]
    assert "<section>\nabc\n</section>" in sections[0]
    assert "<section>\nhij\n</section>" in sections[1]  # center truncation kept the tail
    assert batch.is_final == [False, False, True]


def test_bad_rows_and_settings_are_rejected_with_the_row_named():
    engine = ScriptedEngine({})
    with pytest.raises(ValueError, match=r"training row 0 \(index 10\).*context"):
        collect_rollouts(
            engine,
            [{"index": 10, "input": "q", "answers": ["a"], "doc_ids": [1]}],
            1,
            AGENT,
            8,
            SAMPLING,
        )
    with pytest.raises(ValueError, match="answers"):
        collect_rollouts(engine, [dict(ROWS[0], answers=[])], 1, AGENT, 8, SAMPLING)
    answer_is = MemAgentConfig(chunk_tokens=3, final_prompt="answer_is")
    with pytest.raises(ValueError, match="boxed"):
        collect_rollouts(engine, ROWS, 1, answer_is, 8, SAMPLING)


def test_an_engine_without_token_ids_cannot_train():
    class TextOnly(ScriptedEngine):
        def _reply(self, prompt):
            return Completion(text="mem", response_ids=[1])

    with pytest.raises(ValueError, match="no prompt token ids"):
        collect_rollouts(TextOnly({}), ROWS[:1], 1, AGENT, 8, SAMPLING)


def test_the_reward_is_the_official_verifier_unless_extended_is_asked_for():
    # \\boxed{Paris %} and \\fbox{Paris} match "Paris" only after the extended normaliser
    # (plain "%" dropped; \\fbox read): the official verifier, the default, scores them 0
    finals = ["\\boxed{Paris %}", "\\fbox{Paris}", "\\boxed{paris}"]
    batch = collect_rollouts(ScriptedEngine({"France": finals}), ROWS[:1], 3, AGENT, 8, SAMPLING)
    assert batch.rewards == [0.0, 0.0, 1.0]
    engine = ScriptedEngine({"France": finals})
    batch = collect_rollouts(engine, ROWS[:1], 3, AGENT, 8, SAMPLING, verifier="extended")
    assert batch.rewards == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="unknown verifier"):
        collect_rollouts(engine, ROWS[:1], 1, AGENT, 8, SAMPLING, verifier="lenient")
