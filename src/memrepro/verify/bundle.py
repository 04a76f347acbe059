"""`memrepro bundle RUN OUT.tar.gz`: a run packed for someone else to check with `memrepro verify`.

The archive unpacks to one folder, `<run>-bundle/`, which `memrepro verify` reads as a workflow
directory (`memrepro verify <run>-bundle/results/<run>`):

- `results/<run>/`: every file a job wrote (predictions, metrics, tables, figures, the report, the
  job records and logs), run.json and pipeline_info/;
- `.snakemake/memrepro/settings/`: the settings its records name;
- `config/paper/`, and any other file of the workflow a report job read;
- `bundle.json`: each carried file's sha256, and each file left out by its digest and origin;
- `bundle.sig`, with `--sign KEY`: an ed25519 signature of bundle.json's bytes.

Left out, by digest and origin: the models, checkpoints and datasets (`REFERENCED`). MLflow's
store is left out too: `python -m memrepro.tracking` loads the records into a new one.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import sys
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrepro import __version__
from memrepro.data.io import json_text, read_json
from memrepro.digests import file_digest
from memrepro.settings_files import SETTINGS_DIR
from memrepro.tracking.invocation import commit_text
from memrepro.tracking.results_dir import MANIFEST_SUFFIX, origin_of, records_under
from memrepro.verify import MANIFEST
from memrepro.verify.reports import REPORT_RULES

SIGNATURE = "bundle.sig"
REFERENCED = ("models", "checkpoints", "raw", "data")  # results/<run>/ folders not carried
SMALL_BYTES = 2**20  # a file of a read directory carried: its recipe, not its weights
STORE = ("mlflow.db", "mlflow.db-journal", "mlartifacts")  # MLflow's store: loaded again


class BundleError(ValueError):
    """The run cannot be bundled, or a bundle's signature cannot be checked."""


def carried(results: Path, read: set[str]) -> Iterator[Path]:
    """The files of results/<run> a bundle carries: all but MLflow's store and the folders
    referenced by digest. Of those folders it carries the download manifests (they name the
    origins) and what a report job read (`read`): files, and a directory's files up to
    `SMALL_BYTES` (a checkpoint's recipe and metrics, not its weights)."""
    for path in sorted(results.rglob("*")):
        top = path.relative_to(results).parts[0]
        if not path.is_file() or top in STORE:
            continue
        small = path.stat().st_size <= SMALL_BYTES and any(str(d) in read for d in path.parents)
        if top in REFERENCED and not (
            path.name.endswith(MANIFEST_SUFFIX) or str(path) in read or small
        ):
            continue
        yield path


def report_reads(records: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every file a report job read (memrepro verify reads them again)."""
    return {path for r in records if r["rule"] in REPORT_RULES for path in r.get("inputs", {})}


def workflow_inputs(records: Sequence[Mapping[str, Any]], workdir: Path) -> set[Path]:
    """The files outside results/ that report jobs read and no job wrote (config/paper/)."""
    written = {path for record in records for path in record.get("outputs", {})}
    found = set()
    for record in records:
        if record["rule"] not in REPORT_RULES:
            continue
        for path in record.get("inputs", {}):
            if path in written:
                continue
            if Path(os.path.relpath(path, workdir)).parts[0] == "..":
                raise BundleError(f"{record['path']}: it read {path}, outside {workdir}")
            found.add(Path(path))
    return found


def settings_files(records: Sequence[Mapping[str, Any]], workdir: Path) -> set[Path]:
    """The settings files the records name, where they are."""
    names = {r.get("tags", {}).get("settings.digest") for r in records}
    folder = workdir / SETTINGS_DIR
    return {
        folder / f"{name}.json" for name in names if name and (folder / f"{name}.json").is_file()
    }


def referenced(
    records: Sequence[Mapping[str, Any]], results: Path, carried: set[str]
) -> dict[str, Any]:
    """Each job output of a `REFERENCED` folder not `carried` whole: its sha256, the rule that
    wrote it, and its origin (a download's manifest: source, revision, sha256 on arrival). A
    directory elsewhere is carried whole, and checked against its record's digest."""
    workdir = results.parent.parent
    left: dict[str, Any] = {}
    finished = [r for r in records if r.get("status") == "FINISHED"]
    for record in sorted(finished, key=lambda r: int(r.get("end_ms") or 0)):
        for path, digest in record.get("outputs", {}).items():
            name = os.path.relpath(path, workdir)
            if not in_referenced_folder(Path(path), results) or name in carried:
                continue
            left[name] = {
                "sha256": digest,
                "rule": record["rule"],
                "wildcards": record.get("wildcards", {}),
                "origin": origin_of(record),
            }
    return left


def in_referenced_folder(path: Path, results: Path) -> bool:
    """Whether `path` lies in one of results/<run>'s `REFERENCED` folders."""
    return path.is_relative_to(results) and path.relative_to(results).parts[0] in REFERENCED


def manifest(results: Path, files: Sequence[Path], workdir: Path) -> dict[str, Any]:
    names = {os.path.relpath(p, workdir): file_digest(p) for p in files}
    return {
        "bundle": 1,
        "run": results.name,
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "made_by": f"memrepro {__version__} ({commit_text()})",
        "files": names,
        "referenced": referenced(records_under(results), results, set(names)),
    }


def sign(data: bytes, key_file: Path) -> bytes:
    """An ed25519 signature of `data` by the PEM private key in `key_file`, base64."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(key_file.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise BundleError(f"{key_file}: not a PEM private key without a password ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise BundleError(f"{key_file}: not an ed25519 key (openssl genpkey -algorithm ed25519)")
    return base64.b64encode(key.sign(data)) + b"\n"


def signature_holds(data: bytes, signature: bytes, public_file: Path) -> bool:
    """Whether `signature` (base64) signs `data` under the PEM public key in `public_file`."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(public_file.read_bytes())
    except (OSError, ValueError) as exc:
        raise BundleError(f"{public_file}: not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise BundleError(f"{public_file}: not an ed25519 public key")
    try:
        key.verify(base64.b64decode(signature.strip(), validate=True), data)
    except (InvalidSignature, ValueError):
        return False
    return True


def read_manifest(results: Path) -> dict[str, Any] | None:
    """The bundle.json of the bundle `results` lies in; None for a results directory."""
    path = results.parent.parent / MANIFEST
    if not path.is_file():
        return None
    found = read_json(path)
    if not isinstance(found, dict) or not all(
        isinstance(found.get(key), dict) for key in ("files", "referenced")
    ):
        raise BundleError(f"{path}: not a bundle manifest (an object with 'files', 'referenced')")
    return found


def write_bundle(results: Path, out: Path, key_file: Path | None = None) -> dict[str, Any]:
    """The bundle of `results` (a workflow's results/<run>) at `out`, written whole or not at
    all; returns its manifest."""
    results = results.resolve()
    workdir = results.parent.parent
    records = records_under(results)
    if not records:
        raise BundleError(f"{results}: no job records under logs/: not a run")
    files = [
        *carried(results, report_reads(records)),
        *sorted(settings_files(records, workdir)),
        *sorted(workflow_inputs(records, workdir)),
    ]
    made = manifest(results, files, workdir)
    text = json_text(made).encode()
    extra = {MANIFEST: text} | ({SIGNATURE: sign(text, key_file)} if key_file else {})
    top = f"{results.name}-bundle"
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w:gz", dereference=True) as tar:
        for path in files:
            tar.add(path, arcname=f"{top}/{os.path.relpath(path, workdir)}", recursive=False)
        for name, data in extra.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
    partial.replace(out)
    return made


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memrepro bundle", description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="results/<run> of a workflow directory")
    parser.add_argument("out", type=Path, help="the archive to write (.tar.gz)")
    parser.add_argument("--sign", type=Path, metavar="KEY", help="an ed25519 private key (PEM)")
    args = parser.parse_args(argv)
    if not (args.run / "logs").is_dir():
        sys.exit(
            f"memrepro bundle: {args.run}: not a results directory (no logs/ with job records)"
        )
    try:
        made = write_bundle(args.run, args.out, args.sign)
    except (BundleError, OSError) as exc:
        sys.exit(f"memrepro bundle: {exc}")
    size = args.out.stat().st_size
    signed = f"signed with {args.sign}" if args.sign else "unsigned (--sign KEY signs it)"
    print(
        f"{args.out}: {len(made['files'])} files carried, {len(made['referenced'])} referenced "
        f"by digest and origin, {size / 2**20:.1f} MiB, {signed}"
    )
    run = made["run"]
    print(f"check it: tar xzf {args.out.name} && memrepro verify {run}-bundle/results/{run}")


if __name__ == "__main__":
    main()
