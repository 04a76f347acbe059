"""The reproduction report's first screen: each paper's headline rows (its tables'
`PaperTable.headline`), ours with its 95 % interval beside the paper's number and the verdict, as
the tables' CSVs state them, then what made them (commit, config hash, invocation)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memrepro.report.html_page import prose

KEY_NUMBERS = "Key numbers"
KEY_COLUMNS = ("cell", "ours [95 % interval]", "paper", "verdict")
KEY_CSS = (
    "table.key{border-collapse:collapse}"
    "table.key td,table.key th{border:1px solid #ccc;padding:2px 8px}"
)
NONE_RAN = "none of its headline rows ran in this run."


@dataclass(frozen=True)
class KeyNumber:
    """A headline cell as its table's CSV states it: ours with its interval, the paper's number
    (None: the paper prints none there) and the verdict."""

    system: str
    label: str
    ours: float
    low: float | None
    high: float | None
    paper: float | None
    verdict: str

    def columns(self) -> tuple[str, str, str, str]:
        interval = "" if self.low is None else f" [{self.low:.1f}, {self.high:.1f}]"
        paper = "—" if self.paper is None else f"{self.paper:.1f}"
        return (
            f"{self.system} @ {self.label}",
            f"{self.ours:.1f}{interval}",
            paper,
            self.verdict or "no paper number",
        )


def key_numbers(rows: Sequence[Mapping[str, str]], headline: Sequence[str]) -> list[KeyNumber]:
    """The headline rows' averages where the table has them, else their cells."""
    mine = [row for row in rows if row.get("paper_row") in headline and row.get("ours")]
    averages = [row for row in mine if row.get("kind") == "average"]
    return [
        KeyNumber(
            row["system"],
            row["label"],
            float(row["ours"]),
            _number(row.get("ci_low")),
            _number(row.get("ci_high")),
            _number(row.get("paper")),
            row.get("verdict", ""),
        )
        for row in averages or mine
    ]


def _number(text: str | None) -> float | None:
    return float(text) if text else None


@dataclass(frozen=True)
class KeyTable:
    """A table's key numbers with what the report links it by."""

    name: str
    caption: str
    markdown_link: str
    html_link: str
    numbers: Sequence[KeyNumber]


Sections = Sequence[tuple[str, Sequence[KeyTable]]]  # per paper, its tables with key numbers


def markdown_key_numbers(sections: Sections, made_by: str | None) -> list[str]:
    lines = [f"## {KEY_NUMBERS}", ""]
    for paper, tables in sections:
        lines += [] if tables else [f"**{paper}**: {NONE_RAN}", ""]
        for table in tables:
            lines += [f"**{paper}**, [{table.name}]({table.markdown_link}): {table.caption}", ""]
            lines += ["| " + " | ".join(KEY_COLUMNS) + " |", "|---" * len(KEY_COLUMNS) + "|"]
            lines += [
                "| " + " | ".join(c.replace("|", "\\|") for c in n.columns()) + " |"
                for n in table.numbers
            ]
            lines.append("")
    return lines + ([made_by, ""] if made_by else [])


def html_key_numbers(sections: Sections, made_by: str | None) -> list[str]:
    esc = html.escape
    body = [f"<h2>{KEY_NUMBERS}</h2>"]
    for paper, tables in sections:
        body += [] if tables else [f"<p><b>{esc(paper)}</b>: {NONE_RAN}</p>"]
        for table in tables:
            head = "".join(f"<th>{esc(c)}</th>" for c in KEY_COLUMNS)
            rows = "".join(
                "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in n.columns()) + "</tr>"
                for n in table.numbers
            )
            body.append(
                f'<p><b>{esc(paper)}</b>, <a href="{esc(table.html_link)}">{esc(table.name)}</a>: '
                f'{esc(table.caption)}</p><table class="key"><tr>{head}</tr>{rows}</table>'
            )
    return body + ([f"<p>{prose(made_by)}</p>"] if made_by else [])
