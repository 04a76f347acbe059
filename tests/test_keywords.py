"""Mem-α's Figure 4: keyword golds extracted again from the original summaries and set beside the
released ones (memrepro.data.keywords, `memrepro keywords`, the memalpha_keywords table)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fake_http import JSONHandler, serve

from memrepro.config import KEYWORDS_TABLE
from memrepro.data import keywords as kw
from memrepro.data.io import read_jsonl
from memrepro.data.sources import fixture_path
from memrepro.report.cells import DASH
from memrepro.report.keywords import build_keywords_table, load_keyword_rows
from memrepro.report.tables import write_paper_table

BOOKSUM = fixture_path("memalpha/booksum_chapters.parquet")
MAB_LRU = fixture_path("memalpha/mab_lru.parquet")
VALIDATION = fixture_path("memalpha/validation.parquet")
MAB = fixture_path("memalpha/mab.parquet")


def test_a_reply_is_split_on_commas_stripped_and_deduplicated_ignoring_case():
    reply = " Oren, lamplighter ,, Ladder, oren, driftwood,\n"
    assert kw.keyword_list(reply) == ["Oren", "lamplighter", "Ladder", "driftwood"]
    assert kw.keyword_list("") == []


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("", "no keywords"),
        (None, "no keywords"),  # a null message content
        (" \n\t", "no keywords"),
        (" , ,,", "no keywords"),
        ("I'm sorry, I can't help with that.", '"I can\'t help with that." ends a sentence'),
        ("Oren, ladder. Hope this helps!", "'ladder. Hope this helps!' ends a sentence"),
        ("Keywords:\n- Oren\n- ladder", "a line break"),
        ("Oren, the lamplighter who lost his ladder in Varn", "has 8 words"),
    ],
)
def test_a_reply_that_is_not_the_keyword_list_the_prompt_asks_for_is_refused(reply, why):
    assert why in kw.reply_problem(reply)


def test_a_keyword_list_in_the_prompts_format_is_accepted():
    for prompt in (kw.SUMMARY_PROMPT, kw.ANSWERS_PROMPT):  # each prompt's own example
        assert kw.reply_problem(prompt.split("Keywords: ")[1].split("\n")[0]) is None
    assert kw.reply_problem(" Washington D.C., Mr. Darcy, J. R. R., 1813 novel\n") is None


def test_the_prompts_wrap_the_summary_as_the_paper_and_the_official_scripts_word_them():
    system, user = kw.messages("official", "booksum", "Oren loses his ladder.")
    assert system["content"] == kw.SUMMARY_SYSTEM
    assert user["content"].startswith("Analyze the following book summary")
    assert "Now analyze this summary:\nOren loses his ladder.\n\nExtract" in user["content"]
    assert "{text}" not in user["content"]
    official = kw.messages("official", "mab", "Lio carries salt.")
    paper = kw.messages("paper", "mab", "Lio carries salt.")
    assert official[1]["content"].startswith("Analyze the following answers")
    assert "9. Specific facts" in official[1]["content"]
    assert paper == kw.messages("paper", "booksum", "Lio carries salt.")  # Figure 4 for both


def test_the_originals_are_read_in_the_hubs_schemas():
    [oren, ada] = kw.read_originals("booksum", BOOKSUM, "booksum")
    assert oren["summary"].startswith("Oren, the lamplighter of Varn")
    assert ada["key"] == "booksum_chapters.parquet#1"
    # MemoryAgentBench: only the rows of the named source, their gold summaries as the text
    [lio] = kw.read_originals("mab", MAB_LRU, "infbench_sum_eng_shots2")
    assert lio["summary"].startswith("Lio, a ferryman") and lio["key"].endswith("#0")
    assert kw.read_originals("mab", MAB_LRU, "no_such_source") == []
    with pytest.raises(ValueError, match="unknown kind"):
        kw.read_originals("novels", BOOKSUM, "booksum")


def test_a_chapter_without_a_summary_is_named(tmp_path):
    bad = tmp_path / "chapters.parquet"
    pq.write_table(pa.Table.from_pylist([{"text": "Some text.", "summary": []}]), bad)
    with pytest.raises(ValueError, match=r"chapters.parquet: row 0, summary"):
        kw.read_originals("booksum", bad, "booksum")
    torn = tmp_path / "lru.parquet"
    row = {"context": "A book.", "answers": [["A summary."]], "metadata": '{"source": '}
    pq.write_table(pa.Table.from_pylist([row]), torn)
    with pytest.raises(ValueError, match=r"lru.parquet: row 0, metadata: not valid JSON"):
        kw.read_originals("mab", torn, "infbench_sum_eng_shots2")


def test_released_instances_carry_their_keyword_gold_and_first_reading():
    [instance] = kw.released_instances(VALIDATION, "memalpha", "booksum")
    assert instance["released"] == ["Oren", "lamplighter", "ladder", "driftwood"]
    assert instance["reading"] == "Chapter one: the lamplighter Oren loses his ladder in Varn."
    [lio] = kw.released_instances(MAB, "mab", "infbench_sum_eng_shots2")
    assert lio["released"] == ["Lio", "ferryman", "salt", "boat", "town"]  # a list gold


def test_an_instance_matches_the_original_its_reading_begins():
    originals = [
        {"key": "a", "text": "Chapter one:\n the  miller  Ada counts salt.", "summary": "Ada."},
        {"key": "b", "text": "Chapter one: the lamplighter Oren.", "summary": "Oren."},
        {"key": "c", "text": "Chapter one: the lamplighter Oren.", "summary": "Oren."},  # a copy
        {"key": "d", "text": "Twins. One.", "summary": "One."},
        {"key": "e", "text": "Twins. Two.", "summary": "Two."},
    ]
    readings = ["Chapter one: the miller Ada", "Chapter one: the lamplighter", "Twins.", "Absent"]
    found = kw.match([{"reading": r} for r in readings], originals)
    assert [f and f["key"] for f in found] == ["a", "b", None, None]  # ambiguous, unmatched
    long = "word " * 100
    exact = kw.match([{"reading": kw.reading(long)}], [{"key": "x", "text": long, "summary": "s"}])
    assert exact[0]["key"] == "x"


def test_agreement_ignores_case_and_order():
    assert kw.agreement(["Oren", "ladder"], ["ladder", "oren"]) == {
        "same": True,
        "jaccard": 1.0,
        "recall": 1.0,
    }
    result = kw.agreement(["Oren", "ladder", "Varn"], ["oren", "boat"])
    assert result == {"same": False, "jaccard": 0.25, "recall": pytest.approx(1 / 3)}


# --- the job, on an OpenAI-compatible endpoint (a hosted model cannot run here) ---------------


class Extractor(JSONHandler):
    """/chat/completions: the capitalised words of the summary as a keyword list; a summary
    that names anyone in `FAILING` answers 500, one that names a key of `REPLIES` its reply."""

    FAILING: ClassVar[set[str]] = set()
    REPLIES: ClassVar[dict[str, str | None]] = {}
    summaries: ClassVar[list[str]] = []

    def do_POST(self):
        prompt = self.body()["messages"][-1]["content"]
        summary = re.search(
            r"analyze (?:this summary|these answers):\n(.*?)\n\nExtract", prompt, re.S
        )
        text = summary.group(1)
        type(self).summaries.append(text)
        if any(name in text for name in self.FAILING):
            return self.reply(500, {"error": {"message": "overloaded"}})
        words = ", ".join(re.findall(r"\b[A-Z][a-z]+\b", text))
        named = [reply for name, reply in self.REPLIES.items() if name in text]
        message = {"role": "assistant", "content": named[0] if named else words}
        self.reply(200, {"id": "x", "object": "chat.completion", "choices": [{"message": message}]})


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    from memrepro.models.tiny import build_tiny_model

    corpus = ["Oren the lamplighter loses his ladder in Varn."] * 4
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


def run_keywords(
    tokenizer_dir: Path, url: str, out: Path, released: list[Path], reproduces: bool = True
) -> None:
    from memrepro import cli

    settings = {
        "set": "booksum",
        "kind": "booksum",
        "released": ["train", "memalpha"][: len(released)],
        "model": "gpt-4.1",
        "reproduces": reproduces,
        "engine": {
            "kind": "openai",
            "base_url": url,
            "api_key": "k",
            "max_retries": 0,
            "retry_delay": 0.01,
        },
        "prompt": "official",
        "sampling": {"temperature": 0.1, "top_p": 1.0, "seed": None},
        "max_tokens": 64,
        "wave_size": 1,
    }
    argv = ["keywords", "--settings", json.dumps(settings), "--summaries", str(BOOKSUM)]
    argv += ["--released", *map(str, released), "--model", str(tokenizer_dir), "--out", str(out)]
    cli.main(argv)


def release(tmp_path: Path, reading: str, gold: str) -> Path:
    """A released split of one booksum instance whose first chunk reads `reading`."""
    chunk = (
        f"[Event happened on 2024-05-01 The user is reading a book]\n<User> {reading}\n\n"
        "<System> Please remember it."
    )
    qa = [{"question": "Summarize the content of the book I read", "answer": gold}]
    row = {
        "instance_id": 0,
        "prompt": "",
        "chunks": json.dumps([chunk]),
        "questions_and_answers": json.dumps(qa),
        "data_source": "booksum",
        "metadata": "{}",
        "num_chunks": 1,
        "num_questions": 1,
    }
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    return path


def ada_and_oren(tmp_path: Path) -> tuple[Path, list[Path]]:
    """The job's output path, and two released sets: Ada's chapter (train) and the validation."""
    ada_chapter = "Chapter one: the miller Ada counts sacks of salt at Caldre."
    released = [release(tmp_path, ada_chapter, "Ada, Caldre"), VALIDATION]
    return tmp_path / "keywords" / "booksum.jsonl", released


def test_the_job_rebuilds_each_matched_instance_and_resumes_after_a_failure(
    tmp_path, tokenizer_dir, monkeypatch
):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    out, released = ada_and_oren(tmp_path)
    Extractor.FAILING, Extractor.summaries = {"Oren"}, []
    with serve(Extractor) as url:
        with pytest.raises(SystemExit, match=r"1 keyword request\(s\) failed"):
            run_keywords(tokenizer_dir, url + "/v1", out, released)
        assert not out.exists() and len(Extractor.summaries) == 2
        Extractor.FAILING = set()
        run_keywords(tokenizer_dir, url + "/v1", out, released)
    # the rerun asked again only for the summary that failed
    assert [s.split(",")[0] for s in Extractor.summaries] == [
        "Ada the miller counts salt at Caldre.",
        "Oren",
        "Oren",
    ]
    ada, oren = read_jsonl(out)
    assert (ada["split"], ada["rebuilt"], ada["same"]) == ("train", ["Ada", "Caldre"], True)
    assert oren["rebuilt"] == ["Oren", "Varn"] and oren["recall"] == 0.25
    assert not list(out.parent.glob("*.partial"))
    table = build_keywords_table(read_jsonl(out))
    assert table.loc["booksum (train)", "Same keywords"] == "1 of 1 (100 %)"
    assert table.loc["booksum (validation)", "Released keywords rebuilt"] == "25 %"
    assert "banner" not in table.attrs  # GPT-4.1 (a hosted model) can reproduce
    md = tmp_path / "memalpha_keywords.md"
    write_paper_table(KEYWORDS_TABLE, table, md.with_suffix(""), "Figure 4")
    assert "| booksum (train) | 1 | 1 of 1 | 1 of 1 (100 %) |" in md.read_text()


def test_a_random_models_keywords_open_with_the_machinery_banner():
    rows = [
        {
            "set": "booksum",
            "model": "tiny",
            "reproduces": False,
            "prompt": "paper",
            "split": "mab",
            "released": ["A"],
            "rebuilt": None,
        }
    ]
    table = build_keywords_table(rows)
    assert table.loc["booksum (MemoryAgentBench)", "Matched to an original"] == "0 of 1"
    assert table.attrs["banner"].startswith("Machinery check only")
    assert "the paper's Figure 4 for every source" in table.attrs["notes"][0]


def test_released_instances_that_match_no_original_stop_the_job(
    tmp_path, tokenizer_dir, monkeypatch
):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    released = [release(tmp_path, "A chapter no original holds.", "Nobody")]
    with serve(Extractor) as url, pytest.raises(SystemExit, match="begins an original text"):
        run_keywords(tokenizer_dir, url + "/v1", tmp_path / "o.jsonl", released)


@pytest.mark.parametrize("reply", ["", None, "  \n", ",, ,", "I'm sorry, I can't help with that."])
def test_a_refused_reply_fails_the_job_naming_its_instance_and_a_rerun_asks_only_for_it(
    tmp_path, tokenizer_dir, monkeypatch, caplog, reply
):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    out, released = ada_and_oren(tmp_path)
    Extractor.FAILING, Extractor.REPLIES, Extractor.summaries = set(), {"Oren": reply}, []
    with serve(Extractor) as url:
        with pytest.raises(SystemExit, match=r"1 keyword request\(s\) failed") as failure:
            run_keywords(tokenizer_dir, url + "/v1", out, released)
        assert "booksum_chapters.parquet#0 (memalpha row 6): reply refused" in str(failure.value)
        assert not out.exists()
        Extractor.REPLIES = {}
        run_keywords(tokenizer_dir, url + "/v1", out, released)
    assert [s.split(" ")[0] for s in Extractor.summaries] == ["Ada", "Oren,", "Oren,"]
    ada, oren = read_jsonl(out)
    assert ada["rebuilt"] == ["Ada", "Caldre"] and oren["rebuilt"] == ["Oren", "Varn"]


@pytest.mark.parametrize("damage", ['{"key": "booksum_chapters.parquet#0", "re', "garbage\n"])
def test_a_damaged_resume_line_is_dropped_with_a_warning_and_its_instance_asked_again(
    tmp_path, tokenizer_dir, monkeypatch, caplog, damage
):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    out, released = ada_and_oren(tmp_path)
    Extractor.FAILING, Extractor.REPLIES, Extractor.summaries = {"Oren"}, {}, []
    with serve(Extractor) as url:
        with pytest.raises(SystemExit, match="failed"):
            run_keywords(tokenizer_dir, url + "/v1", out, released)
        [partial] = out.parent.glob("*.partial")
        with partial.open("a") as handle:  # the killed job's write, or a line of garbage
            handle.write(damage)
        Extractor.FAILING = set()
        with caplog.at_level(logging.WARNING):
            run_keywords(tokenizer_dir, url + "/v1", out, released)
    assert f"{partial}:2" in caplog.text
    assert [s.split(" ")[0] for s in Extractor.summaries] == ["Ada", "Oren,", "Oren,"]
    assert [row["rebuilt"] for row in read_jsonl(out)] == [["Ada", "Caldre"], ["Oren", "Varn"]]


def test_a_machinery_models_refused_replies_are_kept_and_counted_apart_in_the_table(
    tmp_path, tokenizer_dir, monkeypatch
):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    out, released = ada_and_oren(tmp_path)
    refusal = "I'm sorry, I can't help with that."
    Extractor.FAILING, Extractor.REPLIES, Extractor.summaries = set(), {"Oren": refusal}, []
    with serve(Extractor) as url:
        run_keywords(tokenizer_dir, url + "/v1", out, released, reproduces=False)
    ada, oren = load_keyword_rows([out])
    assert ada["refused"] is None and "can't help with that.\" ends a sentence" in oren["refused"]
    table = build_keywords_table([ada, oren])
    assert table.loc["booksum (train)", "Refused replies"] == "0 of 1"
    validation = table.loc["booksum (validation)"]
    assert (validation["Matched to an original"], validation["Refused replies"]) == ("1 of 1",) * 2
    assert validation["Mean Jaccard"] == validation["Same keywords"] == DASH  # not read as 0 %
    assert "A machinery model's are kept, counted here" in table.attrs["notes"][2]


def test_a_file_with_a_rebuilt_list_no_accepted_reply_gives_stops_the_table(tmp_path):
    row = {
        "set": "booksum",
        "model": "gpt-4.1",
        "reproduces": True,
        "prompt": "official",
        "split": "memalpha",
        "index": 3,
        "released": ["Oren"],
        "original": "booksum_chapters.parquet#0",
        "rebuilt": ["Oren"],
        **kw.agreement(["Oren"], ["Oren"]),
    }
    table = build_keywords_table(load_keyword_rows([write_rows(tmp_path / "ok.jsonl", [row])]))
    assert table.loc["booksum (validation)", "Refused replies"] == "0 of 1"
    for rebuilt in ([], ["I'm sorry", "I can't help with that."]):  # what the old job wrote
        stale = write_rows(tmp_path / "stale.jsonl", [{**row, "rebuilt": rebuilt}])
        with pytest.raises(ValueError, match=rf"{stale}: memalpha row 3, rebuilt: refused"):
            load_keyword_rows([stale])


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path
