"""scripts/worked_example.py: docs/evaluation.md's worked diagnosis is a run's own, copied from its
report between two markers, never written by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load():
    spec = importlib.util.spec_from_file_location(
        "worked_example", ROOT / "scripts/worked_example.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPORT = """# Reproduction report

## What explains the gaps (2 of 2, ranked)

1. [table1: Agent @ 10 docs](#diagnosis-table1-agent-10): ours − paper -80.0: unexplained
2. [table3: Agent @ hotpotqa](#diagnosis-table3-agent-hotpotqa): ours − paper -50.0: explained

### <a id="diagnosis-table1-agent-10"></a>1. [table1](tables/table1.md): Agent @ 10 docs

Its table in this report: [table1](#table-table1).

- **Attribution**: ours − paper -80.0 [-90.0, -70.0]: unexplained; none accounts for it

| Factor | What changes | Effect on ours [95 %] | n | Gap left [95 %] | Accounts | Shown in |
|---|---|---|---|---|---|---|
| scorer | whole-reply | +12.5 [+0.0, +37.5] | n 8 | -67.5 [-90.0, -40.0] | too few | scorers |

- Protocol: its memory is written for the question (MemAgent's protocol)

### <a id="diagnosis-table3-agent-hotpotqa"></a>2. [table3](tables/table3.md): Agent @ hotpotqa

- **Attribution**: ours − paper -50.0 [-60.0, -40.0]: explained by scorer

## Table 1
"""

PAGE = "Before.\n\n{begin}\nold text\n{end}\n\nAfter.\n"


def test_the_block_is_the_ranked_diagnosis_as_the_report_renders_it(tmp_path):
    worked = load()
    results = tmp_path / "mini"
    results.mkdir()
    (results / "reproduction.md").write_text(REPORT)
    page = tmp_path / "evaluation.md"
    page.write_text(PAGE.format(begin=worked.BEGIN, end=worked.END))
    assert worked.main([str(results), str(page)]) == 0
    text = page.read_text()
    assert text.startswith("Before.\n\n" + worked.BEGIN) and text.endswith(
        worked.END + "\n\nAfter.\n"
    )
    block = text.split("```text\n")[1].split("```")[0].splitlines()
    assert block[0] == "1. [table1](tables/table1.md): Agent @ 10 docs"  # the anchor dropped
    assert block[1].startswith("- **Attribution**: ours − paper -80.0")
    assert block[1].endswith("none accounts for it")
    assert block[-1] == "- Protocol: its memory is written for the question (MemAgent's protocol)"
    assert not any("Its table in this report" in line or "table3" in line for line in block)
    assert "old text" not in text
    assert worked.main([str(results), str(page), "--rank", "2"]) == 0  # again: the markers stay
    assert "explained by scorer" in page.read_text() and "table1]" not in page.read_text()


def test_a_missing_report_rank_or_marker_is_one_sentence(tmp_path, capsys):
    worked = load()
    page = tmp_path / "evaluation.md"
    page.write_text("no markers\n")
    assert worked.main([str(tmp_path), str(page)]) == 1
    assert "reproduction.md: cannot read it" in capsys.readouterr().err
    (tmp_path / "reproduction.md").write_text(REPORT)
    assert worked.main([str(tmp_path), str(page), "--rank", "3"]) == 1
    assert "no diagnosis ranked 3 shown in full" in capsys.readouterr().err
    assert worked.main([str(tmp_path), str(page)]) == 1
    assert "evaluation.md: needs one" in capsys.readouterr().err
    assert page.read_text() == "no markers\n"  # nothing written


def test_the_docs_worked_example_is_a_generated_block_holding_one_diagnosis():
    worked = load()
    text = (ROOT / "docs/evaluation.md").read_text()
    block = text.split(worked.BEGIN)[1].split(worked.END)[0]
    lines = block.split("```text\n")[1].split("```")[0].splitlines()
    assert worked.HEADING.match("### " + '<a id="x"></a>' + lines[0]) and " @ " in lines[0]
    assert any(line.startswith("- **Attribution**: ours − paper ") for line in lines)
