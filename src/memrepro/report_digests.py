"""Did a change of code leave every table and figure byte for byte the same?

`python -m memrepro.report_digests record RESULTS FILE` writes, for each job of a finished run that
renders what others computed (tables, figures, case studies, training curves, the reproduction
report), the digest of what it read (its inputs and settings) and of each file it wrote; `check
RESULTS FILE` compares another run with them. Only the footnote naming the commit, the config and
the invocation ("Made by …; its lineage") and the reproduction report's measured compute (the
benchmark files it reads for it) are masked. A job whose inputs differ from the recorded
ones (the evaluations changed, or Figure 10's measured times) is listed as not compared: its output
says nothing of the report code. Figures a job links and training logs' wall times do not count as
what it read. Exit status of `check`: 0 when every compared output is the same
and every recorded job ran."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memrepro.data.io import write_json_atomic
from memrepro.digests import SNAKEMAKE_MARKERS, file_digest
from memrepro.run_compare import TRAINING_LOG, training_log
from memrepro.tracking.record import RECORD_SUFFIX, read_record

# the jobs that only render what others computed (workflow/rules/report.smk, training.smk)
REPORT_RULES = (
    "make_table",
    "plot_figure",
    "reproduction",
    "case_study",
    "plot_training_curve",
    "plot_memalpha_training_curve",
)
FOOTNOTE = re.compile(rb"Made by .*?; its lineage")  # memrepro.tracking.invocation.made_by
MASKED = b"Made by (masked); its lineage"
# the reproduction report's measured compute (memrepro.report.compute), read from benchmark files
MEASURED = re.compile(rb"Measured compute: [^\n<]*")
MEASURED_MASK = b"Measured compute: (masked)"
MEASURED_READ = ("reproduction", "/benchmarks/")  # the job, and the files it reads for it
TEXT_SUFFIXES = (".md", ".tex", ".html")
IMAGE_SUFFIXES = (".png", ".pdf")


def masked_digest(path: Path) -> str:
    """sha256 of a file (memrepro.digests'), its provenance footnote and measured compute masked
    in Markdown, LaTeX and HTML."""
    if not path.name.endswith(TEXT_SUFFIXES):
        return file_digest(path)
    text = MEASURED.sub(MEASURED_MASK, FOOTNOTE.sub(MASKED, path.read_bytes()))
    return "sha256:" + hashlib.sha256(text).hexdigest()


def read_digest(path: Path) -> str:
    """What a report job read, as far as its output can depend on it: a figure image by name only
    (the reproduction report links it, never reads its pixels), a training log without its wall
    times (memrepro.run_compare), a directory (a checkpoint, a model) as the listing of its files so
    read, anything else as `masked_digest`."""
    if path.is_dir():
        listing = [
            f"{p.relative_to(path)} {read_digest(p)}"
            for p in sorted(path.rglob("*"))
            if p.is_file() and p.name not in SNAKEMAKE_MARKERS
        ]
        return hashlib.sha256("\n".join(listing).encode()).hexdigest()
    if not path.exists():
        return "absent"
    if path.suffix in IMAGE_SUFFIXES:
        return "an image, linked"
    if path.name == TRAINING_LOG:
        return hashlib.sha256(json.dumps(training_log(path)).encode()).hexdigest()
    return masked_digest(path)


def _latest_finished(logs: Path) -> dict[str, dict[str, Any]]:
    """Each report job's newest finished record, keyed by the outputs it wrote."""
    latest: dict[str, dict[str, Any]] = {}
    for path in sorted(logs.rglob(f"*{RECORD_SUFFIX}")):
        record = read_record(path)
        if not record or record["rule"] not in REPORT_RULES or record.get("status") != "FINISHED":
            continue
        key = " ".join(sorted(record["outputs"]))
        if key not in latest or record["start_ms"] > latest[key]["start_ms"]:
            latest[key] = record
    return latest


def located(path: str, results: Path, record: Mapping[str, Any]) -> Path:
    """Where a path a job named lies now: under `results` when it is in the job's results
    directory (its log's, `results/<run>/logs/...`: wherever that directory was moved or
    renamed since), else where the job ran (the config's files)."""
    run_dir = Path(record["log"]).parts[:2]
    parts = Path(path).parts
    if parts[:2] == run_dir:
        return results.joinpath(*parts[2:])
    return Path(record["cwd"]) / path


def named_in_settings(record: Mapping[str, Any]) -> list[str]:
    """The run's files a job's settings name (Figure 10's benchmark files and model directories):
    read by the job, though not passed as its inputs, so not in its record's."""
    prefix = str(Path(*Path(record["log"]).parts[:2])) + "/"
    found = []
    for value in (record.get("params") or {}).values():
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        strings = parsed if isinstance(parsed, list) else [parsed]
        found += [v for v in strings if isinstance(v, str) and v.startswith(prefix)]
    return sorted(set(found))


def input_digest(record: Mapping[str, Any], path: str, results: Path) -> str:
    """What a report job read of `path`: its digest (`read_digest`), except the benchmark files
    the reproduction report reads for its measured compute, which is masked."""
    job, folder = MEASURED_READ
    if record["rule"] == job and folder in path:
        return "a measured time, masked"
    return read_digest(located(path, results, record))


def report_jobs(results: Path) -> dict[str, dict[str, Any]]:
    """What each report job of `results` read (one digest over its inputs, the run's files its
    settings name, and its settings) and wrote (each output's masked digest), by the paths the
    job named."""
    jobs = {}
    for key, record in _latest_finished(results / "logs").items():
        inputs = {
            path: input_digest(record, path, results)
            for path in sorted({*record.get("inputs", {}), *named_in_settings(record)})
        }
        read = json.dumps({"inputs": inputs, "params": record.get("params")}, sort_keys=True)
        jobs[key] = {
            "rule": record["rule"],
            "read": hashlib.sha256(read.encode()).hexdigest(),
            "wrote": {
                path: masked_digest(located(path, results, record))
                for path in sorted(record["outputs"])
            },
        }
    return jobs


def compare(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> dict[str, list[str]]:
    """`same` and `differ` (output files of jobs that read the same as recorded), `not_compared`
    (jobs that read something else), `missing` (recorded jobs that did not run) and `new`."""
    found: dict[str, list[str]] = {k: [] for k in ("same", "differ", "not_compared", "missing")}
    for key, job in recorded.items():
        if key not in now:
            found["missing"].append(key)
        elif now[key]["read"] != job["read"]:
            found["not_compared"].append(key)
        else:
            for path, digest in job["wrote"].items():
                same = now[key]["wrote"].get(path) == digest
                found["same" if same else "differ"].append(path)
    found["new"] = sorted(set(now) - set(recorded))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("results", type=Path, help="a finished run's results directory")
    parser.add_argument("file", type=Path, help="the recorded digests (JSON)")
    args = parser.parse_args(argv)
    if not (args.results / "logs").is_dir():
        raise SystemExit(f"{args.results}: not a results directory of a finished run (no logs/)")
    now = report_jobs(args.results)
    if args.action == "record":
        write_json_atomic(args.file, now)
        print(f"{args.file}: {len(now)} report jobs recorded")
        return
    found = compare(json.loads(args.file.read_text(encoding="utf-8")), now)
    print(", ".join(f"{len(v)} {k.replace('_', ' ')}" for k, v in found.items()))
    for key in ("differ", "missing"):
        for name in found[key]:
            print(f"{key}: {name}")
    raise SystemExit(1 if found["differ"] or found["missing"] else 0)


if __name__ == "__main__":
    main()
