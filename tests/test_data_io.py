import hashlib
import json

import pytest

from memrepro.data.io import (
    append_jsonl,
    iter_jsonl,
    read_json,
    read_jsonl,
    sha256_file,
    write_json_atomic,
    write_jsonl_atomic,
)

ROWS = [{"a": 1, "text": "héllo"}, {"a": 2, "nested": {"x": [1, 2]}}]


def test_jsonl_roundtrip_and_append(tmp_path):
    path = tmp_path / "sub" / "rows.jsonl"
    write_jsonl_atomic(path, ROWS)
    assert read_jsonl(path) == ROWS
    append_jsonl(path, [{"a": 3}])
    append_jsonl(path, iter([{"a": 4}, {"a": 5}]))
    assert [r["a"] for r in iter_jsonl(path)] == [1, 2, 3, 4, 5]
    assert list(tmp_path.joinpath("sub").iterdir()) == [path]  # no temporary files left


def test_append_creates_file(tmp_path):
    path = tmp_path / "new" / "out.jsonl"
    append_jsonl(path, [{"k": "v"}])
    assert path.read_text(encoding="utf-8") == '{"k": "v"}\n'


def test_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n', encoding="utf-8")
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]


def test_truncated_line_names_file_and_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b', encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path.name}:3: invalid JSON"):
        read_jsonl(path)


def test_non_object_line_is_rejected(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"rows.jsonl:2: expected a JSON object, got list"):
        read_jsonl(path)


def test_json_roundtrip(tmp_path):
    path = tmp_path / "x" / "obj.json"
    write_json_atomic(path, {"rows": ROWS})
    assert read_json(path) == {"rows": ROWS}
    write_json_atomic(path, [1, 2])
    assert read_json(path) == [1, 2]


def test_failed_atomic_write_keeps_previous_file(tmp_path):
    path = tmp_path / "obj.json"
    write_json_atomic(path, {"ok": True})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"bad": object()})
    with pytest.raises(TypeError):
        write_jsonl_atomic(path, [{"fine": 1}, {"bad": object()}])
    assert json.loads(path.read_text(encoding="utf-8")) == {"ok": True}
    assert list(tmp_path.iterdir()) == [path]


def test_read_json_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,\n "b": }', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.json:2:\d+: invalid JSON"):
        read_json(bad)
    with pytest.raises(FileNotFoundError, match=r"missing\.json"):
        read_json(tmp_path / "missing.json")


def test_sha256_file(tmp_path):
    path = tmp_path / "blob.bin"
    data = bytes(range(256)) * 5000
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    assert sha256_file(path, chunk_size=1000) == hashlib.sha256(data).hexdigest()
