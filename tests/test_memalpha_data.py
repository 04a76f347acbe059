"""Mem-α's rebuilt training sets as jobs and as a plan: each group built from the packaged
sources, the official filters (PerLTQA's on a fake OpenAI endpoint: GPT-4.1 cannot run here),
the merge's guards, the comparison with the released sets, and the switch that trains on them."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import ClassVar

import pytest
from fake_http import JSONHandler, serve

from memrepro import cli
from memrepro.config import BUILD_TABLE, load_config, report_inputs
from memrepro.config import memalpha_build as plan
from memrepro.data.io import read_jsonl
from memrepro.data.memalpha import instances_by_source, write_instances
from memrepro.data.memalpha_build.split import GROUPS
from memrepro.data.sources import fixture_path

REPO = Path(__file__).resolve().parents[1]
SOURCES = {
    "squad": ["memalpha_sources/squad_train.parquet"],
    "perltqa": ["memalpha_sources/perltmem_en.json", "memalpha_sources/perltqa_en.json"],
    "lme_train": ["memalpha_sources/longmemeval_oracle.json"],
    "ttl_train": ["memalpha_sources/mab_ttl.parquet"],
    "pubmed-rct": ["memalpha_sources/pubmed_rct_train.parquet"],
}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    from memrepro.models.tiny import build_tiny_model

    corpus = ["The bridge of Varn was completed by Ada Kell in 1744."] * 4
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


@pytest.fixture(scope="module")
def smoke():
    return load_config([REPO / "config/smoke.yaml"])


def settings(smoke, group: str, **changes) -> dict:
    return {**plan.source_settings(smoke, group), **changes}


def build(tokenizer_dir: Path, out: Path, group: str, s: dict, **files) -> list[dict]:
    argv = ["memalpha-source", "--settings", json.dumps(s), "--tokenizer", str(tokenizer_dir)]
    for role, paths in files.items():
        argv += [f"--{role}", *map(str, paths)]
    cli.main([*argv, "--out", str(out)])
    return read_jsonl(out)


@pytest.mark.parametrize("group", list(SOURCES))
def test_each_group_builds_from_its_packaged_source(
    smoke, tokenizer_dir, tmp_path, group, monkeypatch
):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    paths = [fixture_path(name) for name in SOURCES[group]]
    files = (
        {"memories": paths[:1], "questions": paths[1:]} if group == "perltqa" else {"rows": paths}
    )
    if group == "lme_train":
        files["exclude"] = [fixture_path("memalpha/mab.parquet")]
    rows = build(tokenizer_dir, tmp_path / "out.jsonl", group, settings(smoke, group), **files)
    assert rows and all(row["chunks"] and row["questions_and_answers"] for row in rows)
    asked = [pair["question"] for row in rows for pair in row["questions_and_answers"]]
    if group == "lme_train":  # MemoryAgentBench's own question is never drawn
        assert "What did I buy after asking for condo advice?" not in asked
    if group == "ttl_train":
        assert {row["data_source"] for row in rows} == {
            "icl_trec_coarse_6600shot_balance",
            "icl_nlu_8296shot_balance",
        }


def test_a_source_without_a_field_stops_naming_the_source_file_and_field(
    smoke, tokenizer_dir, tmp_path, monkeypatch
):
    import pyarrow.parquet as pq

    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    table = pq.read_table(fixture_path("memalpha_sources/pubmed_rct_train.parquet"))
    broken = tmp_path / "pubmed.parquet"
    pq.write_table(table.drop(["labels"]), broken)
    with pytest.raises((ValueError, SystemExit), match=r"pubmed\.parquet.*labels"):
        build(
            tokenizer_dir,
            tmp_path / "out.jsonl",
            "pubmed-rct",
            settings(smoke, "pubmed-rct"),
            rows=[broken],
        )
    assert not (tmp_path / "out.jsonl").exists()


def test_too_small_a_source_builds_nothing_and_says_so(smoke, tokenizer_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    s = settings(smoke, "squad", params={"min_questions": 1000})
    with pytest.raises(SystemExit, match=r"memalpha.build.sources.squad .*no instance built"):
        build(
            tokenizer_dir,
            tmp_path / "out.jsonl",
            "squad",
            s,
            rows=[fixture_path("memalpha_sources/squad_train.parquet")],
        )


class Answerer(JSONHandler):
    """/chat/completions: GPT-4.1 asked a PerLTQA question with its character's context; it
    answers questions on visits (with the gold's words), fails once on `FAIL_ONCE`, else "no"."""

    FAIL_ONCE: ClassVar[set[str]] = set()
    asked: ClassVar[list[str]] = []

    def do_POST(self):
        prompt = self.body()["messages"][-1]["content"]
        question = re.search(r"Question: (.*)\n\nAnswer:", prompt).group(1)
        type(self).asked.append(question)
        if question in self.FAIL_ONCE:
            self.FAIL_ONCE.discard(question)
            return self.reply(500, {"error": {"message": "overloaded"}})
        thing = re.search(r"Which (\w+) did", question)
        seen = thing and re.search(rf"visited (the {thing.group(1)} of \w+)", prompt)
        text = f"It was {seen.group(1)}." if seen else "no"
        message = {"role": "assistant", "content": text}
        self.reply(200, {"id": "x", "object": "chat.completion", "choices": [{"message": message}]})


def test_perltqa_keeps_the_questions_gpt41_answers_from_the_context_and_resumes(
    smoke, tokenizer_dir, tmp_path, monkeypatch
):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    paths = [fixture_path(name) for name in SOURCES["perltqa"]]
    built = tmp_path / "perltqa.built.jsonl"
    rows = build(
        tokenizer_dir,
        built,
        "perltqa",
        settings(smoke, "perltqa"),
        memories=paths[:1],
        questions=paths[1:],
    )
    out = tmp_path / "perltqa.kept.jsonl"
    first = rows[0]["questions_and_answers"][0]["question"]
    Answerer.FAIL_ONCE, Answerer.asked = {first}, []
    with serve(Answerer) as url:
        s = {
            "group": "perltqa",
            "filter": "answerability",
            "seed": 42,
            "params": {"min_answerable": 1},
            "model": "gpt-4.1",
            "engine": {
                "kind": "openai",
                "base_url": url + "/v1",
                "api_key": "k",
                "max_retries": 0,
                "retry_delay": 0.01,
            },
            "sampling": {"temperature": 0.0, "top_p": 1.0, "seed": None},
            "max_tokens": 100,
            "wave_size": 4,
        }
        argv = [
            "memalpha-filter",
            "--settings",
            json.dumps(s),
            "--built",
            str(built),
            "--tokenizer",
            str(tokenizer_dir),
            "--model",
            str(tokenizer_dir),
            "--out",
            str(out),
        ]
        with pytest.raises(SystemExit, match=r"1 answerability filter request\(s\) failed"):
            cli.main(argv)
        asked_first = len(Answerer.asked)
        cli.main(argv)
    assert len(Answerer.asked) == asked_first + 1  # the rerun asked only the failed one
    kept = read_jsonl(out)
    assert len(kept) == len(rows)
    for row in kept:  # the three visits stay (their golds are in the reply), the rest go
        assert [p["question"].split()[0] for p in row["questions_and_answers"]] == ["Which"] * 3
    assert not list(tmp_path.glob("*.partial"))


def test_the_merge_refuses_fewer_training_instances_than_a_step_needs(smoke, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    kept = tmp_path / "squad.kept.jsonl"
    row = {
        "prompt": "p",
        "chunks": ["c"],
        "questions_and_answers": [{"question": "q", "answer": "a"}],
        "data_source": "squad",
        "metadata": {},
    }
    kept.write_text("\n".join(json.dumps(row) for _ in range(3)) + "\n")
    s = {**plan.sets_settings(smoke), "groups": ["squad"], "min_train": 8}
    argv = [
        "memalpha-sets",
        "--settings",
        json.dumps(s),
        "--kept",
        str(kept),
        "--train",
        str(tmp_path / "train.parquet"),
        "--validation",
        str(tmp_path / "validation.parquet"),
    ]
    with pytest.raises(SystemExit, match=r"2 training instances, fewer than one step's"):
        cli.main(argv)
    assert not (tmp_path / "train.parquet").exists()
    cli.main([*argv[:2], json.dumps({**s, "min_train": 2}), *argv[3:]])
    train = instances_by_source(tmp_path / "train.parquet")["squad"]
    assert [row["instance_id"] for row in train] == [0, 1]


def test_written_instances_read_back_as_the_released_schema(tmp_path):
    row = {
        "instance_id": 0,
        "prompt": "p",
        "chunks": ["a", "b"],
        "data_source": "booksum",
        "questions_and_answers": [{"question": "Summarize", "answer": "x, y"}],
        "metadata": {"gold": "keywords"},
    }
    write_instances(tmp_path / "s.parquet", [row])
    back = instances_by_source(tmp_path / "s.parquet")["booksum"][0]
    assert (back["chunks"], back["questions"], back["answers"]) == (
        ["a", "b"],
        ["Summarize"],
        ["x, y"],
    )


def test_the_paper_plan_plans_the_rebuild_and_trains_on_the_release_by_default():
    paper = load_config([REPO / "config/config.yaml"])
    assert sorted(plan.build_groups(paper)) == sorted(GROUPS)
    assert report_inputs(paper, BUILD_TABLE) == [str(plan.comparison_file(paper))]
    assert plan.training_data(paper, "train").name == "memalpha_train.parquet"
    # the official recipe filters SQuAD and HotpotQA closed-book and PerLTQA by answerability
    kinds = {group: plan.filter_kind(paper, group) for group in GROUPS}
    assert {g: k for g, k in kinds.items() if k} == {
        "squad": "closed_book",
        "hotpotqa": "closed_book",
        "perltqa": "answerability",
    }
    assert plan.source_inputs(paper, "lme_train")["exclude"] == [plan.memalpha_data(paper, "mab")]
    rebuilt = copy.deepcopy(paper)
    rebuilt["memalpha"]["training"]["data"] = "rebuilt"
    assert plan.training_data(rebuilt, "train") == plan.built_split(rebuilt, "train")
    assert plan.training_data(rebuilt, "memalpha") == plan.built_split(rebuilt, "memalpha")
    rebuilt["memalpha"]["build"]["recipe"] = "paper"
    assert not any(plan.filter_kind(rebuilt, group) for group in GROUPS)
    assert plan.sets_settings(rebuilt)["ratios"] == {}
    assert plan.sets_settings(paper)["ratios"] == {"lme_train": 1.0}


def _unknown_source(config: dict) -> None:
    config["memalpha"]["build"]["sources"]["squad"] = ["nowhere"]


def _unknown_model(config: dict) -> None:
    config["memalpha"]["build"]["closed_book"]["model"] = "gpt-9"


def _rebuilt_without_keywords(config: dict) -> None:
    config["memalpha"]["training"]["data"] = "rebuilt"
    del config["keywords"]


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (_unknown_source, r"memalpha.build.sources.squad: no source \['nowhere'\]"),
        (_unknown_model, r"memalpha.build.closed_book.model: 'gpt-9' is not a models key"),
        (_rebuilt_without_keywords, r"'rebuilt' trains on BookSum, whose keyword golds"),
    ],
)
def test_a_rebuild_the_config_cannot_make_is_refused_naming_its_key(smoke, change, error):
    from memrepro.layout import ConfigError

    config = copy.deepcopy(smoke)
    change(config)
    with pytest.raises(ConfigError, match=error):
        plan.check_build(config)


def test_the_released_checkpoints_plan_rebuilds_no_training_set():
    released = load_config([REPO / "config/config.yaml", REPO / "config/eval-released.yaml"])
    assert not released["memalpha"]["training"]["runs"]
    assert plan.build_groups(released) == []
    assert report_inputs(released, BUILD_TABLE) == []
