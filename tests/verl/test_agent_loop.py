"""MemAgentLoop under verl 0.9.1's v1 agent-loop machinery, with a scripted rollout server.

Runs in the verl venv: PYTHONPATH=src /tmp/verlvenv/bin/python -m pytest tests/verl
"""

from __future__ import annotations

import numpy as np
import pytest

# a submodule: tests/ on sys.path makes tests/verl importable as a namespace package "verl"
pytest.importorskip("verl.experimental.agent_loop")

from hydra.errors import InstantiationException
from memagent_fakes import (
    FakeServerManager,
    TransferQueueRows,
    dataset_rows,
    loop_kwargs,
    run_session,
    tiny_tokenizer,
    token_log_probs,
)
from verl.trainer.ppo.core_algos import AdvantageEstimator
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories
from verl.workers.rollout.replica import TokenOutput

from memrepro.agents.chunking import truncated_chunks
from memrepro.agents.memagent import FINAL_TEMPLATES, MEMORY_TEMPLATES, NO_MEMORY
from memrepro.verl.reward import compute_score

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SAMPLING = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": -1,
    "repetition_penalty": 1.0,
    "logprobs": True,
}
AGENT = {"chunk_tokens": 8, "memory_tokens": 6, "final_tokens": 5}
MAX_CHUNKS = 8
QUESTION = "Which river runs past the mill?"
CONTEXT = (
    "The mill stands on the river Ouse . Bread is baked there daily . Ada kept the bees "
    "behind the orchard wall ."
)
ROW = {"index": 4, "input": QUESTION, "answers": ["Ouse"], "context": CONTEXT}


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture
def row(tmp_path, tokenizer):
    return dataset_rows([ROW], tmp_path, tokenizer, AGENT, MAX_CHUNKS)[0]


@pytest.fixture
def chunks(tokenizer):
    chunks = truncated_chunks(tokenizer, CONTEXT, AGENT["chunk_tokens"], MAX_CHUNKS)
    assert len(chunks) >= 3
    return chunks


def scripted(tokenizer, memories, final):
    """Memory turn k answers memories[k], the final turn answers `final` (texts, or None for
    no token at all); every non-empty answer ends with EOS."""

    def encode(text):
        if text is None:
            return []
        return [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]

    def respond(prompt_ids, max_tokens):
        if "Your answer:" in tokenizer.decode(prompt_ids):
            return encode(final)
        respond.turn += 1
        return encode(memories[respond.turn])

    respond.turn = -1
    return respond


def chat_ids(tokenizer, content):
    """Our HFEngine's prompt ids for one user message."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
    )
    return tokenizer.encode(text, add_special_tokens=False)


def test_one_row_per_conversation_final_answer_last(tokenizer, row, chunks):
    memories = [f"memo {k}" for k in range(len(chunks))]
    server = FakeServerManager(scripted(tokenizer, memories, "\\boxed{Ouse}"))
    outputs = run_session(tokenizer, server, row, SAMPLING)
    assert len(outputs) == len(chunks) + 1 == len(server.calls)
    for turn, (output, call) in enumerate(zip(outputs, server.calls, strict=True)):
        text = memories[turn] if turn < len(chunks) else "\\boxed{Ouse}"
        expected = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
        assert output.prompt_ids == call["prompt_ids"]
        assert output.response_ids == expected
        assert output.response_mask == [1] * len(expected)
        assert output.response_logprobs == token_log_probs(expected)
        assert output.num_turns == 2 * len(outputs)
        assert output.extra_fields["memagent_turn"] == turn
        assert output.extra_fields["memagent_final"] == (turn == len(chunks))
        assert output.extra_fields["memagent_chunks"] == len(chunks)
        assert call["sampling_params"] == SAMPLING  # forwarded, and never mutated by a call
    budgets = [call["max_tokens"] for call in server.calls]
    assert budgets == [AGENT["memory_tokens"]] * len(chunks) + [AGENT["final_tokens"]]
    assert len({call["request_id"] for call in server.calls}) == 1  # one sticky session


def test_each_prompt_is_a_fresh_chat_holding_the_previous_memory(tokenizer, row, chunks):
    memories = [f"memo {k}" for k in range(len(chunks))]
    server = FakeServerManager(scripted(tokenizer, memories, "\\boxed{Ouse}"))
    outputs = run_session(tokenizer, server, row, SAMPLING)
    previous = [NO_MEMORY, *memories]
    expected = [
        MEMORY_TEMPLATES["official"].format(prompt=QUESTION, memory=previous[k], chunk=chunk)
        for k, chunk in enumerate(chunks)
    ]
    expected.append(FINAL_TEMPLATES["boxed"].format(prompt=QUESTION, memory=memories[-1]))
    for output, content in zip(outputs, expected, strict=True):
        assert output.prompt_ids == chat_ids(tokenizer, content)
        assert tokenizer.decode(output.prompt_ids).count("<|im_start|>user") == 1


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def test_rows_hold_no_document_and_the_loop_reads_it_by_id(tokenizer, row, chunks, monkeypatch):
    assert not any(chunk.strip() in text for chunk in chunks for text in _strings(row))
    server = FakeServerManager(scripted(tokenizer, ["memo"] * len(chunks), "\\boxed{Ouse}"))
    outputs = run_session(tokenizer, server, row, SAMPLING)
    assert chunks[1] in tokenizer.decode(outputs[1].prompt_ids)
    stored = TransferQueueRows(tokenizer, monkeypatch)
    stored.store(outputs, **loop_kwargs(row, "q0", 0))
    assert not any(CONTEXT in text for r in stored.rows for text in _strings(r))
    missing = {**row, "extra_info": {**row["extra_info"], "context_id": "0" * 64}}
    with pytest.raises(KeyError, match="no context with id"):
        run_session(tokenizer, FakeServerManager(lambda ids, n: [2]), missing, SAMPLING)
    broken = {**row, "extra_info": {"index": 4, "question": QUESTION}}
    with pytest.raises(KeyError, match="write_verl_dataset"):
        run_session(tokenizer, FakeServerManager(lambda ids, n: [2]), broken, SAMPLING)


def test_the_reward_is_the_final_answers_only(tokenizer, row, chunks, monkeypatch):
    stored = TransferQueueRows(tokenizer, monkeypatch)
    sessions = [
        (["\\boxed{Ouse}"] * len(chunks), "\\boxed{Thames}", 0.0),  # right answer in memory only
        (["memo"] * len(chunks), "so \\boxed{Ouse}", 1.0),
    ]
    for session_id, (memories, final, _) in enumerate(sessions):
        server = FakeServerManager(scripted(tokenizer, memories, final))
        outputs = run_session(tokenizer, server, row, SAMPLING, session_id=session_id)
        stored.store(outputs, **loop_kwargs(row, "q0", session_id))
    n = len(chunks) + 1
    assert stored.keys == [f"q0_{s}_{i}" for s in range(2) for i in range(n)]
    assert all(tag["status"] == "success" for tag in stored.tags)
    for position, stored_row in enumerate(stored.rows):
        reward = sessions[position // n][2]
        scores = stored_row["rm_scores"]
        assert scores[-1].item() == reward and scores[:-1].abs().sum().item() == 0
        assert stored_row["uid"] == "q0"
        assert stored_row["loss_mask"].tolist() == stored_row["response_mask"].tolist()


def test_an_empty_final_answer_keeps_the_sessions_advantage(tokenizer, row, chunks, monkeypatch):
    """verl reads a session's advantage at the first unmasked token of its final row."""
    stored = TransferQueueRows(tokenizer, monkeypatch)
    for session_id, final in enumerate(["\\boxed{Ouse}", None]):
        server = FakeServerManager(scripted(tokenizer, ["memo"] * len(chunks), final))
        outputs = run_session(tokenizer, server, row, SAMPLING, session_id=session_id)
        stored.store(outputs, **loop_kwargs(row, "q0", session_id))
    last = outputs[-1]
    assert last.response_ids == [tokenizer.eos_token_id]
    assert last.response_mask == [1] and last.response_logprobs == [0.0]
    assert last.extra_fields["memagent_empty_final"] is True
    data = stored.advantage_input()
    result = compute_advantage_for_multi_trajectories(
        data, stored.keys, AdvantageEstimator.GRPO, norm_adv_by_std_in_grpo=False
    )
    n = len(chunks) + 1
    for position, key in enumerate(stored.keys):
        mask = data.batch["response_mask"][position].bool()
        expected = 0.5 if key.startswith("q0_0_") else -0.5  # rewards 1 and 0, group mean 0.5
        advantages = result.batch["advantages"][position]
        assert advantages[mask].tolist() == [expected] * int(mask.sum())
    assert len(stored.keys) == 2 * n


def test_an_empty_memory_answer_is_dropped(tokenizer, row, chunks):
    memories = ["memo 0", None, *["memo"] * (len(chunks) - 2)]
    server = FakeServerManager(scripted(tokenizer, memories, "\\boxed{Ouse}"))
    outputs = run_session(tokenizer, server, row, SAMPLING)
    turns = [output.extra_fields["memagent_turn"] for output in outputs]
    assert turns == [0, *range(2, len(chunks) + 1)]
    assert all(output.extra_fields["memagent_dropped_empty"] == 1 for output in outputs)
    assert "<memory>\n\n</memory>" in tokenizer.decode(outputs[1].prompt_ids)


def test_without_rollout_log_probs_no_row_has_them(tokenizer, row, chunks):
    server = FakeServerManager(scripted(tokenizer, ["memo"] * len(chunks), None))
    outputs = run_session(tokenizer, server, row, {**SAMPLING, "logprobs": False})
    assert [output.response_logprobs for output in outputs] == [None] * len(outputs)


@pytest.mark.parametrize(
    ("config", "respond", "error", "message"),
    [
        ({"prompt_length": 50}, None, ValueError, "rollout.prompt_length=50"),
        ({"response_length": 4}, None, ValueError, "memory_tokens=6 exceeds"),
        ({}, TokenOutput(token_ids=[], stop_reason="aborted"), RuntimeError, "aborted"),
        # raised in the constructor, which verl calls through hydra
        ({"use_v1": False}, None, InstantiationException, "trainer.use_v1=True"),
    ],
)
def test_what_verl_would_hide_raises(tokenizer, row, config, respond, error, message):
    server = FakeServerManager(lambda ids, n: respond if respond is not None else [2])
    with pytest.raises(error, match=message):
        run_session(tokenizer, server, row, SAMPLING, **config)


@pytest.mark.parametrize(
    ("ground_truth", "answer", "score"),
    [
        (np.array(["the Ouse", "Ouse"], dtype=object), "It is \\boxed{Ouse}.", 1.0),
        (["Ouse"], "It is \\boxed{ouse}", 1.0),
        ("Ouse", "\\boxed{Ouse} then \\boxed{Thames}", 0.0),  # the last box counts
        (["Ouse"], "The answer is Ouse", 0.0),  # strict: no box, no reward
    ],
)
def test_compute_score_is_the_strict_boxed_verifier(ground_truth, answer, score):
    assert compute_score("ruler_hqa", answer, ground_truth, extra_info={"index": 1}) == score


def test_compute_score_rejects_an_empty_ground_truth():
    with pytest.raises(ValueError, match="ruler_hqa row 3"):
        compute_score("ruler_hqa", "\\boxed{x}", np.array([]), extra_info={"index": 3})


def test_verl_0_9_1_reward_managers_misread_a_short_final_row(tokenizer, row, chunks, monkeypatch):
    """Why the loop scores the answer itself: left to verl's reward call, the same session's
    right answer scores 0 (its final row is shorter than its memory rows)."""
    server = FakeServerManager(scripted(tokenizer, ["memo"] * len(chunks), "\\boxed{Ouse}"))
    outputs = run_session(tokenizer, server, row, SAMPLING)
    assert outputs[-1].reward_score == 1.0
    outputs[-1].reward_score = None
    del outputs[-1].extra_fields["reward_extra_info"]
    stored = TransferQueueRows(tokenizer, monkeypatch)
    stored.store(outputs, **loop_kwargs(row, "q0", 0))
    assert stored.rows[-1]["rm_scores"].sum().item() == 0.0
