"""Digests that the producer of a file and every later reader compute alike."""

from __future__ import annotations

import hashlib
import os

from memrepro import digests
from memrepro.digests import file_digest


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_directory_digest_lists_its_files_and_leaves_out_snakemake_markers(tmp_path):
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_bytes(b"{}")
    (model / "sub/w.bin").write_bytes(b"xyz")
    listing = f"config.json {sha(b'{}')}\nsub/w.bin {sha(b'xyz')}"
    written = file_digest(model)
    assert written == sha(listing.encode())
    (model / ".snakemake_timestamp").write_text("")  # Snakemake adds it after the job ends
    assert file_digest(model) == written
    (model / "sub/w.bin").write_bytes(b"xyZ")
    assert file_digest(model) != written


def test_a_large_file_is_hashed_in_full_once_and_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(digests, "CACHED_FROM_BYTES", 1000)
    monkeypatch.setenv(digests.ENV_DIGEST_CACHE, str(tmp_path / "cache"))
    shard = tmp_path / "model-00001.safetensors"
    data = os.urandom(5000)
    shard.write_bytes(data)
    assert file_digest(shard) == sha(data)  # every byte, not size and mtime
    [entry] = (tmp_path / "cache").rglob("*.json")
    stat = shard.stat()
    # same size and modification time: the cached digest (proof that it was not hashed again)
    shard.write_bytes(bytes(5000))
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_digest(shard) == sha(data)
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # rewritten in place
    assert file_digest(shard) == sha(bytes(5000))
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2 and entry.is_file()


def test_a_torn_cache_entry_or_an_unwritable_cache_still_gives_the_digest(tmp_path, monkeypatch):
    monkeypatch.setattr(digests, "CACHED_FROM_BYTES", 10)
    monkeypatch.setenv(digests.ENV_DIGEST_CACHE, str(tmp_path / "cache"))
    shard = tmp_path / "w.bin"
    shard.write_bytes(b"0123456789abc")
    file_digest(shard)
    [entry] = (tmp_path / "cache").rglob("*.json")
    entry.write_text('{"sha2')
    assert file_digest(shard) == sha(b"0123456789abc")
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    monkeypatch.setenv(digests.ENV_DIGEST_CACHE, str(blocker / "cache"))
    assert file_digest(shard) == sha(b"0123456789abc")
