"""The reproduction report: first the key numbers (each paper's headline rows, ours with its
interval beside the paper's, the verdict, and what made them), then per paper and table, how many
cells reproduced, the largest misses, the footnotes, and links to every table, figure and case
study with the command that traces each back to the models and data that made it (`memrepro
lineage`). Markdown and HTML.

It reads what the table jobs wrote through memrepro.report.table_summaries: each table's tidy CSV (a
`verdict` per cell: reproduced within ±δ, consistent, or ours differs above or below the paper:
memrepro.scoring.compare) and its Markdown (the footnotes).
"""

from __future__ import annotations

import csv
import functools
import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro.config import report_of_stem, report_plan
from memrepro.data.io import atomic_path, write_text_atomic
from memrepro.report.attribution import Gap, load_evidence
from memrepro.report.cells import MACHINERY_ONLY
from memrepro.report.claim_lists import (
    Claim,
    claims_text,
    html_claims,
    markdown_claims,
    read_claims,
)
from memrepro.report.claims import CLAIMS_SUFFIX
from memrepro.report.compute import compute_lines
from memrepro.report.diagnosis import (
    TEXT_TABLES,
    Cell,
    Context,
    Diagnosis,
    cell_anchor,
    diagnose,
    parse_markdown_table,
    table_anchor,
)
from memrepro.report.diagnosis_pages import (
    ALONE,
    DIAGNOSES_SUFFIX,
    SHOWN,
    html_diagnosis,
    html_ranked,
    html_rest,
    markdown_diagnosis,
    markdown_ranked,
    markdown_rest,
    write_diagnoses,
)
from memrepro.report.field_verdicts import SUMMARY_NOTE, WORDS, scope_text, summary_rows
from memrepro.report.figures import paper_figure
from memrepro.report.html_page import html_document, prose
from memrepro.report.key_numbers import (
    KEY_CSS,
    KeyTable,
    html_key_numbers,
    markdown_key_numbers,
)
from memrepro.report.registry import BOTH_PAPERS, MEMAGENT, MEMALPHA, OWN_DATA
from memrepro.report.render import NOT_COMPARABLE
from memrepro.report.table_summaries import (
    MISS_VERDICTS,
    JudgedCell,
    TableSummary,
    paper_of_table,
    summarize_table,
)
from memrepro.report.tables import PAPER_TABLES, paper_table
from memrepro.report.verdict_notes import VERDICT_MARKS
from memrepro.scoring.compare import (
    CONSISTENT,
    DIFFERS_ABOVE,
    DIFFERS_BELOW,
    REPRODUCED,
    ours_alone_differs_rate,
)
from memrepro.scoring.multiple import (
    Q_WORTH_A_LOOK,
    bh_q_values,
    chance_range,
    format_p,
    table_test,
)

PAPERS = (MEMAGENT, MEMALPHA, BOTH_PAPERS, OWN_DATA)
TRAINING = "Training curves"  # a section of its own: our runs of either paper
SECTIONS = (*PAPERS, TRAINING)
PAGE_CSS = (
    "body{font-family:sans-serif;max-width:75em;margin:1em auto;line-height:1.4}"
    "p.banner{font-weight:bold;background:#fff3cd;padding:6px}" + KEY_CSS
)
LINEAGE_WHAT = "the jobs, models and data behind it"


def paper_of_figure(name: str) -> str:
    """The section a figure is shown in: the one it declares (a training curve: its own)."""
    return TRAINING if name.startswith("training_") else paper_figure(name).section


def figure_caption(name: str) -> str:
    if name.startswith("training_"):
        return f"Training curve of run {name.removeprefix('training_')}"
    return report_plan(name).caption


def totals(tables: Sequence[TableSummary]) -> dict[str, int]:
    return {v: sum(t.counts.get(v, 0) for t in tables) for v in [*VERDICT_MARKS, NOT_COMPARABLE]}


def _verdict_text(
    counts: Mapping[str, int],
    averages: Sequence[JudgedCell] = (),
    unknown_n: Sequence[JudgedCell] = (),
) -> str:
    """The cells' verdicts, the count of *differs* beside what chance alone gives, and the
    averages' and the unknown-n cells' apart."""
    compared = sum(counts.get(v, 0) for v in VERDICT_MARKS)
    aside = counts.get(NOT_COMPARABLE, 0)
    if not compared and not averages and not unknown_n:
        if aside:
            return f"no cell compared: {aside} not comparable (machinery check only)"
        return "no cell compared (no paper number or no interval)"
    differs = counts[DIFFERS_ABOVE] + counts[DIFFERS_BELOW]
    text = (
        f"{counts[REPRODUCED]} of {compared} cells reproduced within the margin; "
        f"{counts[CONSISTENT]} consistent (neither a difference nor agreement shown); "
        f"{chance_range(compared).text(differs)} (ours above in {counts[DIFFERS_ABOVE]}, "
        f"below in {counts[DIFFERS_BELOW]})"
    )
    for what, apart in (("averages", averages), ("paper n unknown", unknown_n)):
        if apart:
            differ = sum(a.verdict in MISS_VERDICTS for a in apart)
            text += f"; {what}, counted apart: {differ} of {len(apart)} differ"
    if unknown_n:
        expected = 100 * ours_alone_differs_rate()
        text += f" ({expected:.1f} % expected where the paper's n equals ours)"
    return f"{text}; {aside} not comparable (machinery check only)" if aside else text


def _table_text(table: TableSummary) -> str:
    """A table's verdicts and its one test of 'every cell reproduced'."""
    text = _verdict_text(table.counts, table.averages, table.unknown_n)
    test = table_test([c.p_value for c in table.cells])
    return f"{text}; {test.text()}" if test else text


def worth_a_look(tables: Sequence[TableSummary]) -> list[tuple[JudgedCell, float]]:
    """The cells (averages apart) whose Benjamini–Hochberg q-value across these tables is below
    Q_WORTH_A_LOOK, smallest first, with it."""
    cells = [cell for table in tables for cell in table.cells]
    q_values = bh_q_values([cell.p_value for cell in cells])
    found = [(c, q) for c, q in zip(cells, q_values, strict=True) if q < Q_WORTH_A_LOOK]
    return sorted(found, key=lambda pair: pair[1])


def _worth_a_look_text(tables: Sequence[TableSummary]) -> list[str]:
    cells = [cell for table in tables for cell in table.cells]
    if not cells:
        return []
    found = worth_a_look(tables)
    rule = (
        f"Benjamini–Hochberg q < {Q_WORTH_A_LOOK:g} across the paper's {len(cells)} cells, "
        "averages apart"
    )
    if not found:
        return [f"Worth a look ({rule}): none; every difference is within what chance gives."]
    lines = [f"Worth a look ({rule}):"]
    lines += [
        f"{c.table}: {c.text}, p = {format_p(c.p_value)}, q = {format_p(q)}" for c, q in found
    ]
    return lines


@dataclass(frozen=True)
class Reproduction:
    """What the report shows; links relative to `base` (the report's folder)."""

    run: str
    tables: Sequence[TableSummary]
    figures: Sequence[Path]
    claims: Sequence[Claim]
    case_studies: Sequence[Path]
    base: Path
    context: Context | None = None  # what the diagnoses read (memrepro.report.diagnosis)
    made_by: str | None = None  # the provenance footnote (commit, config hash, invocation)
    compute: Sequence[str] = ()  # the summary's hardware, compute and cost (report.compute)

    @functools.cached_property
    def diagnosed(self) -> list[Diagnosis]:
        """The cells worth a look, then every other *differs*, each with its diagnosis, ranked by
        the gap no measured factor accounts for (largest first; ties in that order). In a run with
        none that is a machinery check only: each table's largest score difference among its
        not-comparable cells, so that the page shows every table's diagnosis at work."""
        look = [c for paper in PAPERS for c, _ in worth_a_look(self.of(paper)[0])]
        differs = [c for t in self.tables for c in t.cells if c.verdict in MISS_VERDICTS]
        cells = list(dict.fromkeys([*look, *differs]))
        if not cells and self.banner:
            for table in self.tables:
                gaps = [c for c in table.gaps if not c.memory]
                cells += sorted(gaps, key=lambda c: -abs(c.delta or 0.0))[:1]
        context = self.context or Context({}, {})
        found = [diagnose(_cell(c), context) for c in cells]
        return sorted(found, key=lambda d: -d.unexplained)

    @property
    def shown_diagnoses(self) -> list[Diagnosis]:
        return self.diagnosed[:SHOWN]

    @property
    def table_files(self) -> dict[str, Path]:
        return {t.name: t.markdown for t in self.tables}

    @property
    def banner(self) -> str | None:
        """The report's opening line when any table is a machinery check only."""
        machinery = [t for t in self.tables if t.banner]
        if not machinery:
            return None
        return (
            f"{MACHINERY_ONLY}{len(machinery)} of this run's {len(self.tables)} tables show "
            "systems whose model cannot reproduce the papers (random weights, or marked "
            "`reproduces: false`): their comparisons test the pipeline, not the method, and none "
            "is counted as reproduced."
        )

    def of(self, paper: str) -> tuple[list[TableSummary], list[Path], list[Claim]]:
        """The paper's tables, figures and claims."""
        return (
            [t for t in self.tables if t.paper == paper],
            [f for f in self.figures if paper_of_figure(f.stem) == paper],
            [c for c in self.claims if c.paper == paper],
        )

    def summary(self, paper: str) -> str:
        tables, _, claims = self.of(paper)
        averages = [a for table in tables for a in table.averages]
        unknown = [c for table in tables for c in table.unknown_n]
        return f"{_verdict_text(totals(tables), averages, unknown)}; {claims_text(claims)}"

    def link(self, path: Path) -> str:
        return os.path.relpath(path, self.base)

    def key_tables(self) -> list[tuple[str, list[KeyTable]]]:
        """Per paper that declares headline rows, its tables that show some (maybe none)."""
        declared = {
            paper_table(name).section for name in PAPER_TABLES if paper_table(name).headline
        }
        return [
            (paper, [self._key_table(t) for t in self.of(paper)[0] if t.key_numbers])
            for paper in PAPERS
            if paper in declared
        ]

    def _key_table(self, table: TableSummary) -> KeyTable:
        md, page = (self.link(table.markdown.with_suffix(s)) for s in (".md", ".html"))
        return KeyTable(table.name, table.caption, md, page, table.key_numbers)


def _cell(cell: JudgedCell) -> Cell:
    """A judged cell as a diagnosis reads it: its gap, where the CSV gives its evaluation (a
    machinery-only cell's gap has no interval)."""
    gap = None
    if cell.source is not None and cell.delta is not None:
        gap = Gap(cell.delta, cell.gap_interval, cell.source)
    return Cell(cell.table, cell.system, cell.label, gap, cell.text)


def shown(report: Reproduction, sections: tuple[str, ...]) -> list[str]:
    """The sections the report shows: each paper's always, one's own datasets' when it ran."""
    return [s for s in sections if s != OWN_DATA or report.of(s)[0]]


def replication_summary(report: Reproduction) -> tuple[str, list[list[str]]]:
    """The scope and the outcome counts in the field's words (memrepro.report.field_verdicts)."""
    tables = {paper: len(report.of(paper)[0]) for paper in PAPERS}
    verdicts = [v for t in report.tables for v, n in t.counts.items() for _ in range(n)]
    claims = [(c.outcome, c.detail) for c in report.claims]
    return scope_text(tables, len(report.figures)), summary_rows(verdicts, claims)


def render_markdown(report: Reproduction) -> str:
    lines = [f"# Reproduction report: run {report.run}", ""]
    lines += [f"> {report.banner}", ""] if report.banner else []
    scope, rows = replication_summary(report)
    lines += ["## Replication summary", "", f"Scope: {scope}.", ""]
    lines += [f"{line}\n" for line in report.compute]
    lines += ["| | " + " | ".join(WORDS) + " |", "|---" * (len(WORDS) + 1) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows] + [""]
    lines += [f"- {line}" for line in SUMMARY_NOTE] + [""]
    diagnosed = report.diagnosed
    lines += markdown_ranked(diagnosed)
    lines += markdown_key_numbers(report.key_tables(), report.made_by)
    for paper in shown(report, PAPERS):
        lines.append(f"- **{paper}**: {report.summary(paper)}")
        look = _worth_a_look_text(report.of(paper)[0])
        lines += [f"  - {look[0]}", *(f"    - {line}" for line in look[1:])] if look else []
    lines += [
        "",
        "Lineage of any file: `memrepro lineage PATH` (the jobs, models and data behind it).",
    ]
    for paper in shown(report, SECTIONS):
        tables, figures, claims = report.of(paper)
        lines += ["", f"## {paper}", ""]
        if claims:
            lines += markdown_claims(claims)
        for table in tables:
            link = report.link(table.markdown)
            anchor = f'<a id="{table_anchor(table.name)}"></a>'
            lines += [f"### {anchor}[{table.name}]({link}): {table.caption}", ""]
            lines += [f"{_table_text(table)}.", ""]
            lines += [
                f"- Largest miss: {miss}{_link(miss, report, md=True)}" for miss in table.misses
            ]
            lines += [f"- Note: {note}" for note in table.notes]
            lines += [f"- Lineage: `memrepro lineage {table.markdown}`", ""]
        if figures:
            lines += ["### Figures", ""]
            lines += [f"- [{f.stem}]({report.link(f)}): {figure_caption(f.stem)}" for f in figures]
    if report.case_studies:
        lines += ["", "## Case studies (the memory after every chunk)", ""]
        lines += [f"- [{report.link(c)}]({report.link(c)})" for c in report.case_studies]
    if diagnosed:
        lines += ["", "## Diagnoses", "", ALONE, ""]
        for k, found in enumerate(report.shown_diagnoses, 1):
            lines += markdown_diagnosis(k, found, report.table_files, report.link)
        lines += markdown_rest(diagnosed[SHOWN:])
    return "\n".join(lines) + "\n"


def _link(miss: str, report: Reproduction, md: bool) -> str:
    """A link to the miss's diagnosis (in full for the first SHOWN, a line for the others)."""
    found = next((d for d in report.diagnosed if d.cell.text == miss), None)
    if found is None:
        return ""
    cell = found.cell
    anchor = cell_anchor(cell.table, cell.system, cell.label)
    return f" ([diagnosis](#{anchor}))" if md else f' (<a href="#{anchor}">diagnosis</a>)'


def render_html(report: Reproduction) -> str:
    """The same report as one HTML page, the figures shown inline."""
    esc = html.escape
    body = [f"<h1>Reproduction report: run {esc(report.run)}</h1>"]
    if report.banner:
        body.append(f'<p class="banner">{prose(report.banner)}</p>')
    scope, rows = replication_summary(report)
    head = "".join(f"<th>{w}</th>" for w in WORDS)
    cells = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    body += [
        f"<h2>Replication summary</h2><p>Scope: {esc(scope)}.</p>",
        *(f"<p>{prose(line)}</p>" for line in report.compute),
        f"<table><tr><th></th>{head}</tr>{cells}</table>",
        "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in SUMMARY_NOTE) + "</ul>",
    ]
    diagnosed = report.diagnosed
    body += html_ranked(diagnosed)
    body += html_key_numbers(report.key_tables(), report.made_by)
    body.append("<ul>")
    for paper in shown(report, PAPERS):
        look = _worth_a_look_text(report.of(paper)[0])
        items = "".join(f"<li>{prose(line)}</li>" for line in look[1:])
        nested = f"<br>{prose(look[0])}<ul>{items}</ul>" if look else ""
        body.append(f"<li><b>{esc(paper)}</b>: {prose(report.summary(paper))}{nested}</li>")
    body.append(
        f"</ul><p>Lineage of any file: <code>memrepro lineage PATH</code> ({LINEAGE_WHAT}).</p>"
    )
    for paper in shown(report, SECTIONS):
        tables, figures, claims = report.of(paper)
        body.append(f"<h2>{esc(paper)}</h2>")
        if claims:
            body.append(html_claims(claims))
        for table in tables:
            href = esc(report.link(table.markdown.with_suffix(".html")))
            body.append(
                f'<h3 id="{table_anchor(table.name)}"><a href="{href}">{esc(table.name)}</a>: '
                f"{esc(table.caption)}</h3>"
            )
            body.append(f"<p>{prose(_table_text(table))}.</p><ul>")
            body += [
                f"<li>Largest miss: {prose(miss)}{_link(miss, report, md=False)}</li>"
                for miss in table.misses
            ]
            body.append(
                f"<li>Lineage: <code>memrepro lineage {esc(str(table.markdown))}</code></li>"
            )
            body.append("</ul>")
            if table.notes:
                notes = "".join(f"<li>{prose(note)}</li>" for note in table.notes)
                body.append(f"<details><summary>Notes</summary><ul>{notes}</ul></details>")
        for figure in figures:
            body.append(
                f"<figure><img src='{esc(report.link(figure))}' alt='{esc(figure.stem)}' "
                f"style='max-width:100%'><figcaption>{esc(figure.stem)}: "
                f"{esc(figure_caption(figure.stem))}</figcaption></figure>"
            )
    if report.case_studies:
        links = [esc(report.link(c.with_suffix(".html"))) for c in report.case_studies]
        body.append("<h2>Case studies</h2><ul>")
        body += [f'<li><a href="{link}">{link}</a></li>' for link in links]
        body.append("</ul>")
    if diagnosed:
        body.append(f"<h2>Diagnoses</h2><p>{prose(ALONE)}</p>")
        body += [
            html_diagnosis(k, found, report.table_files, report.link)
            for k, found in enumerate(report.shown_diagnoses, 1)
        ]
        body.append(html_rest(diagnosed[SHOWN:]))
    return html_document(f"Reproduction report: run {report.run}", PAGE_CSS, "\n".join(body))


def paper_of(name: str) -> str:
    """The paper a table or figure belongs to."""
    return paper_of_table(name) if report_of_stem(name) in PAPER_TABLES else paper_of_figure(name)


def write_reproduction(
    settings: Mapping[str, Any],
    tables: Sequence[Path],
    figures: Sequence[Path],
    claim_files: Sequence[Path],
    case_studies: Sequence[Path],
    out_prefix: Path,
    made_by: str | None = None,
    evaluations: Sequence[Path] = (),
    benchmarks: Sequence[Path] = (),
) -> list[Path]:
    """`<prefix>.md`, `.html`, `.cells.csv` and `.diagnoses.csv` from the tables' Markdown files
    (their CSVs beside), the figures, the claim checks the figures and tables wrote, and the
    case studies; the diagnoses from the settings (memrepro.config.reproduction_settings), the
    recipes tables and the evaluations' items (memrepro.config.reproduction_evaluations);
    `made_by`, the provenance footnote under the key numbers; the evaluations' Snakemake
    `benchmarks`, the measured compute of the summary (memrepro.report.compute)."""
    summaries = [summarize_table(path) for path in tables]
    claims = [
        claim
        for path in claim_files
        for claim in read_claims(path, paper_of(path.name.removesuffix(CLAIMS_SUFFIX)))
    ]
    markdown = {t.name: t.markdown for t in summaries}
    context = Context(
        systems={s["display"]: s for s in settings.get("systems", [])},
        tables={
            name: parse_markdown_table(markdown[name].read_text(encoding="utf-8"))
            for name in TEXT_TABLES
            if name in markdown
        },
        chance={t.name: _table_text(t) for t in summaries},
        printed_by=settings.get("printed_by", {}),
        evidence=load_evidence(evaluations, settings.get("systems", []), settings.get("sampling")),
    )
    report = Reproduction(
        settings["run"],
        summaries,
        figures,
        claims,
        case_studies,
        out_prefix.parent,
        context,
        made_by,
        compute_lines(settings, benchmarks),
    )
    md, page, cells, diagnoses = (
        out_prefix.with_name(out_prefix.name + ext)
        for ext in (".md", ".html", CELLS_SUFFIX, DIAGNOSES_SUFFIX)
    )
    write_text_atomic(md, render_markdown(report))
    write_text_atomic(page, render_html(report))
    write_judged_cells(report, cells)
    write_diagnoses(report.diagnosed, diagnoses)
    return [md, page, cells, diagnoses]


CELLS_SUFFIX = ".cells.csv"
CELL_COLUMNS = ("paper", "table", "system", "label", "verdict", "kind", "p_value", "q_value")


def write_judged_cells(report: Reproduction, path: Path) -> Path:
    """Every judged cell of the run with its p-value and its Benjamini–Hochberg q-value across
    its paper's calibrated cells (averages and cells of unknown paper n apart: no q)."""
    rows = []
    for paper in PAPERS:
        tables = report.of(paper)[0]
        cells = [cell for table in tables for cell in table.cells]
        apart = [cell for table in tables for cell in table.judged if cell.apart]
        q_values = [*bh_q_values([cell.p_value for cell in cells]), *[None] * len(apart)]
        for cell, q in zip([*cells, *apart], q_values, strict=True):
            kind, shown_q = (cell.kind, "") if q is None else ("cell", q)
            rows.append(
                [
                    paper,
                    cell.table,
                    cell.system,
                    cell.label,
                    cell.verdict,
                    kind,
                    cell.p_value,
                    shown_q,
                ]
            )
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CELL_COLUMNS)
        writer.writerows(rows)
    return path
