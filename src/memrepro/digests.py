"""Content digests of the files and directories a job reads and writes (its provenance).

A digest is the same whoever computes it: the job that wrote a directory and every job that
reads it later. Snakemake's own markers in an output directory (`.snakemake_timestamp`, added
after its job ended) are left out, and every file is hashed in full, however large, streaming.

Large files (model shards, container images) are hashed once: their digest is kept in a cache
directory (`MEMREPRO_DIGEST_CACHE`, which a Snakemake run sets to `<results>/provenance/digests`),
keyed by the file's path, device, inode, size and modification time, so the next job that reads
the file finds it there instead of reading gigabytes again. A file rewritten in place changes its
modification time, and so its key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from memrepro.data.io import sha256_file, write_json_atomic

ENV_DIGEST_CACHE = "MEMREPRO_DIGEST_CACHE"
CACHED_FROM_BYTES = 64 * 2**20  # smaller files are hashed each time: faster than a cache lookup
SNAKEMAKE_MARKERS = (".snakemake_timestamp",)


def file_digest(path: Path) -> str:
    """`sha256:<hex>` of a file, or of a directory's sorted (relative path, file digest) listing
    without Snakemake's markers."""
    path = Path(path)
    if path.is_dir():
        listing = "\n".join(
            f"{p.relative_to(path)} {file_digest(p)}"
            for p in sorted(path.rglob("*"))
            if p.is_file() and p.name not in SNAKEMAKE_MARKERS
        )
        return "sha256:" + hashlib.sha256(listing.encode()).hexdigest()
    return "sha256:" + _file_sha256(path)


def _file_sha256(path: Path) -> str:
    stat = path.stat()
    cache = os.environ.get(ENV_DIGEST_CACHE)
    if stat.st_size < CACHED_FROM_BYTES or not cache:
        return sha256_file(path)
    identity = [str(path.resolve()), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns]
    key = hashlib.sha256(json.dumps(identity).encode()).hexdigest()
    entry = Path(cache) / key[:2] / f"{key}.json"
    try:
        return json.loads(entry.read_text())["sha256"]
    except (OSError, ValueError, KeyError):  # not cached yet, or a torn entry: hash again
        pass
    digest = sha256_file(path)
    with contextlib.suppress(OSError):  # read-only results: the digest is right, only not kept
        write_json_atomic(entry, {"path": identity[0], "size": stat.st_size, "sha256": digest})
    return digest
