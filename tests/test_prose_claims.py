"""The papers' headline sentences on their own printed numbers (the paper_claims table): each
case's numbers read by path from the paper files, the arithmetic, the verdict, our check beside."""

from __future__ import annotations

import copy
import math
import re

import pytest

from memrepro import config as cfg
from memrepro.config.prose_claims import prose_claims, quoted_version, resolve
from memrepro.report.prose_claims import (
    NOT_SUPPORTED,
    SUPPORTED,
    build_paper_claims_table,
    load_checks,
    on_ours,
    on_the_papers_numbers,
    supported_lines,
    unsupported_lines,
)

PAPER = {
    "ruler_hqa": {"A": {50: 80.0, 100: 70.0}},
    "table1": {"columns": ["squad", "booksum"], "rows": {"M": {"perf": [0.5, 0.25]}}},
}


def test_a_number_is_read_by_key_length_or_column_name():
    assert resolve(PAPER, ["ruler_hqa", "A", 50], "w") == 80.0
    assert resolve(PAPER, ["ruler_hqa", "A", "100"], "w") == 70.0
    assert resolve(PAPER, ["table1", "rows", "M", "perf", "booksum"], "w") == 0.25
    assert resolve(PAPER, ["table1", "rows", "M", "perf", 0], "w") == 0.5


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (["ruler_hqa", "B", 50], "f.yaml: claim x: no 'B' in \\['A'\\]"),
        (["table1", "rows", "M", "perf", "nlu"], "'nlu' is not one of the columns"),
        (["table1", "rows", "M", "perf", 7], "position 7 of a list of 2"),
        (["table1", "rows", "M"], "not a printed number but"),
    ],
)
def test_a_path_that_leads_nowhere_names_the_file_and_claim(path, message):
    with pytest.raises(cfg.ConfigError, match=message):
        resolve(PAPER, path, "f.yaml: claim x")


@pytest.mark.parametrize("printed", [-5, 100.5, math.nan, math.inf])
def test_a_printed_number_off_its_tables_scale_stops_the_plan(printed):
    """-5 would turn "a loss under 10 points" into supported, NaN and infinity into not
    supported: the score tables refuse the same file, and so does the claims' reader."""
    paper = copy.deepcopy(PAPER) | {"ruler_hqa": {"A": {50: printed}}}
    with pytest.raises(cfg.ConfigError, match=r"f.yaml: claim x: the printed number .* 0\.\.100"):
        resolve(paper, ["ruler_hqa", "A", 50], "f.yaml: claim x")


def test_a_table_of_differences_and_a_memory_size_have_scales_of_their_own():
    paper = {"probe": {"scale": [-100, 100], "rows": {"14B": {"0-20": {100: -3.91}}}}}
    assert resolve(paper, ["probe", "rows", "14B", "0-20", 100], "w") == -3.91
    sizes = {"table4": {"rows": {"b": {"mem": {"booksum": 4500.0}}}}}
    assert resolve(sizes, ["table4", "rows", "b", "mem", "booksum"], "w") == 4500.0
    with pytest.raises(cfg.ConfigError, match=r"-1 is not within 0\.\.inf"):
        resolve({"t": {"mem": -1}}, ["t", "mem"], "w")


def claim(**kw):
    cases = [{"label": "A", "numbers": [80.0, 70.0], "of": 1}]
    return {"id": "c", "text": "t", "where": "w", "compute": "difference", "cases": cases} | kw


def test_the_verdict_says_whether_the_papers_numbers_meet_the_sentence():
    assert on_the_papers_numbers(claim(op="<", value=15)) == (
        "A: 80 − 70 = +10 → supported (1 of 1 pass < 15)"
    )
    assert on_the_papers_numbers(claim(op="<", value=10)).endswith(
        "→ **not supported** (0 of 1 pass < 10)"
    )
    relative = claim(compute="relative_drop", op="<", value=10)
    assert on_the_papers_numbers(relative).startswith("A: (80 − 70) / 80 = 12.5 %")
    assert on_the_papers_numbers(claim()).endswith("→ reported (the sentence states no bound)")
    cells = [{"label": f"c{i}", "numbers": [1.0, 2.0, float(i)], "of": 2} for i in range(4)]
    almost = claim(compute="margin", cases=cells, op=">=", value=0, holds_in=0.75)
    assert on_the_papers_numbers(almost).endswith("supported (3 of 4 pass >= 0, 75% needed)")
    assert on_the_papers_numbers(claim(cases=[], paper="a heatmap")) == "a heatmap"


def test_our_check_of_the_same_sentence_is_shown_beside():
    checks = {"figure1": [{"claim_id": "c", "system": "Agent", "outcome": "holds"}]}
    assert on_ours(claim(ours=["figure1", "c"]), checks, {}) == "Agent: holds (figure1)"
    assert on_ours(claim(ours=["figure5", "c"]), checks, {}) == "figure5 is not part of this run"
    assert on_ours(claim(ours=["figure1", "d"]), checks, {}) == "figure1 makes no check 'd'"
    assert on_ours(claim(), checks, {}) == "no check on our numbers"


def test_checks_are_read_from_the_claims_files_among_the_inputs(tmp_path):
    (tmp_path / "figure1.claims.json").write_text('[{"claim_id": "c"}]')
    (tmp_path / "paper.yaml").write_text("x: 1")
    (tmp_path / "table3.csv").write_text("system,ours\nAgent,50.0\n")
    paths = ["paper.yaml", "figure1.claims.json", "table3.csv"]
    records = load_checks([tmp_path / path for path in paths])
    assert records == [
        {"report": "figure1", "checks": [{"claim_id": "c"}]},
        {"report": "table3", "cells": [{"system": "Agent", "ours": "50.0"}]},
    ]


@pytest.fixture(scope="module")
def paper_claims(repo):
    return {c["id"]: c for c in prose_claims(cfg.load_config([repo / "config/config.yaml"]))}


def test_both_papers_sentences_on_their_own_numbers(paper_claims):
    verdicts = {name: on_the_papers_numbers(c) for name, c in paper_claims.items()}
    assert "→ supported (2 of 2 pass < 10)" in verdicts["extrapolate_under_10"]  # 9.38, 9.37
    # a summary's sentence, judged on the version it quotes (the arXiv version's Table 2)
    assert paper_claims["drop_under_5_5_at_3_5m"]["version"].startswith("arXiv version")
    assert verdicts["drop_under_5_5_at_3_5m"] == (
        "RL-MEMAGENT-14B: 83.59 − 78.12 = +5.47 → supported (1 of 1 pass < 5.5)"
    )
    assert "= 6.5 % → **not supported**" in verdicts["drop_under_5_5_at_3_5m_relative"]
    assert paper_claims["extrapolate_under_10"]["version"].startswith("ICLR 2026")
    # Mem-α's two headline sentences, contradicted by its own Tables 1 and 2
    assert "table1 hotpotqa: 0.832 − 0.852 = -0.02" in verdicts["outperforms_across_all_metrics"]
    assert "table2 vs Long-Context: 129 / 33 = 3.91" in verdicts["memory_footprint_halved"]
    for name in ("outperforms_across_all_metrics", "memory_footprint_halved"):
        assert "**not supported**" in verdicts[name], name
    assert "**not supported**" in verdicts["extrapolate_under_10_relative"]
    assert verdicts["longbench_sum_sota"].endswith("(8 of 8 pass >= 0, 75% needed)")
    assert "longmemeval_s*: 0.52 − 0.581 = -0.061" in verdicts["ar_lru_gains_on_memoryagentbench"]
    assert "**not supported**" in verdicts["main_run_gamma_one"]  # Table 4's γ = 0.1 is Table 1's
    frame = build_paper_claims_table(list(paper_claims.values()), [])
    unsupported = sum("**not supported**" in v for v in verdicts.values())
    assert (
        f"{unsupported} of {len(paper_claims)} sentences are not supported"
        in (frame.attrs["notes"][1])
    )


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("base_qwen3_4b_below_rag_and_long_context", r"0\.\d{3}"),  # scores as printed
        ("booksum_memory_halved", r"(\d+\.\d)K"),  # memory in K tokens
    ],
)
def test_the_numbers_a_sentence_quotes_are_the_ones_its_tables_print(paper_claims, name, number):
    quoted = {float(x) for x in re.findall(number, paper_claims[name]["text"])}
    read = {n for case in paper_claims[name]["cases"] for n in case["numbers"]}
    assert quoted and quoted <= read


def test_a_version_a_paper_file_lacks_stops_the_plan(repo):
    paper = cfg.load_yaml(repo / "config/paper/memagent.yaml")
    with pytest.raises(cfg.ConfigError, match=r"x: version 'v9' is not one of other_versions"):
        quoted_version(paper, "v9", "x")
    assert quoted_version(paper, None, "x")[0] is paper


def test_a_bad_path_in_a_paper_file_stops_the_plan(repo, tmp_path):
    paper = cfg.load_yaml(repo / "config/paper/memagent.yaml")
    broken = copy.deepcopy(paper)
    broken["prose_claims"][0]["cases"]["RL-MEMAGENT-14B"][1][2] = 99
    path = tmp_path / "memagent.yaml"
    import yaml

    path.write_text(yaml.safe_dump(broken, allow_unicode=True))
    config = cfg.load_config([repo / "config/smoke.yaml"])
    config["report"]["paper"] = str(path)
    with pytest.raises(cfg.ConfigError, match=r"prose_claims 'extrapolate_under_10', .*no 99"):
        prose_claims(config)


def test_the_smoke_plan_reads_both_papers_and_what_checks_a_sentence_on_ours(repo):
    config = cfg.load_config([repo / "config/smoke.yaml"])
    inputs = cfg.report_inputs(config, cfg.PAPER_CLAIMS_TABLE)
    assert inputs[:2] == ["config/paper/memagent.yaml", "config/paper/memalpha.yaml"]
    assert [p.rsplit("/", 1)[1] for p in inputs[2:]] == [
        "figure1.claims.json",
        "figure5.claims.json",
        "figure_ood.claims.json",
        "memalpha_table1.claims.json",  # Mem-α's headline sentences
        "table1.claims.json",  # D.2 on Mem0 (its rows are Table 1's) and RAG (Tables 10, 11)
        "table10.claims.json",
        "table11.claims.json",
        # the score tables holding a number another sentence rests on (memrepro.report.prose_ours)
        *(f"memalpha_table{n}.csv" for n in (1, 2, 3, 4)),
        *(f"table{n}.csv" for n in (1, 2, 3, 8, 9)),
    ]


def test_the_docs_count_of_unsupported_sentences_is_the_tables(repo, paper_claims):
    from docs_pages import docs_text

    unsupported = sum(NOT_SUPPORTED in on_the_papers_numbers(c) for c in paper_claims.values())
    said = " ".join(docs_text(repo).split())
    assert f"{unsupported} of its {len(paper_claims)} sentences are not supported" in said


def test_the_docs_list_each_sentences_verdict_as_the_code_computes_it(repo, paper_claims):
    from docs_pages import docs_text

    claims = list(paper_claims.values())
    unsupported, supported = unsupported_lines(claims), supported_lines(claims)
    said = " ".join(docs_text(repo).split())
    assert len(unsupported) == sum(NOT_SUPPORTED in on_the_papers_numbers(c) for c in claims)
    assert len(supported) == sum(f"→ {SUPPORTED} (" in on_the_papers_numbers(c) for c in claims)
    for line in [*unsupported, *supported]:
        assert " ".join(line.split()) in said, line
    rest = len(claims) - len(unsupported) - len(supported)
    assert f"{len(supported)} sentences hold on their paper's numbers; the other {rest} " in said
