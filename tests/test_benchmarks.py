"""Benchmarks are modules behind one interface: the evaluation loop asks the registry and names
no benchmark itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memrepro.benchmarks import EVAL_BENCHMARKS, Task, benchmark
from memrepro.benchmarks.registry import REGISTRY
from memrepro.evaluation import direct_prompt, output_tokens, question, score

SRC = Path(__file__).resolve().parents[1] / "src/memrepro"
WORKFLOW = SRC.parents[1] / "workflow"
# a benchmark's name compared with a literal name or a constant naming benchmarks: a dispatch
DISPATCH = re.compile(
    r"benchmark\W{0,3}\s*(==|!=|in|not in)\s*(\(\s*[\"']|[\"']|[A-Z_]*BENCHMARKS?\b)"
)
# modules that still dispatch on a benchmark's name, each to move into the benchmark modules
STILL_DISPATCHING: set[str] = set()


def test_every_benchmark_an_evaluation_reads_is_registered():
    assert set(REGISTRY) == set(EVAL_BENCHMARKS)
    with pytest.raises(ValueError, match="unknown benchmark 'nope'; known: ruler_hqa"):
        benchmark("nope")


def test_no_module_outside_the_benchmark_package_dispatches_on_a_benchmarks_name():
    found = set()
    for path in [*SRC.rglob("*.py"), *WORKFLOW.rglob("*.smk"), WORKFLOW.parent / "Snakefile"]:
        name = path.relative_to(SRC).as_posix() if path.is_relative_to(SRC) else path.name
        if not name.startswith("benchmarks/") and DISPATCH.search(path.read_text()):
            found.add(name)
    assert found == STILL_DISPATCHING, sorted(found ^ STILL_DISPATCHING)


def test_the_benchmarks_import_nothing_that_drives_them():
    """The evaluation loop, the system kinds, the jobs and the reports read the benchmarks; a
    benchmark module importing any of them (even inside a function) closes a circle."""
    above = (
        "memrepro.evaluation",
        "memrepro.systems",
        "memrepro.jobs",
        "memrepro.report",
        "memrepro.train",
    )
    found = []
    for path in sorted((SRC / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            found += [f"{path.name}: {n}" for n in names if n.startswith(above)]
    assert not found, found


@pytest.mark.parametrize(
    ("task", "budget"),
    [
        (Task("ruler_hqa", "hqa"), 10000),
        (Task("ruler_hqa_probe", "hqa"), 10000),
        (Task("memalpha", "x"), 2048),
        (Task("mab", "x"), 2048),
        (Task("longbench", "hotpotqa"), 32),
        (Task("ruler", "niah_single_1"), 128),
    ],
)
def test_each_benchmark_gives_its_own_budget_unless_the_config_sets_one(task, budget):
    assert output_tokens(task, None) == budget
    assert output_tokens(task, 7) == 7


def test_the_benchmark_decides_the_question_prompt_and_score():
    row = {"input": "Who?", "answers": ["Ada"], "context": "ctx"}
    hqa = Task("ruler_hqa", "hqa")
    assert question(hqa, row) == "Who?"
    assert "ctx" in direct_prompt(hqa, row, "ctx")
    assert score(hqa, row, "Therefore, the answer is Ada")["score"] == 1.0
    assert score(hqa, row, "Therefore, the answer is Bob")["score"] == 0.0
    longbench = Task("longbench", "hotpotqa")
    assert direct_prompt(longbench, row, "ctx") != direct_prompt(hqa, row, "ctx")
