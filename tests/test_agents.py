"""MemAgent as a workflow: the official prompts, memory overwrite, chunking, the batch driver."""

from __future__ import annotations

import pytest

from memrepro.agents.chunking import (
    center_truncate,
    newline_pieces,
    token_chunks,
    truncated_chunks,
)
from memrepro.agents.driver import run_batched
from memrepro.agents.memagent import NO_MEMORY, MemAgentConfig, memagent
from memrepro.engines.base import ChatRequest, Completion


class WordTokenizer:
    def encode(self, text, add_special_tokens=False):
        return text.split(" ")

    def decode(self, ids):
        return " ".join(ids)


class CharTokenizer:
    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(map(chr, ids))


class RecordingEngine:
    def __init__(self, replies):
        self.tokenizer = WordTokenizer()
        self.replies, self.seen = iter(replies), []

    def chat(self, requests, sampling):
        self.seen.append(list(requests))
        return [Completion(text=next(self.replies)) for _ in requests]


def test_memory_is_overwritten_each_chunk_and_the_final_turn_reads_it():
    engine = RecordingEngine(["<think>x</think>m1", "m2", "Therefore, the answer is 4."])
    config = MemAgentConfig(chunk_tokens=2, memory_tokens=7, final_tokens=9)
    [rollout] = run_batched([memagent(" q? ", ["c1", "c2"], config)], engine, sampling=None)
    prompts = [batch[0].messages[0]["content"] for batch in engine.seen]
    assert (
        f"<memory>\n{NO_MEMORY}\n</memory>" in prompts[0]
        and "<section>\nc1\n</section>" in prompts[0]
    )
    assert "<memory>\nm1\n</memory>" in prompts[1]  # the text after </think> becomes the memory
    assert "<memory>\nm2\n</memory>" in prompts[2] and "<section>" not in prompts[2]
    assert prompts[0].startswith("You are presented with a problem, a section of an article")
    assert "<problem> \nq?\n</problem>" in prompts[0]
    assert prompts[0].endswith("Updated memory:\n")
    assert 'format your response as follows "Therefore, the answer is' in prompts[2]
    assert [batch[0].max_tokens for batch in engine.seen] == [7, 7, 9]
    assert rollout.answer == "Therefore, the answer is 4." and len(rollout.conversations) == 3


def test_boxed_final_prompt_asks_for_a_box():
    workflow = memagent("q", [], MemAgentConfig(final_prompt="boxed"))
    request = next(workflow)
    assert isinstance(request, ChatRequest)
    assert "put the answer in \\boxed{}." in request.messages[0]["content"]


@pytest.mark.parametrize("wording", ["official", "paper"])
def test_the_prompts_take_the_official_codes_wording_or_the_papers(wording):
    engine = RecordingEngine(["m1", "Therefore, the answer is 4."])
    config = MemAgentConfig(chunk_tokens=2, memory_tokens=7, final_tokens=9, wording=wording)
    run_batched([memagent("q?", ["c1"], config)], engine, sampling=None)
    update, final = (batch[0].messages[0]["content"] for batch in engine.seen)
    paper = "Please read the section carefully and update the memory with new information"
    assert (paper in update) == (wording == "paper")  # Table 5's shorter sentence
    assert "<section>\nc1\n</section>" in update and update.endswith("Updated memory:\n")
    assert 'format your response as follows "Therefore, the answer is' in final


def test_driver_batches_workflows_of_different_lengths_and_stops_failed_ones():
    class FailingSecond(RecordingEngine):
        def chat(self, requests, sampling):
            self.seen.append(len(requests))
            return [
                Completion(text="", error="boom")
                if "FAIL" in r.messages[0]["content"]
                else Completion(text="ok")
                for r in requests
            ]

    engine = FailingSecond([])
    config = MemAgentConfig()
    workflows = [
        memagent("a", ["1", "2", "3"], config),
        memagent("FAIL", ["1"], config),
        memagent("c", [], config),
    ]
    rollouts = run_batched(workflows, engine, sampling=None)
    assert engine.seen == [3, 1, 1, 1]  # all three, then only the first one
    assert [len(r.conversations) for r in rollouts] == [4, 1, 1]
    assert [r.failed for r in rollouts] == [False, True, False]
    assert rollouts[1].answer == "" and rollouts[2].answer == "ok"


def test_token_chunks_cut_in_token_space_across_streamed_pieces():
    tokenizer = WordTokenizer()
    whole = list(token_chunks(tokenizer, ["a b c d e"], 2))
    assert whole == ["a b", "c d", "e"]
    streamed = list(token_chunks(tokenizer, ["a b c", " d e"], 2))  # pieces of one text
    assert streamed == ["a b", "c d", "e"]


def test_center_truncation_keeps_head_and_tail():
    assert center_truncate(list(range(10)), 4) == [0, 1, 8, 9]
    assert center_truncate(list(range(3)), 4) == [0, 1, 2]


def test_chunks_are_center_truncated_token_slices():
    tokenizer = CharTokenizer()
    assert truncated_chunks(tokenizer, "abcdefg", 3, 5) == ["abc", "def", "g"]
    assert truncated_chunks(tokenizer, "abcdefghij", 3, 2) == ["abc", "hij"]  # first 3 + last 3
    assert truncated_chunks(tokenizer, "", 3, 2) == []
    with pytest.raises(ValueError):
        truncated_chunks(tokenizer, "abc", 0, 2)


@pytest.fixture(scope="module")
def qwen_style_tokenizer():
    from memrepro.data.sources import fixture_corpus
    from memrepro.models.tiny import build_tokenizer

    return build_tokenizer(fixture_corpus(), 2048, 1 << 20)


def test_long_texts_are_tokenized_in_pieces_with_identical_ids(qwen_style_tokenizer):
    tokenizer = qwen_style_tokenizer
    text = "\n\n".join(
        f"Document {i}:\nThe river Vell runs {i} miles.  It floods\n in spring, and so on.\n"
        for i in range(300)
    )
    pieces = list(newline_pieces(text, max_chars=500))
    assert len(pieces) > 20 and "".join(pieces) == text
    assert all(p[0] not in " \n" for p in pieces[1:]) and all(len(p) <= 500 for p in pieces)
    whole = tokenizer.encode(text, add_special_tokens=False)
    joined = [i for p in pieces for i in tokenizer.encode(p, add_special_tokens=False)]
    assert joined == whole
    assert list(newline_pieces("x" * 2000, max_chars=500)) == ["x" * 2000]  # no safe cut
    # a stream of small texts is re-cut the same way: the ids of the whole text again
    lines = text.splitlines(keepends=True)
    streamed = list(newline_pieces(lines, max_chars=500))
    assert "".join(streamed) == text and all(len(p) <= 500 for p in streamed)
    assert [i for p in streamed for i in tokenizer.encode(p, add_special_tokens=False)] == whole


def test_context_token_counts_from_document_counts_equal_whole_text_counts(qwen_style_tokenizer):
    from memrepro.data.ruler_hqa import ContextTokens, render_context
    from memrepro.data.tokens import count_tokens

    tokenizer = qwen_style_tokenizer
    pool = [
        "Vell\nThe river Vell runs 12 miles.",  # ends in punctuation: ".\n\n" may merge
        "Quill\nIt floods in spring\n",  # ends in a newline: the separator run grows
        "Dunmore\n  Two spaces, then   more spaces  ",
        " Leading space\nis safe after the header's newline.",
        "\nLeading newline: counted whole",
        "Last\nno trailing punctuation",
    ]
    counter = ContextTokens(tokenizer, pool)
    samples = [[0, 1, 2, 3, 5], [5, 3, 2, 1, 0], [1, 4, 0], [2], [], list(range(6)) * 3]
    counter.prepare(samples)
    for ids in samples:
        expected = count_tokens(tokenizer, [render_context(ids, pool)])[0] if ids else 0
        assert counter(ids) == expected, ids
    assert count_tokens(tokenizer, ["a b", ""]) == [
        len(tokenizer.encode("a b", add_special_tokens=False)),
        0,
    ]


def test_the_counting_tokenizer_counts_as_the_transformers_tokenizer(
    qwen_style_tokenizer, tmp_path
):
    from memrepro.data.tokens import count_tokens
    from memrepro.models import load_counting_tokenizer, load_tokenizer

    qwen_style_tokenizer.save_pretrained(tmp_path)
    texts = ["Document 12:\nThe river.\n\n", "  spaces\n\n\nand newlines", "", "é ü 数字 42"]
    counting = load_counting_tokenizer(tmp_path)
    assert type(counting).__module__.startswith("tokenizers")  # no transformers needed
    expected = [len(load_tokenizer(tmp_path).encode(t, add_special_tokens=False)) for t in texts]
    assert count_tokens(counting, texts) == count_tokens(qwen_style_tokenizer, texts) == expected
