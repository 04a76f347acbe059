"""The Mem0 baseline (D.2) on the real `mem0ai` package, its LLM and embedder served by a local
OpenAI-compatible fake: facts are the sentences marked "FACT:", embeddings are word hashes."""

from __future__ import annotations

import hashlib
import json
import re
from typing import ClassVar

import pytest
from fake_http import JSONHandler, embeddings_payload, serve

from memrepro.baselines.mem0 import (  # first: it switches Mem0's telemetry off before mem0 loads
    NO_MEMORIES,
    Mem0Settings,
    Mem0Store,
    mem0_workflow,
    render_memories,
)
from memrepro.engines.base import Completion

DIMS = 64
KEY = "sk-test-mem0-key-0123456789"


def embedding(text: str) -> list[float]:
    vector = [0.0] * DIMS
    for word in re.findall(r"[a-z]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
    return vector


class OpenAIFake(JSONHandler):
    """/chat/completions: the "FACT:" sentences of the last message as Mem0's extraction JSON;
    /embeddings: word-hash vectors. Every chat request's model is recorded."""

    models: ClassVar[list[str]] = []

    def do_POST(self):
        body = self.body()
        if self.path.endswith("/embeddings"):
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            return self.reply(200, embeddings_payload(body["model"], list(map(embedding, inputs))))
        OpenAIFake.models.append(body["model"])
        text = body["messages"][-1]["content"]
        facts = [{"text": f.strip()} for f in re.findall(r"FACT: ([^.]*\.)", text)]
        content = json.dumps({"memory": facts})
        message = {"role": "assistant", "content": content}
        self.reply(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )


@pytest.fixture(scope="module")
def endpoint():
    with serve(OpenAIFake) as url:
        yield url + "/v1"


@pytest.fixture
def store(endpoint, tmp_path):
    settings = Mem0Settings(
        llm="fake-llm", embedder="fake-embed", embedding_dims=DIMS, base_url=endpoint, top_k=2
    )
    return Mem0Store(settings, api_key=KEY, store=tmp_path)


CHUNKS = [
    "The Copper Bell is a 1969 drama. FACT: Odile Fairbairn directed The Copper Bell.",
    "Nothing to note here about harbours and bands.",
    "FACT: Odile Fairbairn was born in Emberly. FACT: Emberly lies on the River Wend.",
]


def test_memories_are_built_per_chunk_and_kept_per_sample(store):
    OpenAIFake.models.clear()
    assert store.memorize("sample-0", CHUNKS) == 3
    assert set(OpenAIFake.models) == {"fake-llm"}  # Mem0's LLM, at least once per chunk
    assert len(OpenAIFake.models) >= 3
    found = store.recall("sample-0", "Where was Odile Fairbairn born?")
    assert len(found) == 2  # top_k
    assert "Odile Fairbairn was born in Emberly." in found
    assert store.recall("sample-1", "Where was Odile Fairbairn born?") == []  # another sample


def test_the_answer_is_asked_over_the_retrieved_memories(store):
    workflow = mem0_workflow("Where was she born? ", CHUNKS, store, "s", "answer_is", 16)
    request = next(workflow)
    prompt = request.messages[-1]["content"]
    assert "- Odile Fairbairn was born in Emberly." in prompt
    assert "Where was she born?" in prompt and request.max_tokens == 16
    with pytest.raises(StopIteration) as done:
        workflow.send(Completion(text="Therefore, the answer is Emberly."))
    assert done.value.value == "Therefore, the answer is Emberly."


def test_no_memory_is_shown_as_such():
    assert render_memories([]) == NO_MEMORIES
    assert render_memories(["a", "b"]) == "- a\n- b"


def test_the_evaluation_scores_mem0_rows_like_any_system(endpoint, tmp_path):
    from test_evaluation import CharTokenizer, ScriptedEngine

    from memrepro.benchmarks import Task
    from memrepro.evaluation import evaluate, summarize, workflow_runner
    from memrepro.systems.mem0 import mem0_system

    settings = Mem0Settings(
        llm="fake-llm",
        embedder="fake-embed",
        embedding_dims=DIMS,
        base_url=endpoint,
        chunk_tokens=60,
        top_k=3,
    )
    store = Mem0Store(settings, api_key=KEY, store=tmp_path / "mem0")
    task = Task("ruler_hqa", "hqa")
    rows = [
        {
            "index": i,
            "input": f"question {i}?",
            "answers": ["Paris"],
            "num_tokens": 120,
            "context": f"Filler text of row {i}. FACT: Row {i} answers Paris. " + "z" * 40,
        }
        for i in range(2)
    ]
    system = mem0_system(task, CharTokenizer(), None, store, "answer_is", 8)
    engine = ScriptedEngine()
    predictions = evaluate(
        rows, workflow_runner(task, system, engine, None), tmp_path / "p.jsonl", batch_size=2
    )
    assert [p["sub_em"] for p in predictions] == [1.0, 1.0] and engine.calls == [2]
    assert summarize(predictions, "ruler_hqa", "hqa", "mem0", 2)["accuracy"] == 100.0
    assert store.recall("hqa-1", "Which row answers Paris?") == ["Row 1 answers Paris."]
