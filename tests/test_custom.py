"""One's own data as a benchmark: the schema and its errors, the metrics, the plan of every
system, instances grouped by context."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memrepro import config as cfg
from memrepro.benchmarks import CUSTOM_BENCHMARK, benchmark
from memrepro.data.custom import CustomDataError, group_by_context, read_custom_rows, with_context
from memrepro.scoring.answers import METRICS, score_answers

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples/custom"
GOOD = {
    "id": "a",
    "context": "Ada wrote the first program.",
    "question": "Who?",
    "answers": ["Ada"],
}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_examples_rows_read_as_evaluation_rows():
    rows = read_custom_rows(EXAMPLE / "long_qa.jsonl")
    assert [row["index"] for row in rows] == list(range(8))
    assert rows[0]["id"] == "harbor-1" and rows[0]["input"].startswith("Who built")
    assert rows[0]["task_label"] == "history" and "task_label" not in rows[4]
    documents = with_context(rows[6])
    assert documents["context"].startswith("Document 1:\n") and len(documents["documents"]) == 3
    assert with_context(rows[0])["documents"] == [rows[0]["context"]]
    # three contexts: the questions of each are asked after it is read
    assert [len(group) for group in group_by_context(rows)] == [3, 3, 2]


def test_a_parquet_file_reads_as_the_same_rows(tmp_path):
    rows = [GOOD, {"id": "b", "documents": ["one", "two"], "question": "Q?", "answers": ["x", "y"]}]
    table = pa.Table.from_pylist(
        [{"context": None, "documents": None, **row} for row in rows],
        schema=pa.schema(
            [
                ("id", pa.string()),
                ("context", pa.string()),
                ("documents", pa.list_(pa.string())),
                ("question", pa.string()),
                ("answers", pa.list_(pa.string())),
            ]
        ),
    )
    pq.write_table(table, tmp_path / "data.parquet")
    read = read_custom_rows(tmp_path / "data.parquet")
    assert read[1]["documents"] == ["one", "two"] and read[0]["context"] == GOOD["context"]


def test_a_truncated_or_foreign_parquet_file_is_one_sentence_naming_it(tmp_path):
    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist([GOOD]), path)
    path.write_bytes(path.read_bytes()[:-40])  # cut short, as a killed copy leaves it
    with pytest.raises(CustomDataError, match=r"data\.parquet: not a readable parquet file"):
        read_custom_rows(path)
    path.write_text(json.dumps(GOOD) + "\n")  # JSONL under a .parquet name
    with pytest.raises(CustomDataError, match=r"data\.parquet: not a readable parquet file"):
        read_custom_rows(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question": None}, r"data.jsonl:2: field 'question' is missing"),
        ({"answers": []}, r"data.jsonl:2: field 'answers': an empty list"),
        ({"answers": "Ada"}, r"data.jsonl:2: field 'answers': expected a list of strings"),
        ({"answers": ["Ada", 3]}, r"data.jsonl:2: field 'answers\[1\]': expected a non-empty"),
        ({"id": "a"}, r"data.jsonl:2: field 'id': 'a' is already at .*data.jsonl:1"),
        ({"id": 7}, r"data.jsonl: field 'id': mixes strings and integers"),
        ({"documents": ["x"]}, r"data.jsonl:2: give exactly one of the fields 'context' and"),
        ({"context": None}, r"data.jsonl:2: give exactly one of the fields"),
        ({"contxt": "x"}, r"data.jsonl:2: unknown field 'contxt'"),
        ({"context": "word " * 11}, r"data.jsonl:2: field 'context': 11 words, over the cap of 10"),
    ],
)
def test_a_bad_row_names_the_file_line_and_field(tmp_path, change, message):
    second = {k: v for k, v in {**GOOD, "id": "b", **change}.items() if v is not None}
    path = write_jsonl(tmp_path / "data.jsonl", [GOOD, second])
    with pytest.raises(CustomDataError, match=message):
        read_custom_rows(path, max_context_words=10)


def test_a_line_that_is_not_json_and_an_empty_file_are_named(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(CustomDataError, match=r"data.jsonl:2: invalid JSON line"):
        read_custom_rows(path)
    path.write_text("\n")
    with pytest.raises(CustomDataError, match=r"data.jsonl: no rows"):
        read_custom_rows(path)


@pytest.mark.parametrize(
    ("metric", "response", "expected"),
    [
        ("sub_em", "I think so. Therefore, the answer is Ada Lovelace", 1.0),
        ("sub_em", "Therefore, the answer is Carol", 0.0),
        ("sub_em", "the answer is Bob", 1.0),  # contained in a gold: the official sub_em
        ("em", "the answer is Ada", 1.0),
        ("em", "the answer is Ada Lovelace", 0.0),
        ("f1", "the answer is Ada Lovelace", 2 / 3),
        ("string_match", "<think>Ada?</think> It was ADA.", 0.5),  # RULER's: golds found
        ("string_match", "<think>Ada</think> nobody", 0.0),
    ],
)
def test_each_metric_scores_the_final_answer_against_the_best_gold(metric, response, expected):
    scores = score_answers(metric, response, ["Bobby Tables", "Ada"])
    assert scores["score"] == pytest.approx(expected) and scores[metric] == scores["score"]


@pytest.mark.parametrize(
    ("response", "golds", "answer_format"),
    [
        ("\\boxed{P}", ["Paris"], "boxed"),
        ("the answer is R", ["Tamsin Roe"], "answer_is"),
        ("the answer is ???", ["Tamsin Roe"], "answer_is"),
    ],
)
def test_own_sub_em_scores_a_one_letter_or_empty_answer_wrong(response, golds, answer_format):
    """The mirror of the gold rule: a letter lies inside almost any gold. The official sub_em
    (the paper benchmarks) would score these 1."""
    from memrepro.scoring.metrics import sub_em

    scores = score_answers("sub_em", response, golds, answer_format)
    assert scores["score"] == 0.0 and scores["sub_em_inside_gold"] is False
    assert sub_em(scores["pred"], golds[0]) == 1.0


def test_own_sub_em_marks_and_counts_answers_right_only_inside_a_gold():
    from memrepro.evaluation import summarize

    golds = ["Bobby Tables", "Ada"]
    inside = score_answers("sub_em", "the answer is Bob", golds)
    holds = score_answers("sub_em", "the answer is Ada Lovelace", golds)
    assert (inside["score"], inside["sub_em_inside_gold"]) == (1.0, True)
    assert (holds["score"], holds["sub_em_inside_gold"]) == (1.0, False)
    lines = [
        {"index": i, "task": "t", "failed": False, "response": "r", "n_calls": 1, **scores}
        for i, scores in enumerate([inside, holds, inside])
    ]
    assert summarize(lines, CUSTOM_BENCHMARK, "t", "s", 0)["n_inside_gold_sub_em"] == 2


def test_rouge_scores_the_mean_recall_and_an_unknown_metric_is_refused():
    scores = score_answers("rouge", "the club plants a meadow", ["the club plants a bee meadow"])
    assert 0.5 < scores["score"] < 1.0 and "rouge_l_f" in scores
    assert set(METRICS) == {"sub_em", "em", "f1", "rouge", "string_match"}
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        score_answers("bleu", "x", ["x"])


def test_the_benchmark_scores_a_row_by_the_metric_its_set_job_tagged_it_with():
    from memrepro.benchmarks import Task
    from memrepro.evaluation import score

    row = {"input": "Who?", "answers": ["Ada"], "metric": "em"}
    assert score(Task(CUSTOM_BENCHMARK, "long_qa"), row, "Ada")["score"] == 1.0
    assert score(Task(CUSTOM_BENCHMARK, "long_qa"), row, "Ada Lovelace")["score"] == 0.0


def example_config(base: str, **custom) -> dict:
    config = cfg.load_config([REPO / base, EXAMPLE / "config.yaml"])
    config["custom"].update(custom)
    return config


def test_every_smoke_system_plans_one_job_of_every_dataset(monkeypatch):
    monkeypatch.chdir(REPO)  # the example's sources are paths from the repository
    config = example_config("config/smoke.yaml")
    jobs = [job for job in cfg.eval_jobs(config) if job.benchmark == CUSTOM_BENCHMARK]
    systems = cfg.eval_systems(config)
    # every one but the variants (memory ablation, seed repeats), the oracle (no evidence marked)
    # and the question-aware MemAgent (on rows, its model's default MemAgent)
    chosen = {
        sid
        for sid, spec in systems.items()
        if not cfg.is_variant(spec) and spec["kind"] != "oracle" and not spec.get("question_aware")
    }
    assert {job.system for job in jobs} == chosen  # RAG: both units of its grid
    assert all(job.tasks == ("long_qa", "minutes") and job.length == 0 for job in jobs)
    kinds = {systems[job.system]["kind"] for job in jobs}
    assert kinds == {
        "memagent",
        "longcontext",
        "rag",
        "memalpha",
        "mem1",
        "closedbook",
        "fullcontext",
    }
    memorizing = {job.system for job in jobs if cfg.memorizes(systems[job.system], "custom")}
    assert memorizing == {"memalpha-tiny", "memalpha-tiny-trained-here", "mem1-tiny"}
    config["custom"]["systems"] = ["rl-memagent-tiny", "rag-tiny"]
    named = {job.system for job in cfg.eval_jobs(config) if job.benchmark == CUSTOM_BENCHMARK}
    assert named == {"rl-memagent-tiny", *(s for s in systems if s.startswith("rag-tiny."))}


def test_the_plan_reads_each_datasets_checked_rows_and_sizes_them_for_cost(monkeypatch):
    monkeypatch.chdir(REPO)
    config = example_config("config/smoke.yaml")
    custom = benchmark(CUSTOM_BENCHMARK)
    files = custom.data(config, 0, ("long_qa", "minutes"))
    assert files == [Path("results/smoke/data/custom/long_qa.jsonl"), files[0].with_stem("minutes")]
    (questions, tokens), _ = custom.sizes(config, ["long_qa", "minutes"], 0)
    assert questions == 8 and 50 < tokens < 200
    settings = {"tasks": ["long_qa"]}
    [(contexts, (chunks, _, asked), source)] = custom.instance_shapes(config, settings)
    assert (contexts, asked, source) == (3, 3, "ruler_qa2_421K") and chunks >= 1


@pytest.mark.parametrize(
    ("custom", "message"),
    [
        ({"custom.systems": ["nope"]}, r"config key custom.systems: unknown systems \['nope'\]"),
        (
            {"custom.systems": ["oracle-tiny"]},
            r"config key custom.systems: oracle-tiny cannot run one's own datasets \(the "
            r"benchmarks that mark each question's gold evidence; ",
        ),
        ({"custom.datasets.long_qa.metric": "bleu"}, r"config key custom.datasets.long_qa.metric"),
        (
            {"custom.datasets.long_qa.source": "nope"},
            r"config key custom.datasets.long_qa.source: unknown source 'nope'",
        ),
        (
            {"custom.instances": {"chunk_tokens": 64, "source": "nope", "prompt": "p"}},
            r"config key custom.instances.source: no query prompt for 'nope'",
        ),
    ],
)
def test_a_bad_custom_block_names_its_config_key(custom, message):
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.load_config([REPO / "config/smoke.yaml", EXAMPLE / "config.yaml"], overrides=custom)


def test_a_bad_row_of_a_local_dataset_stops_the_plan_naming_file_line_and_field(tmp_path):
    bad = write_jsonl(tmp_path / "mine.jsonl", [GOOD, {**GOOD, "id": "b", "answers": []}])
    config = cfg.load_config(
        [REPO / "config/smoke.yaml", EXAMPLE / "config.yaml"],
        overrides={"sources.long_qa": {"url": str(bad), "sha256": None}},
    )
    with pytest.raises(cfg.ConfigError) as failed:
        cfg.check_data(config)
    assert str(failed.value) == (
        f"custom dataset long_qa (sources.long_qa): {bad}:2: field 'answers': an empty list "
        "(give at least one)"
    )


def test_a_rag_system_retrieves_a_rows_own_documents_and_runs_either_unit():
    from memrepro.benchmarks import Task
    from memrepro.systems.rag import rag_system, runs

    class Recorded(Exception):
        pass

    class Recording:
        def top_k(self, query, units, k):
            raise Recorded(list(units))

    row = with_context(read_custom_rows(EXAMPLE / "long_qa.jsonl")[6])
    start = rag_system(Task(CUSTOM_BENCHMARK, "long_qa"), None, None, Recording(), 2, None, 512, 16)
    with pytest.raises(Recorded) as retrieved:
        next(start(row))
    assert retrieved.value.args[0] == row["documents"] and len(row["documents"]) == 3
    assert runs({"unit": "doc"}, CUSTOM_BENCHMARK) and runs({"unit": "c64"}, CUSTOM_BENCHMARK)
    assert not runs({"unit": "c64"}, "ruler_hqa") and not runs({"unit": "doc"}, "longbench")


def test_memrepro_cost_reads_a_dataset_once_for_all_its_jobs(monkeypatch, tmp_path):
    import memrepro.data.custom as reader
    from memrepro.benchmarks.custom import _file_shape

    _file_shape.cache_clear()
    monkeypatch.chdir(REPO)
    config = example_config("config/smoke.yaml")
    custom = benchmark(CUSTOM_BENCHMARK)
    reads = []
    read = reader.read_custom_rows
    monkeypatch.setattr(reader, "read_custom_rows", lambda path: reads.append(path) or read(path))
    for _ in range(3):  # an evaluate and a memorize job of each system ask the same
        custom.sizes(config, ["minutes"], 0)
        custom.instance_shapes(config, {"tasks": ["minutes"]})
    assert len(reads) == 1  # once per version of the file
    copy = tmp_path / "minutes.jsonl"
    copy.write_text((EXAMPLE / "minutes.jsonl").read_text())
    config["sources"]["minutes"]["url"] = str(copy)
    custom.sizes(config, ["minutes"], 0)
    copy.write_text(
        copy.read_text()
        + (EXAMPLE / "minutes.jsonl")
        .read_text()
        .replace('"id": 1', '"id": 3')
        .replace('"id": 2', '"id": 4')
    )
    [(questions, _)] = custom.sizes(config, ["minutes"], 0)
    assert questions == 4  # a changed file is read again
