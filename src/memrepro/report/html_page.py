"""Tables as standalone HTML pages: a cell's verdict as its colour, what it could detect as its
tooltip, a link where it has a diagnosis; the document every page of the run shares."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class HtmlCell:
    """A table cell of an HTML page: its text, a CSS class (its verdict), a tooltip and where
    it links (its diagnosis)."""

    text: str
    kind: str = ""
    tip: str = ""
    href: str = ""


def html_page(
    caption: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str | HtmlCell]],
    notes: Sequence[str],
    banner: Sequence[str] = (),
    title: str | None = None,
) -> str:
    """A table as a standalone HTML page (the Snakemake report shows it as it is), titled
    `title` (default the caption): the banner lines, the caption, the cells (line breaks kept;
    a cell's verdict as its colour, what it could detect as its tooltip; a wide table scrolls
    inside the page, its first column fixed) and every footnote."""
    esc = html.escape

    def cell(tag: str, value: str | HtmlCell) -> str:
        shown = value if isinstance(value, HtmlCell) else HtmlCell(str(value))
        attrs = (f' class="{esc(shown.kind)}"' if shown.kind else "") + (
            f' title="{esc(shown.tip)}"' if shown.tip else ""
        )
        text = esc(shown.text).replace(chr(10), "<br>")
        if shown.href:
            text = f'<a href="{esc(shown.href)}">{text}</a>'
        return f"<{tag}{attrs}>{text}</{tag}>"

    def cells(tag: str, values: Sequence[str | HtmlCell]) -> str:
        return "<tr>" + "".join(cell(tag, v) for v in values) + "</tr>"

    body = [cells("th", header), *(cells("td", row) for row in rows)]
    foot = "".join(f"<p>{_linked(prose(note))}</p>" for note in notes)
    table = (
        f'<p class="caption">{prose(caption)}</p>\n<div class="scroll"><table>\n'
        + "\n".join(body)
        + "\n</table></div>"
    )
    top = "".join(f'<p class="banner">{prose(line)}</p>\n' for line in banner)
    return html_document(title or caption, TABLE_CSS, f"{top}{table}\n{foot}")


CODE_SPAN = re.compile(r"`([^`\n]+)`")  # Markdown's inline code, as the notes write names


def prose(text: str) -> str:
    """A line of the Markdown pages as HTML: escaped, its code spans (`x`) as <code>x</code>."""
    return CODE_SPAN.sub(r"<code>\1</code>", html.escape(text))


PAGE_LINK = re.compile(r"(\.\./[\w./-]+\.html#[\w-]+)")  # a note's link to another page of the run


def _linked(text: str) -> str:
    """A note's links to other pages of the run (`../reproduction.html#…`) made clickable."""
    return PAGE_LINK.sub(r'<a href="\1">\1</a>', text)


def html_document(title: str, css: str, body: str) -> str:
    """A self-contained HTML page: its title, its style sheet, the body as given."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{css}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


TABLE_CSS = (
    "body{font-family:sans-serif;font-size:13px}table{border-collapse:separate;border-spacing:0}"
    "p.caption{font-weight:bold;padding:4px 0}div.scroll{overflow-x:auto;max-width:100%}"
    "th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top;background:#fff}"
    "td{text-align:right;white-space:nowrap}"
    "th:first-child,td:first-child{text-align:left;white-space:nowrap;position:sticky;left:0;"
    "z-index:1;box-shadow:2px 0 0 #ccc}"
    "p{max-width:70em}p.banner{font-weight:bold;background:#fff3cd;padding:6px}"
    ".reproduced{background:#d4edda}.consistent{background:#f3f3f3}"
    ".differs-above{background:#cfe2ff}.differs-below{background:#f8d7da}"
)
