"""The essay haystack of RULER's NIAH tasks: Paul Graham's essays as `{"text": ...}` JSON.

RULER's `download_paulgraham_essay.py` (MemAgent ships the same script and URL list) downloads
the essays listed in `PaulGrahamEssays_URLs.txt` and concatenates them, without separators, into
PaulGrahamEssays.json: the 49 plain-text essays of gkamradt/LLMTest_NeedleInAHaystack first
(sorted by file name), then the 169 paulgraham.com pages (sorted by name), each page reduced to
its first `<font>` element and converted to text with html2text. We keep that order and the bare
concatenation; HTML is converted with the standard library's html.parser instead of
BeautifulSoup + html2text, so the page text differs in markup details (no Markdown escapes, link
syntax or wrapping), and the .txt files are pinned to one commit of that repository. The URL list
is packaged as `memrepro/data/paul_graham_essays.urls.txt`.

The text is copyrighted, so only users' runs download it; tests and the smoke run use the
self-written `fixtures/essay_fixture.json` in the same schema.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

from tqdm import tqdm

from memrepro.data.io import read_json, sha256_file, write_text_atomic

URLS_FILE = "paul_graham_essays.urls.txt"  # packaged next to this module
ESSAY_FIXTURE = "essay_fixture.json"
_BLOCK_TAGS = {"p", "div", "br", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "table", "ul"}
_SKIPPED_TAGS = {"script", "style", "head", "title"}


def build_essay_json(texts: Iterable[str]) -> dict[str, str]:
    """RULER's PaulGrahamEssays.json object: the texts concatenated as they are."""
    return {"text": "".join(texts)}


def load_essay_text(path: str | os.PathLike[str]) -> str:
    """The haystack text of an essay JSON file ({"text": ...}); clear errors on anything else."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(
            f'{path}: expected a JSON object {{"text": ...}}, got {type(data).__name__}'
        )
    if "text" not in data:
        raise ValueError(f'{path}: no "text" key (keys: {sorted(data)})')
    text = data["text"]
    if not isinstance(text, str):
        raise ValueError(f'{path}: "text" must be a string, got {type(text).__name__}')
    if not text.strip():
        raise ValueError(f'{path}: "text" is empty')
    return text


def essay_urls(path: str | os.PathLike[str] | None = None) -> list[str]:
    """The URL list (one per line; blank lines and # comments skipped), packaged by default."""
    if path is None:
        text = (resources.files("memrepro.data") / URLS_FILE).read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


class _FontText(HTMLParser):
    """Text of the first <font> element (the essay body on paulgraham.com), else of the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page: list[str] = []
        self.font: list[str] = []
        self._font_depth = 0
        self._font_done = False
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self._skip += 1
        elif tag == "font" and not self._font_done:
            self._font_depth += 1
        if tag in _BLOCK_TAGS:
            self._emit("\n" if tag == "br" else "\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag == "font" and self._font_depth:
            self._font_depth -= 1
            self._font_done = self._font_depth == 0
        if tag in _BLOCK_TAGS and tag != "br":
            self._emit("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:  # source line breaks are spaces; only tags break lines
            self._emit(re.sub(r"\s+", " ", data))

    def _emit(self, text: str) -> None:
        self.page.append(text)
        if self._font_depth:
            self.font.append(text)


def html_to_text(html: str) -> str:
    """Readable text of an essay page: paragraphs separated by blank lines."""
    parser = _FontText()
    parser.feed(html)
    parser.close()
    text = "".join(parser.font or parser.page)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def _download(url: str, timeout: float) -> tuple[bytes, str | None]:
    request = urllib.request.Request(url, headers={"User-Agent": "memrepro"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read(), response.headers.get_content_charset()
    except (urllib.error.URLError, TimeoutError) as e:
        raise RuntimeError(f"download of {url} failed: {e}") from e


def _is_html(url: str, body: bytes) -> bool:
    return url.lower().endswith((".html", ".htm")) or body.lstrip()[:15].lower().startswith(
        (b"<!doctype html", b"<html")
    )


def fetch_essays(
    urls: Sequence[str], dest: str | os.PathLike[str], *, timeout: float = 60.0
) -> dict:
    """Download every URL in order, build the essay JSON and write it atomically to `dest`.

    HTML pages are reduced to text (`html_to_text`); other files are decoded as UTF-8. A failed
    download raises RuntimeError naming the URL and leaves `dest` untouched. Returns a manifest
    entry: what came from where, with the sha256 of every essay and of the written file.
    """
    if not urls:
        raise ValueError("fetch_essays: no URLs given")
    dest = Path(dest)
    texts, essays = [], []
    for url in tqdm(urls, desc="essays", unit="essay", mininterval=1.0):
        body, charset = _download(url, timeout)
        text = body.decode(charset or "utf-8", errors="replace")
        texts.append(html_to_text(text) if _is_html(url, body) else text)
        essays.append({"url": url, "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()})
    write_text_atomic(dest, json.dumps(build_essay_json(texts), ensure_ascii=False))
    return {
        "source": "paul_graham_essays",
        "path": str(dest),
        "sha256": sha256_file(dest),
        "bytes": dest.stat().st_size,
        "essays": essays,
    }
