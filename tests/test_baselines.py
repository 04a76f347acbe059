"""Baselines: direct long-context generation (prompt, middle truncation, engine settings) and RAG
top-K (units, BM25 and dense retrieval, the workflow, system ids)."""

from __future__ import annotations

import inspect
import pickle
import random
import re
from types import SimpleNamespace
from typing import ClassVar

import pytest
from fake_http import JSONHandler, embeddings_payload, serve

from memrepro.agents.driver import run_batched
from memrepro.agents.retrieval import BM25Retriever
from memrepro.baselines.longcontext import (
    DropConfigKeys,
    longcontext,
    middle_truncate,
    official_prompt,
    rope_engine_settings,
)
from memrepro.baselines.rag import (
    DenseRetriever,
    document_units,
    make_retriever,
    rag,
    token_units,
)
from memrepro.data.hotpotqa import build_pool, load_hotpotqa
from memrepro.data.ruler_hqa import iter_context_pieces, render_context
from memrepro.data.sources import fixture_path
from memrepro.engines.base import Completion
from memrepro.engines.vllm import VLLMEngine


class WordTokenizer:
    """One token per space-separated word; optionally a BOS like R1-Distill's tokenizer."""

    def __init__(self, bos: bool = False) -> None:
        self.bos = bos

    def encode(self, text, add_special_tokens=False):
        return (["<s>"] if self.bos and add_special_tokens else []) + text.split(" ")

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(i for i in ids if not (skip_special_tokens and i == "<s>"))


class RecordingEngine:
    def __init__(self, reply: str) -> None:
        self.tokenizer = WordTokenizer()
        self.reply, self.seen = reply, []

    def chat(self, requests, sampling):
        self.seen.append(list(requests))
        return [Completion(text=self.reply) for _ in requests]


WORDS = " ".join(f"w{i}" for i in range(10))


# --- long-context baseline ---------------------------------------------------------------------


def test_official_prompt_layout():
    assert official_prompt("  the text \n", "\n who? ") == (
        "Please read the following text and answer the question below.\n\n"
        "<text>\nthe text\n</text>\n\n"
        "who?\n\n"
        'Format your response as follows: "Therefore, the answer is (insert answer here)".'
    )


def test_middle_truncation_keeps_head_and_tail_halves():
    tok = WordTokenizer()
    assert middle_truncate(tok, WORDS, 4) == "w0 w1 w8 w9"
    assert middle_truncate(tok, WORDS, 5) == "w0 w1 w7 w8 w9"  # odd: the tail gets the extra one
    assert middle_truncate(tok, WORDS, 1) == "w9"
    spaced = "a  b"  # would not survive an encode/decode round trip
    assert middle_truncate(tok, spaced, 3) is spaced
    assert middle_truncate(tok, WORDS, 10) is WORDS
    with pytest.raises(ValueError, match="positive"):
        middle_truncate(tok, WORDS, 0)


@pytest.mark.parametrize("max_len", range(1, 12))
def test_middle_truncation_matches_the_official_slicing(max_len):
    tok = WordTokenizer(bos=True)  # the BOS counts in the head half, then decode drops it
    ids = tok.encode(WORDS, add_special_tokens=True)
    expected = ids if len(ids) <= max_len else ids[: max_len // 2] + ids[-max_len // 2 :]
    got = middle_truncate(tok, WORDS, max_len)
    assert got == (WORDS if len(ids) <= max_len else tok.decode(expected, True))


def test_longcontext_is_one_request_with_the_output_budget():
    engine = RecordingEngine("Therefore, the answer is w9.")
    workflow = longcontext(WORDS, engine.tokenizer, max_input_tokens=4, max_output_tokens=7)
    [rollout] = run_batched([workflow], engine, sampling=None)
    [[request]] = engine.seen
    assert request.messages == ({"role": "user", "content": "w0 w1 w8 w9"},)
    assert request.max_tokens == 7
    assert rollout.answer == "Therefore, the answer is w9." and len(rollout.conversations) == 1
    with pytest.raises(ValueError, match="positive"):
        next(longcontext(WORDS, engine.tokenizer, max_input_tokens=4, max_output_tokens=0))


def test_yarn_settings_carry_the_post_yarn_max_positions():
    setup = rope_engine_settings("yarn", max_model_len=131072)
    assert setup.env == {} and "YaRN" in setup.note
    assert setup.settings == {
        "hf_overrides": {
            "rope_parameters": {
                "rope_type": "yarn",
                "factor": 4.0,
                "original_max_position_embeddings": 32768,
                "rope_theta": 1e6,
            },
            "max_position_embeddings": 131072,
        },
        "max_model_len": 131072,
    }
    assert rope_engine_settings("none", max_model_len=None).settings == {}
    engine_args = inspect.signature(VLLMEngine).parameters  # the settings are VLLMEngine kwargs
    assert {"hf_overrides", "max_model_len"} <= set(engine_args)
    with pytest.raises(ValueError, match="exceeds the YaRN window"):
        rope_engine_settings("yarn", max_model_len=131073)
    with pytest.raises(ValueError, match="needs a positive max_model_len"):
        rope_engine_settings("yarn", max_model_len=None)
    with pytest.raises(ValueError, match="unknown context extension"):
        rope_engine_settings("ntk", max_model_len=131072)


def test_dca_is_refused_and_no_dca_drops_the_config_key():
    with pytest.raises(ValueError, match=r"not available in vLLM 0\.33.*'no_dca'"):
        rope_engine_settings("dca", max_model_len=1_010_000)
    setup = rope_engine_settings("no_dca", max_model_len=1_010_000)
    drop = setup.settings["hf_overrides"]
    assert setup.settings["max_model_len"] == 1_010_000 and setup.env == {}
    assert drop == DropConfigKeys(("dual_chunk_attention_config",))
    assert pickle.loads(pickle.dumps(drop)) == drop  # it travels to vLLM's engine process
    config = SimpleNamespace(dual_chunk_attention_config={"chunk_size": 262144}, rope_theta=1e7)
    assert drop(config) is config
    assert not hasattr(config, "dual_chunk_attention_config") and config.rope_theta == 1e7
    assert vars(drop(config)) == {"rope_theta": 1e7}  # absent key: a no-op


# --- RAG units ---------------------------------------------------------------------------------

POOL = [
    "Velmora\nVelmora is a glass city on the river Quill.",
    "Tarn Abbey\nThe abbey library is cited as Document 12: see its catalogue.",
    "Odd layout\nA quoted line:\n\nDocument 7:\nwhich is not a new document here.",
    "Brass Lantern Society\nA club of lamp makers founded in 1871.",
]


def test_documents_split_at_their_headers_only():
    doc_ids = [2, 0, 1, 3] * 3 + [2]  # 13 documents: "Document 7:"/"12:" are real numbers
    context = render_context(doc_ids, POOL)
    units = document_units(context)
    assert units == [f"Document {i}:\n{POOL[d]}" for i, d in enumerate(doc_ids, start=1)]
    assert "\n\n".join(units) == context


def test_document_pieces_agree_with_the_text():
    pool = build_pool(load_hotpotqa(fixture_path("hotpot_dev_fixture.json")))
    doc_ids = [*range(12, 42), 0, 1]
    context = render_context(doc_ids, pool)
    units = document_units(context)
    assert len(units) == len(doc_ids) and "\n\n".join(units) == context
    assert document_units(iter_context_pieces(doc_ids, pool)) == units
    rng = random.Random(0)  # pieces cut anywhere, headers included
    cuts = sorted(rng.sample(range(1, len(context)), 300))
    pieces = [context[a:b] for a, b in zip([0, *cuts], [*cuts, len(context)], strict=True)]
    assert document_units(iter(pieces)) == units
    with pytest.raises(ValueError, match="not a RULER-HQA context"):
        document_units("Passage 1:\nsome text")


def test_token_units_are_fixed_token_chunks():
    assert token_units(WordTokenizer(), "a b c d e", 2) == ["a b", "c d", "e"]
    assert token_units(WordTokenizer(), ["a b", " c d"], 3) == ["a b c", "d"]  # streamed text
    with pytest.raises(ValueError):
        token_units(WordTokenizer(), "a b", 0)


# --- retrievers --------------------------------------------------------------------------------

UNITS = [
    "The Brass Lantern Society meets every spring in a converted mill.",
    "Velmora, the glass city, sits where the river Quill meets the sea.",
    "Copper kettles were traded along the northern salt road.",
    "The abbey library keeps a catalogue of sea charts.",
    "A lighthouse keeper painted the cliffs of Dunmore each winter.",
]
QUESTION = "Which river flows through the glass city of Velmora?"


def test_bm25_ranks_the_relevant_unit_first_and_breaks_ties_by_index():
    bm25 = BM25Retriever()
    assert bm25.top_k(QUESTION, UNITS, 2)[0] == 1
    ranked = bm25.top_k(QUESTION, UNITS, 50)  # k larger than the units: all of them
    assert sorted(ranked) == list(range(5)) and ranked[0] == 1
    assert bm25.top_k("zebra xylophone", UNITS, 3) == [0, 1, 2]  # all scores 0: index order
    assert bm25.top_k(QUESTION, [], 3) == [] and bm25.top_k(QUESTION, ["", "..."], 5) == [0, 1]
    for k in (0, -1, True):
        with pytest.raises(ValueError, match="positive integer"):
            bm25.top_k(QUESTION, UNITS, k)


def test_dense_retriever_with_the_packaged_minilm():
    dense = DenseRetriever(batch_size=2, device="cpu")
    ranked = dense.top_k(QUESTION, UNITS, 10)
    assert ranked[0] == 1 and sorted(ranked) == list(range(5))
    assert dense.top_k("Who paints the Dunmore cliffs?", UNITS, 1) == [4]
    assert dense.top_k(QUESTION, [], 2) == []


def test_make_retriever_by_name():
    bm25 = make_retriever("bm25", k1=1.2)
    assert isinstance(bm25, BM25Retriever) and bm25.k1 == 1.2
    dense = make_retriever("dense", batch_size=8)
    assert isinstance(dense, DenseRetriever) and dense._model is None  # loaded on first use
    with pytest.raises(ValueError, match="unknown retriever"):
        make_retriever("tfidf")


# --- RAG workflow and system ids ---------------------------------------------------------------


class FixedRetriever:
    def __init__(self, ranking):
        self.ranking, self.queries = ranking, []

    def top_k(self, query, units, k):
        self.queries.append(query)
        return self.ranking[:k]


def test_rag_shows_the_retrieved_units_in_context_order():
    engine = RecordingEngine("Therefore, the answer is Quill.")
    retriever = FixedRetriever([3, 0, 2])
    render = lambda text: official_prompt(text, "q?")  # noqa: E731
    workflow = rag(" q? ", ["u0", "u1", "u2", "u3"], retriever, 2, render, engine.tokenizer, 99, 9)
    [rollout] = run_batched([workflow], engine, sampling=None)
    [[request]] = engine.seen
    assert retriever.queries == ["q?"]
    assert request.messages[0]["content"] == official_prompt("u0\n\nu3", "q?")
    assert "<text>\nu0\n\nu3\n</text>" in request.messages[0]["content"]
    assert request.max_tokens == 9 and rollout.answer == "Therefore, the answer is Quill."
    with pytest.raises(ValueError, match="positive integer"):
        next(rag("q?", ["u0"], retriever, 0, render, engine.tokenizer, 99, 9))


def test_rag_over_document_units_with_bm25():
    engine = RecordingEngine("Therefore, the answer is Quill.")
    units = document_units(render_context([3, 1, 0, 2], POOL))
    render = lambda text: official_prompt(text, QUESTION)  # noqa: E731
    workflow = rag(QUESTION, units, BM25Retriever(), 1, render, engine.tokenizer, 10**6, 5)
    run_batched([workflow], engine, None)
    prompt = engine.seen[0][0].messages[0]["content"]
    assert f"<text>\nDocument 3:\n{POOL[0]}\n</text>" in prompt


# --- the paper's embedding retriever, against a local OpenAI-compatible /embeddings -----------

VOCAB = ("paris", "france", "capital", "berlin", "germany", "river", "seine")
EMBED_KEY = "sk-test-embedding-key-0123456789"


class EmbeddingStub(JSONHandler):
    """/v1/embeddings: a bag of VOCAB words per input, in reverse order with its `index` (as the
    API may); model "refuse" answers 401 echoing the key; every request is counted."""

    requests: ClassVar[list[list[str]]] = []

    def do_POST(self):
        body = self.body()
        if body["model"] == "refuse":
            key = self.headers["Authorization"].removeprefix("Bearer ")
            return self.reply(401, {"error": {"message": f"Incorrect API key provided: {key}"}})
        EmbeddingStub.requests.append(body["input"])
        payload = embeddings_payload(body["model"], list(map(bag_of_words, body["input"])))
        payload["data"].reverse()  # the order is the items' `index`, not the list's
        self.reply(200, payload)


def bag_of_words(text: str) -> list[float]:
    words = re.findall(r"[a-z]+", text.lower())
    return [float(words.count(w)) + 0.01 for w in VOCAB]


@pytest.fixture(scope="module")
def embeddings():
    with serve(EmbeddingStub) as url:
        yield url + "/v1"


def test_openai_embedding_retriever_ranks_batches_and_embeds_each_text_once(embeddings):
    EmbeddingStub.requests.clear()
    retriever = make_retriever(
        "openai", base_url=embeddings, api_key=EMBED_KEY, batch_size=2, max_retries=0
    )
    units = ["Berlin is in Germany.", "The Seine river.", "Paris is the capital of France."]
    assert retriever.top_k("What is the capital of France?", units, 2) == [2, 0]
    assert [len(batch) for batch in EmbeddingStub.requests] == [2, 1, 1]  # 3 units, the query
    assert retriever.top_k("Which river?", units, 1) == [1]
    assert EmbeddingStub.requests[-1] == ["Which river?"]  # the units came from the cache
    assert retriever.top_k("anything", [], 3) == []


def test_openai_embedding_retriever_failure_names_the_endpoint_never_the_key(embeddings):
    retriever = make_retriever(
        "openai", model="refuse", base_url=embeddings, api_key=EMBED_KEY, max_retries=0
    )
    with pytest.raises(
        RuntimeError, match=r"embeddings of 'refuse' at http://127\.0\.0\.1"
    ) as error:
        retriever.top_k("q", ["a unit"], 1)
    assert EMBED_KEY not in str(error.value)
