import hashlib
import importlib.util
import json

import pytest

from memrepro.data.essays import (
    build_essay_json,
    essay_urls,
    fetch_essays,
    html_to_text,
    load_essay_text,
)
from memrepro.data.ruler import split_sentences
from memrepro.data.sources import fixture_path

PINNED = "78774ab3e2ce64051713ca784d521ac4df5ac64e"
PAGE = """<html><head><title>Skip me</title><style>p {color: red}</style></head><body>
<table><tr><td><img src="x.gif"></td></tr></table>
<font size="2" face="verdana">April 2031<br><br>Rivers &amp; roads<br>
both bend.<p>Second paragraph with <a href="/x.html">a link</a>.</p>
<script>var ignored = 1;</script></font>
<font>Footer that is not the essay.</font></body></html>"""


def test_build_essay_json_concatenates_as_is():
    assert build_essay_json(["One.", "Two.\n", "Three"]) == {"text": "One.Two.\nThree"}
    assert build_essay_json([]) == {"text": ""}


def test_load_essay_text(tmp_path):
    path = tmp_path / "essays.json"
    path.write_text(json.dumps({"text": "Some essay text."}))
    assert load_essay_text(path) == "Some essay text."
    cases = {
        '["text"]': "expected a JSON object",
        '{"body": "x"}': 'no "text" key',
        '{"text": 3}': '"text" must be a string',
        '{"text": "  \\n"}': '"text" is empty',
    }
    for content, message in cases.items():
        path.write_text(content)
        with pytest.raises(ValueError, match=message) as info:
            load_essay_text(path)
        assert str(path) in str(info.value)
    with pytest.raises(FileNotFoundError, match=r"nope\.json"):
        load_essay_text(tmp_path / "nope.json")


def test_packaged_url_list():
    urls = essay_urls()
    assert len(urls) == len(set(urls)) == 218
    repo, pages = urls[:49], urls[49:]
    prefix = (
        f"https://raw.githubusercontent.com/gkamradt/LLMTest_NeedleInAHaystack/{PINNED}"
        "/needlehaystack/PaulGrahamEssays/"
    )
    assert all(u.startswith(prefix) and u.endswith(".txt") for u in repo)
    assert all(u.startswith("http://www.paulgraham.com/") and u.endswith(".html") for u in pages)
    names = [u.rsplit("/", 1)[1] for u in urls]
    assert names[:49] == sorted(names[:49]) and names[49:] == sorted(names[49:])  # RULER's order
    assert "worked.txt" in names and "greatwork.html" in names


def test_essay_urls_from_a_file(tmp_path):
    path = tmp_path / "urls.txt"
    path.write_text("# a comment\n\nhttp://a/x.txt\n  http://b/y.html  \n")
    assert essay_urls(path) == ["http://a/x.txt", "http://b/y.html"]


def test_html_to_text_keeps_the_first_font_element():
    assert html_to_text(PAGE) == (
        "April 2031\n\nRivers & roads\nboth bend.\n\nSecond paragraph with a link.\n"
    )
    assert html_to_text("<html><body><p>No font here.</p></body></html>") == "No font here.\n"


def test_fetch_essays_over_http(http_root, tmp_path):
    root, base = http_root
    (root / "a.txt").write_bytes("First essay \u2014 plain.\n".encode())
    (root / "b.html").write_text(PAGE, encoding="utf-8")
    dest = tmp_path / "out" / "PaulGrahamEssays.json"
    urls = [f"{base}/a.txt", f"{base}/b.html"]
    manifest = fetch_essays(urls, dest)
    expected = "First essay \u2014 plain.\n" + html_to_text(PAGE)
    assert load_essay_text(dest) == expected
    assert manifest["path"] == str(dest) and manifest["source"] == "paul_graham_essays"
    assert manifest["sha256"] == hashlib.sha256(dest.read_bytes()).hexdigest()
    assert manifest["bytes"] == dest.stat().st_size
    assert [e["url"] for e in manifest["essays"]] == urls
    assert manifest["essays"][1]["sha256"] == hashlib.sha256(PAGE.encode()).hexdigest()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["PaulGrahamEssays.json"]


def test_fetch_essays_failure_leaves_dest_alone(http_root, tmp_path):
    root, base = http_root
    (root / "a.txt").write_text("Essay.")
    dest = tmp_path / "essays.json"
    dest.write_text('{"text": "previous"}')
    with pytest.raises(RuntimeError, match=r"missing\.txt"):
        fetch_essays([f"{base}/a.txt", f"{base}/missing.txt"], dest)
    assert load_essay_text(dest) == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["essays.json", "www"]
    with pytest.raises(ValueError, match="no URLs"):
        fetch_essays([], dest)


def test_essay_fixture_schema_and_size():
    text = load_essay_text(fixture_path("essay_fixture.json"))
    words = text.split()
    assert 3000 <= len(words) <= 5000
    sentences = split_sentences(" ".join(words))
    assert 180 <= len(sentences) <= 240
    assert len(set(sentences)) > 0.95 * len(sentences)  # invented, varied prose
    assert "special magic" not in text


def test_essay_fixture_is_reproducible(repo, tmp_path):
    spec = importlib.util.spec_from_file_location(
        "make_essay", repo / "scripts/fixtures/make_essay.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "essay.json"
    module.main(str(out))
    assert out.read_bytes() == fixture_path("essay_fixture.json").read_bytes()


def test_download_rule_source_assembles_the_essays(http_root, tmp_path, monkeypatch):
    from memrepro.data import essays
    from memrepro.data.sources import ChecksumError, fetch_file

    root, base = http_root
    (root / "a.txt").write_text("Essay one. ")
    (root / "b.txt").write_text("Essay two.")
    monkeypatch.setattr(essays, "essay_urls", lambda: [f"{base}/a.txt", f"{base}/b.txt"])
    dest = tmp_path / "raw" / "paul_graham_essays.json"
    entry = fetch_file("pg-essays:paul_graham_essays.json", dest)
    assert load_essay_text(dest) == "Essay one. Essay two."
    assert entry["sha256"] == hashlib.sha256(dest.read_bytes()).hexdigest()
    with pytest.raises(ChecksumError, match="the essays"):
        fetch_file("pg-essays:paul_graham_essays.json", dest, "0" * 64)
