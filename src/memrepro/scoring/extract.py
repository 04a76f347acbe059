"""Answer extraction from model responses (MemAgent's official code).

Pure string functions. The official evaluation extracts after "the answer is"; training and the
data filter take the last `\\boxed{}` and compare it strictly after a MATH-style normaliser
(`memrepro.scoring.verifier`): the official cut-down one (`extract_boxed_official`,
`strip_string_official`, the default) or our extended one (`extract_boxed`, `strip_string`).
"""

from __future__ import annotations

import re

THINK_END = "</think>"
ANSWER_MARKER = "the answer is"  # case-sensitive, as in the official eval
DEEPSEEK_TOKENS = ("<｜Assistant｜>", "<｜end▁of▁sentence｜>")
BOX_COMMANDS = ("\\boxed", "\\fbox")
BOXED = "\\boxed"
BOXED_SPACE = "\\boxed "  # the official verifier's space form


def extract_solution(text: str) -> str:
    """The text after the last `</think>` (reasoning models), else the whole text."""
    _, sep, after = text.rpartition(THINK_END)
    return after if sep else text


def answer_part(response: str) -> str:
    """The part of a reply the official evaluators search for the answer: the text after the
    last `</think>`, or the whole reply when nothing but whitespace follows it
    ("the answer is Paris</think>" is searched whole, and yields "Paris</think>")."""
    after = extract_solution(response)
    return after if after.strip() else response


ANSWER_FORMATS = ("answer_is", "boxed")  # what MemAgent's final prompts ask (FINAL_TEMPLATES)


def final_answer(response: str, answer_format: str = "answer_is") -> str | None:
    """The prediction in a reply's `answer_part`: the official evaluators' "the answer is"
    extraction, or, where the final prompt asked for `\\boxed{}` (`boxed`), the last box's
    content as the official training verifier reads it (`extract_boxed_official`)."""
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(f"unknown answer format {answer_format!r}; known: {ANSWER_FORMATS}")
    extract = extract_boxed_official if answer_format == "boxed" else extract_answer
    return extract(answer_part(response))


def extract_answer(text: str) -> str | None:
    """The official "the answer is" extraction; None when the lower-case marker is missing.

    After the last marker: strip whitespace, drop the DeepSeek tokens, strip dots, then
    whitespace, in that order, as the official code does: "U.S.A. ." keeps "U.S.A.", and dots
    around non-breaking spaces (Unicode whitespace to `str.strip`) leave nothing.
    """
    text = text.replace("*", "")
    if ANSWER_MARKER not in text:
        return None
    answer = text.rpartition(ANSWER_MARKER)[2].strip()
    for token in DEEPSEEK_TOKENS:
        answer = answer.replace(token, "")
    return answer.strip(".").strip()


def extract_boxed(text: str) -> str | None:
    """The extended verifier's box: the content of the last `\\boxed{...}` / `\\fbox{...}`
    (brace-matched) or `\\boxed x` form, whichever comes last.

    The space form runs to the next `$` or the end of the text, stripped. None when there is no
    box or its braces never close. (The official verifier's is `extract_boxed_official`.)
    """
    start, command = max((text.rfind(c), c) for c in BOX_COMMANDS)
    if start < 0:
        return None
    rest = text[start + len(command) :]
    if rest.startswith(" "):
        return rest[1:].split("$", 1)[0].strip()
    if not rest.startswith("{"):
        return None
    depth = 0
    for i, char in enumerate(rest):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return rest[1:i]
    return None


def extract_boxed_official(text: str) -> str | None:
    """The official verifier's box (MemAgent's official code); `\\fbox` is never read.

    - If the space form `\\boxed ` occurs anywhere in `text`, the answer is everything after its
      last occurrence up to the first `$` (or the end), unstripped, even when a `\\boxed{...}`
      comes after it (the official extractor checks the space form first).
    - Else the last `\\boxed` must be followed directly by `{`: its brace-matched content.
      None when there is no `\\boxed`, when the last one has no `{` right after it
      (`\\boxedx{..}`, a bare trailing `\\boxed`) or when its braces never close.
    - `\\fbox{...}` scores 0: the official code finds it only when there is no `\\boxed` at
      all, and then rejects it for not starting with `\\boxed{`.
    """
    if BOXED_SPACE in text:
        return text.rpartition(BOXED_SPACE)[2].split("$", 1)[0]
    start = text.rfind(BOXED)
    if start < 0:
        return None
    rest = text[start + len(BOXED) :]
    if not rest.startswith("{"):
        return None
    end = _closing_brace(rest)
    return None if end is None else rest[1:end]


def strip_string_official(s: str) -> str:
    """The official verifier's cut-down MATH normaliser (MemAgent's official code).

    In order: remove newlines and `\\!`; `\\\\` -> `\\`; `tfrac`/`dfrac` -> `frac`; remove
    `\\left`/`\\right`, `^{\\circ}`/`^\\circ`, `\\$` and `\\%` (only the escaped forms);
    " ." -> " 0." and "{." -> "{0."; remove every space. Nothing else: a plain `%` or `$`
    stays, a string starting with "." gets no leading zero, and there is no unit, fraction,
    square-root, "x =", "0.5" or "a/b" rewriting (all in `strip_string`, the extended one).
    """
    for old, new in (
        ("\n", ""),
        ("\\!", ""),
        ("\\\\", "\\"),
        ("tfrac", "frac"),
        ("dfrac", "frac"),
        ("\\left", ""),
        ("\\right", ""),
        ("^{\\circ}", ""),
        ("^\\circ", ""),
        ("\\$", ""),
        ("\\%", ""),
        (" .", " 0."),
        ("{.", "{0."),
        (" ", ""),
    ):
        s = s.replace(old, new)
    return s


def strip_string(s: str) -> str:
    """The extended MATH-benchmark answer normaliser (no article/punct removal): the official
    verifier's steps (`strip_string_official`) plus the full MATH ones below.

    Removes layout noise (newlines, `\\!`, `\\left`/`\\right`, degrees, `\\$`, `%`, trailing
    `\\text{ units}`), canonicalises fractions and square roots, adds the leading zero of ".5",
    drops a short "x =" prefix, and finally removes every space.
    """
    s = s.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("\\%", "").replace("%", "")
    s = _drop_text_units(s)
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s.startswith("."):
        s = "0" + s
    lhs, eq, rhs = s.partition("=")
    if eq and "=" not in rhs and len(lhs) <= 2:
        s = rhs
    s = _brace_sqrt_args(s)
    s = s.replace(" ", "")
    s = _brace_frac_args(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _slash_to_frac(s)


def _drop_text_units(s: str) -> str:
    """Drop units written as `\\text{ unit}` after the value: "5 \\text{ cm}" → "5 "."""
    head, sep, _ = s.partition("\\text{ ")
    return head if sep else s


def _brace_sqrt_args(s: str) -> str:
    """Brace a one-character square-root argument: "\\sqrt3" → "\\sqrt{3}"."""
    return re.sub(r"\\sqrt([^{\\])", r"\\sqrt{\1}", s)


def _brace_frac_args(s: str) -> str:
    """Brace one-character arguments: "\\frac12", "\\frac1{2}", "\\frac{1}2" → "\\frac{1}{2}"."""
    pieces = s.split("\\frac")
    out = pieces[0]
    for piece in pieces[1:]:
        if piece.startswith("{"):
            end = _closing_brace(piece)
            if end is None:  # unbalanced: leave as is
                out += "\\frac" + piece
                continue
            numerator, denominator = piece[: end + 1], piece[end + 1 :]
        elif len(piece) >= 2:
            numerator, denominator = "{" + piece[0] + "}", piece[1:]
        else:  # "\\frac" with fewer than two characters after it: leave as is
            out += "\\frac" + piece
            continue
        if denominator and not denominator.startswith("{"):
            denominator = "{" + denominator[0] + "}" + denominator[1:]
        out += "\\frac" + numerator + denominator
    return out


def _closing_brace(s: str) -> int | None:
    depth = 0
    for i, char in enumerate(s):
        depth += (char == "{") - (char == "}")
        if depth == 0:
            return i
    return None


def _slash_to_frac(s: str) -> str:
    """Write an integer ratio as a fraction: "3/4" → "\\frac{3}{4}"."""
    match = re.fullmatch(r"(-?\d+)/(\d+)", s)
    return f"\\frac{{{match[1]}}}{{{match[2]}}}" if match else s
