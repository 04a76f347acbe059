"""How the reproduction report shows its diagnoses: the ranked attribution lines it opens with,
each diagnosis in full (Markdown and HTML), and the CSV that keeps every one of them.

A diagnosis in full: its heading links its cell's table; then the attribution line, a table of
the factors (what changes, the measured effect, the gap it leaves, whether it accounts for the
gap, the table row that shows it), the items that moved most with both responses and their
predictions files, what would measure more, and the setup lines."""

from __future__ import annotations

import csv
import html
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from memrepro.data.io import atomic_path
from memrepro.report.attribution import Attribution, Effect, Moved
from memrepro.report.cells import DASH
from memrepro.report.diagnosis import Diagnosis, cell_anchor, table_anchor
from memrepro.report.html_page import prose

SHOWN = 10  # diagnoses on the page, ranked by the gap left unexplained (the CSV keeps all)
DIAGNOSES_SUFFIX = ".diagnoses.csv"
ALONE = (
    "Each factor is one change, measured alone on the cell's items (paired): effects are never "
    "added, since two may overlap. The gap left is the gap plus that effect; *explained* means "
    "one change alone closes it within the intervals."
)
HEADER = ("Factor", "What changes", "Effect on ours [95 %]", "n", "Gap left [95 %]", "Accounts")
Link = Callable[[Path], str]  # a file's link from the report


def anchor(diagnosis: Diagnosis) -> str:
    cell = diagnosis.cell
    return cell_anchor(cell.table, cell.system, cell.label)


def title(diagnosis: Diagnosis) -> str:
    cell = diagnosis.cell
    return f"{cell.table}: {cell.system} @ {cell.label}"


def summary_line(diagnosis: Diagnosis) -> str:
    """The ranked list's line: the attribution line, or why there is none."""
    if diagnosis.attribution is not None:
        return diagnosis.attribution.line()
    return "no attribution: the cell's evaluation is not among the report's inputs"


def effect_cells(effect: Effect, attribution: Attribution) -> list[str]:
    """A factor's row of the table (HEADER)."""
    if effect.effect is None:
        measured = left = DASH
    elif effect.bound:
        measured, left = f"±{effect.effect:.1f} (a bound)", DASH
    else:
        low, high = effect.interval or (effect.effect, effect.effect)
        measured = f"{effect.effect:+.1f} [{low:+.1f}, {high:+.1f}]"
        residual = effect.residual(attribution.gap)
        value, (r_low, r_high) = residual if residual else (0.0, (0.0, 0.0))
        left = f"{value:+.1f} [{r_low:+.1f}, {r_high:+.1f}]"
    accounts = effect.accounts(attribution.gap) or (
        "too few items" if not effect.judgeable else "no"
    )
    return [effect.factor, effect.change, measured, effect.n or DASH, left, accounts]


def markdown_ranked(diagnoses: Sequence[Diagnosis]) -> list[str]:
    """The report's opening list: at most SHOWN diagnoses, the largest unexplained gap first."""
    if not diagnoses:
        return []
    shown = diagnoses[:SHOWN]
    lines = [f"## What explains the gaps ({len(shown)} of {len(diagnoses)}, ranked)", ""]
    lines += [f"{k}. [{title(d)}](#{anchor(d)}): {summary_line(d)}" for k, d in enumerate(shown, 1)]
    more = len(diagnoses) - len(shown)
    verb = "is" if more == 1 else "are"
    tail = f" {more} more {verb} in `reproduction{DIAGNOSES_SUFFIX}`." if more else ""
    return [*lines, "", f"Ranked by the gap no measured factor accounts for.{tail}", ""]


def markdown_diagnosis(
    k: int, diagnosis: Diagnosis, tables: Mapping[str, Path], link: Link
) -> list[str]:
    cell = diagnosis.cell
    where = tables.get(cell.table)
    named = f"[{cell.table}]({link(where)})" if where else cell.table
    lines = [
        f'### <a id="{anchor(diagnosis)}"></a>{k}. {named}: {cell.system} @ {cell.label}',
        "",
        f"Its table in this report: [{cell.table}](#{table_anchor(cell.table)}).",
        "",
        f"- **Attribution**: {summary_line(diagnosis)}",
    ]
    found = diagnosis.attribution
    if found is not None and found.effects:
        lines += ["", "| " + " | ".join([*HEADER, "Shown in"]) + " |"]
        lines.append("|" + "---|" * (len(HEADER) + 1))
        for effect in found.effects:
            row = [*effect_cells(effect, found), _md_row_link(effect, tables, link)]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        lines.append("")
        lines += _md_moved(found, link)
    if found is not None and found.suggestions:
        lines.append("- **What would measure more**:")
        lines += [f"  - {s.text()}" for s in found.suggestions]
    lines += [f"- {line}" for line in diagnosis.lines]
    return [*lines, ""]


def markdown_rest(diagnoses: Sequence[Diagnosis]) -> list[str]:
    """The diagnoses past the first SHOWN: each its anchor (a table's cell links it) and its
    attribution line; their factors are in the CSV."""
    if not diagnoses:
        return []
    lines = [
        f"### The other {len(diagnoses)} (their factors: `reproduction{DIAGNOSES_SUFFIX}`)",
        "",
    ]
    lines += [
        f'- <a id="{anchor(d)}"></a>{SHOWN + k}. {title(d)}: {summary_line(d)}'
        for k, d in enumerate(diagnoses, 1)
    ]
    return [*lines, ""]


def html_rest(diagnoses: Sequence[Diagnosis]) -> str:
    if not diagnoses:
        return ""
    items = "".join(
        f'<li id="{anchor(d)}">{SHOWN + k}. {html.escape(title(d))}: {prose(summary_line(d))}</li>'
        for k, d in enumerate(diagnoses, 1)
    )
    head = f"The other {len(diagnoses)} (their factors: reproduction{DIAGNOSES_SUFFIX})"
    return f"<h3>{html.escape(head)}</h3><ul>{items}</ul>"


def _md_row_link(effect: Effect, tables: Mapping[str, Path], link: Link) -> str:
    if effect.table is None or effect.table not in tables:
        return DASH
    return f"[{effect.table}]({link(tables[effect.table])}): {effect.row}"


TRACES = "predictions and memory traces in the linked files"
SIDES = ("ours", "the other")


def _moved(attribution: Attribution) -> list[tuple[Effect, Moved]]:
    return [(effect, item) for effect in attribution.effects for item in effect.moved]


def _md_moved(attribution: Attribution, link: Link) -> list[str]:
    lines = []
    for effect, moved in _moved(attribution):
        ours, other = (
            f"[{side}]({link(path)})" if path else side
            for side, path in zip(SIDES, effect.files, strict=True)
        )
        lines.append(
            f"  - {effect.factor}, `{moved.key}`: {ours} {moved.scores[0]:g} "
            f"“{moved.ours}” → {other} {moved.scores[1]:g} “{moved.other}”"
        )
    return [f"- **Items that moved most** ({TRACES}):", *lines] if lines else []


def _html_moved(effect: Effect, moved: Moved, link: Link) -> str:
    esc = html.escape
    ours, other = (
        f'<a href="{esc(link(path))}">{side}</a>' if path else side
        for side, path in zip(SIDES, effect.files, strict=True)
    )
    return (
        f"{esc(effect.factor)}, <code>{esc(moved.key)}</code>: {ours} {moved.scores[0]:g} "
        f"“{esc(moved.ours)}” → {other} {moved.scores[1]:g} “{esc(moved.other)}”"
    )


def html_ranked(diagnoses: Sequence[Diagnosis]) -> list[str]:
    if not diagnoses:
        return []
    shown = diagnoses[:SHOWN]
    items = "".join(
        f'<li><a href="#{anchor(d)}">{html.escape(title(d))}</a>: {prose(summary_line(d))}</li>'
        for d in shown
    )
    more = len(diagnoses) - len(shown)
    tail = f" {more} more are in reproduction{DIAGNOSES_SUFFIX}." if more else ""
    return [
        f"<h2>What explains the gaps ({len(shown)} of {len(diagnoses)}, ranked)</h2>",
        f"<ol>{items}</ol>",
        f"<p>Ranked by the gap no measured factor accounts for.{html.escape(tail)}</p>",
    ]


def html_diagnosis(k: int, diagnosis: Diagnosis, tables: Mapping[str, Path], link: Link) -> str:
    esc = html.escape
    cell = diagnosis.cell
    where = tables.get(cell.table)
    page = link(where.with_suffix(".html")) if where else None
    named = f'<a href="{esc(page)}">{esc(cell.table)}</a>' if page else esc(cell.table)
    parts = [
        f'<h3 id="{anchor(diagnosis)}">{k}. {named}: {esc(cell.system)} @ {esc(cell.label)}</h3>',
        f'<p>Its table in this report: <a href="#{table_anchor(cell.table)}">'
        f"{esc(cell.table)}</a>.</p>",
        f"<p><b>Attribution</b>: {prose(summary_line(diagnosis))}</p>",
    ]
    found = diagnosis.attribution
    if found is not None and found.effects:
        head = "".join(f"<th>{esc(h)}</th>" for h in (*HEADER, "Shown in"))
        rows = "".join(
            "<tr>"
            + "".join(f"<td>{esc(c)}</td>" for c in effect_cells(effect, found))
            + f"<td>{_html_row_link(effect, tables, link)}</td></tr>"
            for effect in found.effects
        )
        parts.append(f"<table><tr>{head}</tr>{rows}</table>")
        moved = [_html_moved(effect, item, link) for effect, item in _moved(found)]
        if moved:
            parts.append(f"<p><b>Items that moved most</b> ({esc(TRACES)}):</p><ul>")
            parts += [f"<li>{line}</li>" for line in moved]
            parts.append("</ul>")
    items = []
    if found is not None and found.suggestions:
        inner = "".join(f"<li>{prose(s.text())}</li>" for s in found.suggestions)
        items.append(f"<li><b>What would measure more</b>:<ul>{inner}</ul></li>")
    items += [f"<li>{prose(line)}</li>" for line in diagnosis.lines]
    parts.append(f"<ul>{''.join(items)}</ul>")
    return "".join(parts)


def _html_row_link(effect: Effect, tables: Mapping[str, Path], link: Link) -> str:
    if effect.table is None or effect.table not in tables:
        return DASH
    page = html.escape(link(tables[effect.table].with_suffix(".html")))
    row = html.escape(effect.row or "")
    return f'<a href="{page}">{html.escape(effect.table)}</a>: {row}'


CSV_COLUMNS = (
    "rank",
    "table",
    "system",
    "label",
    "gap",
    "gap_low",
    "gap_high",
    "verdict",
    "unexplained",
    "factor",
    "change",
    "effect",
    "effect_low",
    "effect_high",
    "bound",
    "n",
    "gap_left",
    "gap_left_low",
    "gap_left_high",
    "accounts",
)


def write_diagnoses(diagnoses: Sequence[Diagnosis], path: Path) -> Path:
    """Every diagnosis, ranked: a row per factor (one row without any), the cell's gap and
    verdict on each."""
    rows = []
    for rank, diagnosis in enumerate(diagnoses, 1):
        cell, found = diagnosis.cell, diagnosis.attribution
        gap = cell.gap
        base = [rank, cell.table, cell.system, cell.label]
        base += [gap.delta, *(gap.interval or ("", ""))] if gap else ["", "", ""]
        base += [found.verdict if found else "", round(diagnosis.unexplained, 4)]
        effects = found.effects if found else ()
        if not effects:
            rows.append([*base, *[""] * (len(CSV_COLUMNS) - len(base))])
        for effect in effects:
            residual = effect.residual(found.gap) if found else None
            value, (low, high) = residual if residual else ("", ("", ""))
            interval = effect.interval or ("", "")
            rows.append(
                [
                    *base,
                    effect.factor,
                    effect.change,
                    "" if effect.effect is None else round(effect.effect, 4),
                    *interval,
                    effect.bound,
                    effect.n,
                    value if value == "" else round(value, 4),
                    low if low == "" else round(low, 4),
                    high if high == "" else round(high, 4),
                    effect.accounts(found.gap) or "" if found else "",
                ]
            )
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(rows)
    return path
