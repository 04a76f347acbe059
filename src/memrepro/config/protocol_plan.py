"""The protocols table's plan: the question-blind MemAgent systems, the question-aware ones of
their models, and the MemoryAgentBench source whose printed Mem-α number sits beside them."""

from __future__ import annotations

from typing import Any

from memrepro.config.matrix import EvalJob
from memrepro.config.selection import Selection
from memrepro.config.yaml_file import load_yaml


def _blind_source(config: dict[str, Any]) -> str | None:
    """The MemoryAgentBench source a question-blind MemAgent reads for (its RULER-QA one)."""
    return config["memalpha"]["ruler_hqa"]["source"] if "memalpha" in config else None


def protocol_jobs(selection: Selection) -> list[EvalJob]:
    return selection.protocols(_blind_source(selection.config))


def protocols_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The MemoryAgentBench source its column reads (the multi-document RULER-QA one that
    HotpotQA built too) and Mem-α's printed score of each MemAgent-paper row there (its Table 2,
    through the Mem-α file's aliases)."""
    source = _blind_source(config)
    paper = load_yaml(config["report"]["memalpha_paper"])
    table = paper.get("table2", {"columns": [], "caption": "no Table 2"})
    printed = {}
    if source in table["columns"]:
        column = table["columns"].index(source)
        printed = {
            memagent_row: table["rows"][row]["perf"][column]
            for memagent_row, row in paper.get("aliases", {}).items()
            if row in table["rows"]
        }
    return {"mab": {"task": source, "paper": printed, "where": table["caption"]}}
