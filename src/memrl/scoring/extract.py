"""Answer extraction from model responses (reference memagent_official.md §2.5.1, §2.5.3).

Pure string functions. The official evaluation extracts after "the answer is"; training and the
data filter take the last `\\boxed{}` and compare it strictly after the MATH normaliser.
"""

from __future__ import annotations

import re

THINK_END = "</think>"
ANSWER_MARKER = "the answer is"  # case-sensitive, as in the official eval
DEEPSEEK_TOKENS = ("<｜Assistant｜>", "<｜end▁of▁sentence｜>")
BOX_COMMANDS = ("\\boxed", "\\fbox")


def extract_solution(text: str) -> str:
    """The text after the last `</think>` (reasoning models), else the whole text."""
    _, sep, after = text.rpartition(THINK_END)
    return after if sep else text


def extract_answer(text: str) -> str | None:
    """The official "the answer is" extraction; None when the lower-case marker is missing."""
    text = text.replace("*", "")
    if ANSWER_MARKER not in text:
        return None
    answer = text.rpartition(ANSWER_MARKER)[2].strip()
    for token in DEEPSEEK_TOKENS:
        answer = answer.replace(token, "")
    return answer.strip(". \t\n\r")


def extract_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` / `\\fbox{...}` (brace-matched) or `\\boxed x` form.

    The space form runs to the next `$` or the end of the text. None when there is no box or
    its braces never close.
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


def strip_string(s: str) -> str:
    """The MATH-benchmark answer normaliser used by the strict verifier (no article/punct removal).

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
