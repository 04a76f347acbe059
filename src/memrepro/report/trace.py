"""Case studies of MemAgent runs (the paper's Appendix C and F): the memory after every chunk of
chosen samples, as Markdown and HTML, from a predictions file.

A MemAgent prediction record carries `memory_trace` ({chunk, memory} for each chunk, from 0,
after which the memory changed; "No previous memory" before chunk 0 is implicit) and `n_chunks`
(the chunks read; `systems.memagent.trace_fields`). Given the chunks of the sample's context (cut
as the run cut them, memrepro.benchmarks.base.row_chunks), the chunks holding gold evidence are
found: those containing one of the gold answers, case-insensitively, or the caller's evidence
strings for that sample, and, given the sample's supporting paragraphs (RULER-HQA: HotpotQA's two
hops, the bridge paragraph that holds no answer included, each by what begins it in the context),
those where each begins. Without the chunks the trace is still rendered, its gold-evidence column
saying "unknown".

The rendered trace lists each chunk after which the memory changed (with what that update added
and dropped, sentence by sentence; the last memory whole), each chunk holding gold evidence (with
a snippet around it), and collapses every run of other chunks into one line ("chunks 12–57:
memory unchanged"). Everything here is pure except `write_report`.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memrepro.agents.memagent import NO_MEMORY
from memrepro.report.html_page import html_document, prose
from memrepro.report.turns import paper_turns, turns
from memrepro.scoring.evidence import evidence_pattern, evidence_strings, memory_pattern, replay

DEFAULT_FIRST = 5  # samples per task when none are named
SNIPPET_CHARS = 160  # context kept on each side of the first evidence hit in a gold chunk
ONLY = ("all", "correct", "wrong", "failed")
Only = Literal["all", "correct", "wrong", "failed"]


# --- the memory after every chunk ----------------------------------------------------------------


def trace_changes(trace: Sequence[Mapping[str, Any]], n_chunks: int) -> dict[int, str]:
    """A record's `memory_trace` as {chunk: memory after it}; chunks must rise within
    0..n_chunks-1 (ValueError otherwise)."""
    changes: dict[int, str] = {}
    last = -1
    for entry in trace:
        chunk, memory = entry["chunk"], entry["memory"]
        if not isinstance(chunk, int) or not last < chunk < n_chunks:
            raise ValueError(
                f"memory_trace: chunk {chunk!r} after chunk {last} is not a rising index "
                f"below n_chunks={n_chunks}"
            )
        changes[chunk] = memory
        last = chunk
    return changes


def memory_after_chunks(trace: Sequence[Mapping[str, Any]], n_chunks: int) -> list[str]:
    """The memory after each of the `n_chunks` chunks read, rebuilt from the changes."""
    return replay(trace_changes(trace, n_chunks), n_chunks, before=NO_MEMORY)


# --- where the gold evidence is --------------------------------------------------------------


def find_evidence(
    chunks: Iterable[str], strings: Sequence[str], context_chars: int = SNIPPET_CHARS
) -> dict[int, str]:
    """{chunk index: a snippet around its first hit} for each chunk that contains one of
    `strings` (case-insensitive). A string cut by a chunk boundary is found in neither chunk.
    The chunks are streamed: only the snippets are kept."""
    pattern = evidence_pattern(strings)
    found: dict[int, str] = {}
    for i, chunk in enumerate(chunks):
        hit = pattern.search(chunk) if pattern is not None else None
        if hit is None:
            continue
        start, end = max(0, hit.start() - context_chars), hit.end() + context_chars
        found[i] = ("…" if start > 0 else "") + chunk[start:end] + ("…" if end < len(chunk) else "")
    return found


def gold_chunks(chunks: Iterable[str], strings: Sequence[str]) -> list[int]:
    """The chunks that contain one of `strings`, case-insensitively."""
    return sorted(find_evidence(chunks, strings, context_chars=0))


# --- choosing samples ----------------------------------------------------------------------


def by_task(predictions: Iterable[dict[str, Any]]) -> dict[str | None, list[dict[str, Any]]]:
    """A predictions file's lines per `task` tag (None: untagged lines, e.g. a partial file),
    in file order."""
    grouped: dict[str | None, list[dict[str, Any]]] = {}
    for line in predictions:
        grouped.setdefault(line.get("task"), []).append(line)
    return grouped


def verdict(prediction: Mapping[str, Any]) -> str:
    """ "failed" (a request failed), "correct" (score 1) or "wrong" (answered, score below 1:
    partial credit included)."""
    if prediction.get("failed"):
        return "failed"
    return "correct" if float(prediction.get("score") or 0.0) >= 1.0 else "wrong"


def asks(prediction: Mapping[str, Any], question: str) -> bool:
    """Whether a sample's question holds `question` (case-insensitive)."""
    return question.casefold() in str(prediction.get("input") or "").casefold()


def select(
    predictions: Sequence[dict[str, Any]],
    indices: Sequence[Any] | None = None,
    first: int = DEFAULT_FIRST,
    only: Only = "all",
    question: str | None = None,
) -> list[dict[str, Any]]:
    """The predictions to render: those of `indices` in that order (each must exist), else the
    first `first` in file order whose verdict is `only` ("all": any), after those whose question
    holds `question` (case-insensitive: the paper's own sample, wherever the set has it)."""
    if question is not None:
        asked = [p for p in predictions if asks(p, question)]
        rest = select(predictions, indices, first, only)
        return asked + [p for p in rest if p not in asked]
    if indices is not None:
        by_index = {p["index"]: p for p in predictions}
        missing = [i for i in indices if i not in by_index]
        if missing:
            raise ValueError(f"no prediction for sample(s) {missing}")
        return [by_index[i] for i in indices]
    if only not in ONLY:
        raise ValueError(f"only must be one of {ONLY}, got {only!r}")
    if first < 0:
        raise ValueError(f"first must be >= 0, got {first}")
    chosen = [p for p in predictions if only == "all" or verdict(p) == only]
    return chosen[:first]


# --- one sample --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """A line of a rendered trace: chunk `first` alone (the memory changed after it, or it holds
    gold evidence), or a collapsed stretch `first`..`last` of chunks that did neither
    (`read` False: chunks the run never reached, the sample having failed)."""

    first: int
    last: int
    read: bool = True
    changed: bool = False
    gold: bool | None = None  # None: unknown
    memory: str | None = None  # the memory after the chunk, where it changed
    evidence: str | None = None  # a snippet around the evidence, in a gold chunk
    before: str | None = None  # the memory before the chunk, where it changed
    final: bool = False  # the last change: the final memory, shown whole

    @property
    def stretch(self) -> bool:
        return not (self.changed or self.gold)


@dataclass(frozen=True)
class CaseStudy:
    """One sample's trace: the prediction record, the memory changes, and (where the chunks were
    rebuilt) the total number of chunks and the gold chunks with their snippets."""

    prediction: dict[str, Any]
    task: str | None = None
    n_read: int | None = None  # chunks the run read; None: the record has no trace
    changes: dict[int, str] = field(default_factory=dict)
    n_chunks: int | None = None  # chunks of the rebuilt context; None: not rebuilt
    evidence: dict[int, str] | None = None  # gold chunk -> snippet; None: unknown
    evidence_strings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    supporting: dict[str, int | None] = field(default_factory=dict)  # paragraph title -> chunk

    @property
    def has_trace(self) -> bool:
        return self.n_read is not None

    @property
    def total(self) -> int:
        """Chunks to show: those of the context where known, else those read."""
        return max(self.n_read or 0, self.n_chunks or 0)

    def memories(self) -> list[str]:
        """The memory after each chunk read."""
        return replay(self.changes, self.n_read or 0, before=NO_MEMORY)

    def steps(self) -> list[Step]:
        """The rendered lines: notable chunks alone, the other runs collapsed."""
        steps: list[Step] = []
        n_read = self.n_read or 0
        final = max(self.changes, default=None)
        memory_before = NO_MEMORY
        for chunk in range(self.total):
            read = chunk < n_read
            changed = chunk in self.changes
            gold = None if self.evidence is None else chunk in self.evidence
            if changed or gold:
                snippet = self.evidence.get(chunk) if self.evidence is not None else None
                memory = self.changes.get(chunk)
                before = memory_before if changed else None
                final_step = chunk == final
                steps.append(
                    Step(chunk, chunk, read, changed, gold, memory, snippet, before, final_step)
                )
                memory_before = memory if changed else memory_before
            elif steps and steps[-1].stretch and steps[-1].read == read:
                steps[-1] = Step(steps[-1].first, chunk, read, gold=steps[-1].gold)
            else:
                steps.append(Step(chunk, chunk, read, gold=gold))
        return steps


def case_study(
    prediction: dict[str, Any],
    chunks: Iterable[str] | None = None,
    evidence: Iterable[str] | None = None,
    task: str | None = None,
    supporting: Mapping[str, str] | None = None,
) -> CaseStudy:
    """A sample's case study from its prediction record and, if given, the chunks of its context
    (gold evidence: `evidence` strings if given, else the gold answers, and where each of the
    `supporting` paragraphs, {title: the text that begins it}, begins). A record without a
    memory trace (another system, or written before traces were recorded) gives a study that
    renders as such; its chunks are not read."""
    task = task if task is not None else prediction.get("task")
    if "memory_trace" not in prediction:
        return CaseStudy(prediction, task)
    n_read = int(prediction["n_chunks"])
    changes = trace_changes(prediction["memory_trace"], n_read)
    strings = evidence_strings(prediction.get("answers") or [], evidence)
    if chunks is None:
        return CaseStudy(prediction, task, n_read, changes, evidence_strings=strings)
    markers = dict(supporting or {})
    counted = _Counted(chunks, markers)
    found = with_paragraphs(find_evidence(counted, strings), counted.located)
    n_chunks = counted.count
    notes = []
    if n_read > n_chunks or (n_read < n_chunks and not prediction.get("failed")):
        notes.append(
            f"the run read {n_read} chunks but the context rebuilt here has {n_chunks}: the "
            "tokenizer or chunk size differ from the run's, so the gold chunks may be misplaced"
        )
    if not strings:
        notes.append("no evidence strings (no gold answers): no chunk can be marked as gold")
    where = {title: counted.located.get(title) for title in markers}
    return CaseStudy(
        prediction, task, n_read, changes, n_chunks, found, strings, tuple(notes), where
    )


def with_paragraphs(found: dict[int, str], located: Mapping[str, int]) -> dict[int, str]:
    """The gold chunks' snippets, each supporting paragraph's chunk added with its title."""
    merged = dict(found)
    for title, chunk in located.items():
        line = f"[supporting paragraph begins] {title}"
        merged[chunk] = f"{merged[chunk]}\n{line}" if chunk in merged else line
    return dict(sorted(merged.items()))


class _Counted:
    """An iterable that counts what it yields (the chunks are streamed once) and notes the
    first chunk holding each of `markers` ({title: text})."""

    def __init__(self, items: Iterable[str], markers: Mapping[str, str] | None = None) -> None:
        self.items, self.count, self.located = items, 0, {}
        self.markers = dict(markers or {})

    def __iter__(self) -> Iterator[str]:
        for i, item in enumerate(self.items):
            self.count += 1
            for title, marker in self.markers.items():
                if title not in self.located and marker in item:
                    self.located[title] = i
            yield item


# --- rendering ---------------------------------------------------------------------------------


SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def memory_units(memory: str) -> list[str]:
    """A memory cut into its sentences and lines (what a diff compares)."""
    return [unit.strip() for unit in SENTENCE_END.split(memory) if unit.strip()]


def memory_diff(before: str, after: str) -> tuple[list[str], list[str]]:
    """(added, dropped): the sentences of `after` not in `before`, and those of `before` not in
    `after`, each in its memory's order (a sentence kept, even moved, is neither)."""
    old, new = memory_units(before), memory_units(after)
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    added, dropped = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "delete"):
            dropped += old[i1:i2]
        if op in ("replace", "insert"):
            added += new[j1:j2]
    moved = set(added) & set(dropped)
    return [u for u in added if u not in moved], [u for u in dropped if u not in moved]


def diff_lines(step: Step) -> list[str]:
    """A changed step's update as `+ sentence` (added) and `- sentence` (dropped) lines."""
    added, dropped = memory_diff(step.before or NO_MEMORY, step.memory or "")
    return [f"+ {unit}" for unit in added] + [f"- {unit}" for unit in dropped]


def _chunks_label(first: int, last: int) -> str:
    return f"chunk {first}" if first == last else f"chunks {first}–{last}"


def _stretch_text(step: Step) -> str:
    what = "memory unchanged" if step.read else "not read (the sample failed before them)"
    return f"{_chunks_label(step.first, step.last)}: {what}"


def _gold_text(gold: bool | None) -> str:
    return {None: "unknown", True: "yes", False: "no"}[gold]


def _heading(study: CaseStudy) -> str:
    p = study.prediction
    task = f"{study.task} · " if study.task else ""
    score = p.get("score")
    scored = f" (score {float(score):.2f})" if isinstance(score, int | float) else ""
    return f"{task}sample {p.get('index')} · {verdict(p)}{scored}"


def _anchor(study: CaseStudy) -> str:
    raw = f"{study.task or ''}-{study.prediction.get('index')}"
    return "sample-" + re.sub(r"[^A-Za-z0-9_-]", "_", raw)


def _summary(study: CaseStudy) -> list[tuple[str, str]]:
    """(label, plain text) facts shown above a trace."""
    p = study.prediction
    facts = [("Calls", str(p.get("n_calls", "?")))]
    if p.get("error"):
        facts.append(("Error", str(p["error"])))
    if not study.has_trace:
        return facts
    changed = sorted(study.changes)
    n_read = study.n_read or 0
    of = f" of {study.n_chunks}" if study.n_chunks is not None else ""
    facts.append(("Chunks", f"{n_read}{of} read (numbered from 0)"))
    facts.append(("Turns", f"{turns(n_read)}: {n_read} memory updates, then the answer"))
    listed = ", ".join(map(str, changed)) if changed else "none"
    facts.append(("Memory changed after", f"{len(changed)} chunk(s): {listed}"))
    if study.evidence is None:
        gold = "unknown (no dataset and tokenizer to rebuild the chunks)"
    elif not study.evidence:
        gold = "no chunk contains the evidence"
    else:
        gold = ", ".join(
            f"{c} ({'memory changed' if c in study.changes else 'memory unchanged'})"
            if c < n_read
            else f"{c} (not read)"
            for c in sorted(study.evidence)
        )
    facts.append(("Gold evidence in", gold))
    if study.supporting:
        facts.append(("Supporting paragraphs", _supporting_text(study)))
    found = memory_pattern(p)  # as the run recorded its gold chunks (the failure-pattern table)
    if found is not None:
        kind, primacy = found
        facts.append(("Memory pattern", kind.replace("_", " ") + (", primacy" if primacy else "")))
    if study.evidence_strings:
        facts.append(("Evidence strings", "; ".join(study.evidence_strings)))
    return facts


def _supporting_text(study: CaseStudy) -> str:
    """Where each supporting paragraph begins (as the paper's "Relevant Information")."""
    parts = []
    for title, chunk in study.supporting.items():
        if chunk is None:
            where = "not found (a chunk boundary cut its start)"
        elif chunk >= (study.n_read or 0):
            where = f"chunk {chunk} (not read)"
        else:
            changed = "memory changed" if chunk in study.changes else "memory unchanged"
            where = f"chunk {chunk} ({changed})"
        parts.append(f"{title}: {where}")
    return "; ".join(parts)


def _prediction_text(p: Mapping[str, Any]) -> str:
    pred = p.get("pred")
    return str(pred) if pred else str(p.get("response") or "")


# Markdown


def _md_inline(text: str) -> str:
    """Plain text safe in a Markdown line: one line, markup characters escaped, no raw HTML."""
    text = html.escape(" ".join(str(text).split()), quote=False)
    return re.sub(r"([\\`*_\[\]#|])", r"\\\1", text)


def _md_block(text: str, info: str = "text") -> str:
    """A fenced block holding `text` verbatim (the fence outlasts any backtick run in it)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def render_markdown_study(study: CaseStudy) -> str:
    p = study.prediction
    lines = [f"## {_md_inline(_heading(study))}", ""]
    lines.append(f"- **Question:** {_md_inline(p.get('input') or '')}")
    answers = "; ".join(_md_inline(a) for a in p.get("answers") or [])
    lines.append(f"- **Gold answers:** {answers}")
    lines.append(f"- **Prediction:** {_md_inline(_prediction_text(p))}")
    lines += [f"- **{label}:** {_md_inline(text)}" for label, text in _summary(study)]
    lines += ["", "Response:", "", _md_block(str(p.get("response") or "")), ""]
    lines += [f"> Note: {_md_inline(note)}" for note in study.notes]
    if not study.has_trace:
        lines += [
            "*No memory trace recorded (not a MemAgent run, or written before memory "
            "traces were recorded).*",
            "",
        ]
        return "\n".join(lines)
    lines += ["### Trace", "", f"Before chunk 0 the memory is *{NO_MEMORY}*.", ""]
    for step in study.steps():
        if step.stretch:
            lines += [f"- {_stretch_text(step)}", ""]
            continue
        state = "memory changed" if step.changed else "memory unchanged"
        if not step.read:
            state = "not read"
        lines += [f"#### Chunk {step.first} · gold evidence: {_gold_text(step.gold)} · {state}", ""]
        if step.evidence is not None:
            lines += ["Evidence:", "", _md_block(step.evidence), ""]
        if step.memory is not None and step.final:
            lines += ["Final memory (after this chunk):", "", _md_block(step.memory), ""]
        elif step.memory is not None:
            lines += ["The update (+ added, - dropped):", "", _md_block(_update(step), "diff"), ""]
    return "\n".join(lines)


def _update(step: Step) -> str:
    return "\n".join(diff_lines(step)) or "(reworded: no sentence added or dropped)"


def render_markdown(studies: Sequence[CaseStudy], title: str, banner: str = "") -> str:
    """The whole Markdown report: a title, its banner (a model that cannot reproduce the papers),
    the list of samples, then one section each."""
    lines = [f"# {_md_inline(title)}", ""] + ([f"> {banner}", ""] if banner else [])
    if not studies:
        lines += ["No sample was selected.", ""]
    lines += [f"- {_md_inline(_heading(s))}" for s in studies]
    lines += ["", "The papers' turn counts:", "", *(f"- {line}" for line in paper_turns()), ""]
    body = [render_markdown_study(s) for s in studies]
    return "\n".join(lines + body).rstrip("\n") + "\n"


# HTML

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 75em; color: #222; }
pre { white-space: pre-wrap; word-wrap: break-word; margin: 0; font-size: 0.9em; }
table.trace { border-collapse: collapse; width: 100%; margin: 1em 0 3em; }
table.trace th, table.trace td { border: 1px solid #ccc; padding: 0.3em 0.5em;
  vertical-align: top; text-align: left; }
tr.changed td.state { background: #e3f2fd; }
tr.gold td.gold { background: #fff3c4; font-weight: bold; }
tr.stretch td { color: #777; font-style: italic; }
tr.unread td { background: #f4f4f4; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; }
.evidence { margin-top: 0.4em; font-weight: normal; background: #fffbe6; }
.note { color: #a33; }
p.banner { background: #fff3cd; border-left: 4px solid #e0a800; padding: 0.5em; }
mark { background: #ffe066; }
"""


def _marked(text: str, pattern: re.Pattern[str] | None) -> str:
    """`text` HTML-escaped, each hit of `pattern` in <mark>."""
    if pattern is None:
        return html.escape(text)
    out, at = [], 0
    for hit in pattern.finditer(text):
        out += [html.escape(text[at : hit.start()]), f"<mark>{html.escape(hit.group())}</mark>"]
        at = hit.end()
    out.append(html.escape(text[at:]))
    return "".join(out)


def render_html_study(study: CaseStudy) -> str:
    p = study.prediction
    esc = html.escape
    pattern = evidence_pattern(study.evidence_strings)
    facts = [
        ("Question", esc(str(p.get("input") or ""))),
        ("Gold answers", "; ".join(esc(str(a)) for a in p.get("answers") or [])),
        ("Prediction", esc(_prediction_text(p))),
        ("Response", f"<pre>{esc(str(p.get('response') or ''))}</pre>"),
        *((label, esc(text)) for label, text in _summary(study)),
    ]
    out = [f'<section id="{_anchor(study)}">', f"<h2>{esc(_heading(study))}</h2>"]
    out.append('<dl class="facts">')
    out += [f"<dt>{label}</dt><dd>{value}</dd>" for label, value in facts]
    out.append("</dl>")
    out += [f'<p class="note">Note: {esc(note)}</p>' for note in study.notes]
    if not study.has_trace:
        out.append(
            "<p><em>No memory trace recorded (not a MemAgent run, or written before memory "
            "traces were recorded).</em></p></section>"
        )
        return "\n".join(out)
    out += [
        f"<p>Before chunk 0 the memory is <em>{esc(NO_MEMORY)}</em>.</p>",
        '<table class="trace"><thead><tr><th>Chunk</th><th>Gold evidence</th>'
        "<th>Memory</th><th>The update (+ added, - dropped); the final memory</th></tr>"
        "</thead><tbody>",
    ]
    for step in study.steps():
        if step.stretch:
            classes = "stretch" if step.read else "stretch unread"
            out.append(
                f'<tr class="{classes}"><td colspan="4">{esc(_stretch_text(step))}</td></tr>'
            )
            continue
        classes = " ".join(
            c
            for c, on in (("changed", step.changed), ("gold", step.gold), ("unread", not step.read))
            if on
        )
        gold = _gold_text(step.gold)
        if step.evidence is not None:
            gold += f'<div class="evidence"><pre>{_marked(step.evidence, pattern)}</pre></div>'
        state = "not read" if not step.read else "changed" if step.changed else "unchanged"
        memory = ""
        if step.memory is not None and step.final:
            memory = f"<p>Final memory:</p><pre>{_marked(step.memory, pattern)}</pre>"
        elif step.memory is not None:
            memory = f'<pre class="update">{_marked(_update(step), pattern)}</pre>'

        out.append(
            f'<tr class="{classes}"><td>{step.first}</td><td class="gold">{gold}</td>'
            f'<td class="state">{state}</td><td>{memory}</td></tr>'
        )
    out.append("</tbody></table></section>")
    return "\n".join(out)


def render_html(studies: Sequence[CaseStudy], title: str, banner: str = "") -> str:
    """A self-contained HTML page: the title, its banner, links to the samples, one section
    each."""
    esc = html.escape
    items = "\n".join(f'<li><a href="#{_anchor(s)}">{esc(_heading(s))}</a></li>' for s in studies)
    body = "\n".join(render_html_study(s) for s in studies)
    empty = "" if studies else "<p>No sample was selected.</p>"
    top = f'<p class="banner">{prose(banner)}</p>\n' if banner else ""
    counts = "".join(f"<li>{esc(line)}</li>" for line in paper_turns())
    papers = f"<p>The papers' turn counts:</p>\n<ul>{counts}</ul>\n"
    return html_document(
        title, _CSS, f"<h1>{esc(title)}</h1>\n{top}{empty}<ul>\n{items}\n</ul>\n{papers}{body}"
    )


def write_report(
    studies: Sequence[CaseStudy], out_prefix: str | Path, title: str, banner: str = ""
) -> list[Path]:
    """`<prefix>.md` and `<prefix>.html`, each written atomically."""
    from memrepro.data.io import write_text_atomic

    prefix = Path(out_prefix)
    md, page = (prefix.with_name(prefix.name + ext) for ext in (".md", ".html"))
    write_text_atomic(md, render_markdown(studies, title, banner))
    write_text_atomic(page, render_html(studies, title, banner))
    return [md, page]
