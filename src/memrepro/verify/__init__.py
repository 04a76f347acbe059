"""`memrepro verify RUN`: does a run hold the numbers it reports? Re-derived from its own files.

It runs offline, on a CPU, with no model. It reads the results directory `<workdir>/results/<run>`,
the job settings (`<workdir>/.snakemake/memrepro/settings/`) and the paper's numbers the report jobs
read (`<workdir>/config/paper/`): a bundle (`memrepro bundle`) unpacks to just these. It checks in
this order and stops at the first difference, naming the file, the item or key, and both values
(rc 1):

1. every file a job wrote, against the sha256 its record gave it (the newest finished writer);
2. every prediction, scored again by its benchmark's scorer under its job's settings, and every
   rescoring, rescored again from the evaluation's predictions;
3. every metrics file, aggregated again from its predictions;
4. every table, figure and reproduction report, built again from the metrics and the paper's
   numbers, and run.json read again from them (memrepro.verify.reports).

A judge's verdict is read again from its reply, which the line keeps; the judge is not asked again.
A run passes only when nothing differs and every check could be made. The summary lists what
this version does not re-derive, with counts: the renders (LaTeX, HTML, pixels), and predictions
written before their lines kept what their scores derive from.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepro.data.io import read_json, read_jsonl
from memrepro.digests import ENV_DIGEST_CACHE, file_digest
from memrepro.settings_files import SETTINGS_DIR, canonical, digest
from memrepro.tracking.results_dir import records_under

RULES_SCORED = ("evaluate", "merge_eval")  # the jobs whose predictions their benchmark scored
FAMILIES = ("eval", "rescore")  # the directories whose metrics files aggregate predictions
MANIFEST = "bundle.json"  # memrepro.verify.bundle: a bundle's files and what it left out
NOT_YET = ("the LaTeX and HTML renders of the checked tables", "the pixels of the figures")


class VerifyError(ValueError):
    """The run cannot be verified: a file is missing, damaged or of an unknown kind."""


@dataclass(frozen=True)
class Difference:
    """A number the run holds that its own files do not give."""

    where: str
    held: Any
    derived: Any

    def __str__(self) -> str:
        return f"{self.where}: the run holds {self.held!r}, its files give {self.derived!r}"


@dataclass
class Tally:
    """What was checked, and what this version left unchecked (each with a count)."""

    checked: Counter[str] = field(default_factory=Counter)
    left: Counter[str] = field(default_factory=Counter)


def same_number(held: Any, derived: Any) -> bool:
    """Equal, floats up to rounding in the last places (JSON keeps 17 digits)."""
    if isinstance(held, float) and isinstance(derived, float):
        return math.isclose(held, derived, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(held, Mapping) and isinstance(derived, Mapping):
        return held.keys() == derived.keys() and all(same_number(held[k], derived[k]) for k in held)
    if isinstance(held, list) and isinstance(derived, list):
        return len(held) == len(derived) and all(map(same_number, held, derived))
    return type(held) is type(derived) and held == derived


def first_key_apart(held: Mapping[str, Any], derived: Mapping[str, Any]) -> str | None:
    """The first key (sorted) whose values differ, or None."""
    for key in sorted(held.keys() | derived.keys()):
        if not same_number(held.get(key), derived.get(key)):
            return key
    return None


def newest_writers(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each output path -> the finished record that wrote it last."""
    writers: dict[str, Mapping[str, Any]] = {}
    finished = [r for r in records if r.get("status") == "FINISHED"]
    for record in sorted(finished, key=lambda r: int(r.get("end_ms") or 0)):
        for path in record.get("outputs", {}):
            writers[path] = record
    return writers


def digest_differences(
    writers: Mapping[str, Mapping[str, Any]],
    tally: Tally,
    left_out: Mapping[str, Any],
    workdir: Path,
) -> Iterator[Difference]:
    """Every output against the digest its writer recorded; one a bundle left out (`left_out`,
    by path in the workdir) must be named there with that digest."""
    for path, record in sorted(writers.items()):
        recorded = record["outputs"][path]
        if named := left_out.get(os.path.relpath(path, workdir)):  # a folder may be in part
            tally.left["files a bundle references by digest and origin (models, data)"] += 1
            if named["sha256"] != recorded:
                yield Difference(f"{path} (sha256 in {MANIFEST})", recorded, named["sha256"])
            continue
        now = file_digest(Path(path)) if Path(path).exists() else "no such file"
        tally.checked["files against their digests"] += 1
        if now != recorded:
            yield Difference(f"{path} (sha256)", recorded, now)


def bundle_differences(
    manifest: Mapping[str, Any], workdir: Path, tally: Tally
) -> Iterator[Difference]:
    """Every file a bundle carries, against the sha256 its bundle.json gives it."""
    for name, recorded in sorted(manifest["files"].items()):
        path = workdir / name
        now = file_digest(path) if path.is_file() else "no such file"
        tally.checked[f"files against the digests of {MANIFEST}"] += 1
        if now != recorded:
            yield Difference(f"{path} (sha256 in {MANIFEST})", recorded, now)


def settings_of(record: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """A job's settings, from the file its record names by digest; the file must hold them."""
    name = record.get("tags", {}).get("settings.digest")
    if not name:
        raise VerifyError(f"{record['path']}: the record names no settings digest")
    path = results.parent.parent / SETTINGS_DIR / f"{name}.json"
    if not path.is_file():
        raise VerifyError(f"{record['path']}: its settings {name} are not in {path.parent}")
    settings = read_json(path)
    if digest(canonical(settings)) != name:
        raise VerifyError(f"{path}: its content is not the settings its name digests")
    return settings


def scoring_settings(
    writer: Mapping[str, Any], writers: Mapping[str, Mapping[str, Any]], results: Path
) -> dict[str, Any]:
    """The settings its predictions were scored under: the evaluation's own, or for a merged
    one (merge_eval) those of the shards it merged (they differ only in the shard)."""
    if writer["rule"] != "merge_eval":
        return settings_of(writer, results)
    shards = [writers[p] for p in writer.get("inputs", {}) if p in writers]
    if not shards:
        raise VerifyError(f"{writer['path']}: no finished job of this run wrote its shards")
    return settings_of(shards[0], results)


def scoring_task(settings: Mapping[str, Any], task: str) -> Any:
    """The Task an evaluation job scored `task` under (memrepro.jobs.evaluate)."""
    from memrepro.jobs.evaluate import evaluation_task
    from memrepro.systems import system_kind

    return evaluation_task(system_kind(settings["kind"]), settings, task)


def scored_again(settings: Mapping[str, Any], line: Mapping[str, Any]) -> dict[str, Any]:
    """A prediction's scores from its own fields: an instance's questions one by one (Mem-α:
    its responses, the judge's replies, its protocol), a row's by its benchmark's scorer."""
    from memrepro.evaluation import failed_scores, score
    from memrepro.scoring.rescore import instance_scores

    if "scores" in line:  # an instance of questions
        scores = instance_scores(line)
        return {"scores": scores, "score": sum(scores) / len(scores)}
    task = scoring_task(settings, line["task"])
    return failed_scores(task, line) if line["failed"] else score(task, line, line["response"])


def prediction_differences(
    path: Path, settings: Mapping[str, Any], lines: Sequence[dict[str, Any]], tally: Tally
) -> Iterator[Difference]:
    """Each prediction line scored again from its own fields, as its evaluation scored it."""
    for number, line in enumerate(lines, 1):
        try:
            scores = scored_again(settings, line)
        except KeyError as missing:  # the scorer reads a field the line does not keep
            tally.left[f"predictions whose line lacks {missing} ({settings['benchmark']})"] += 1
            continue
        tally.checked["predictions scored again"] += 1
        if key := first_key_apart({k: line.get(k) for k in scores}, scores):
            yield Difference(
                f"{path}:{number} (item {line['index']}) {key}", line.get(key), scores[key]
            )


def rescore_differences(
    path: Path,
    writer: Mapping[str, Any],
    results: Path,
    lines: Sequence[dict[str, Any]],
    tally: Tally,
) -> Iterator[Difference]:
    """A rescore job's predictions against its evaluation's, rescored again by the scorer its
    settings name. A judge is not asked again: its replies are taken from the rescoring, and
    its verdicts read from them."""
    from memrepro.scoring.rescore import rescore_instances, rescore_rows, scorer_kind

    spec = settings_of(writer, results)["scorer"]
    try:
        kind = scorer_kind(spec["kind"])
    except ValueError as exc:
        raise VerifyError(f"{writer['path']}: {exc}") from None
    read = [Path(p) for p in writer["inputs"] if p.endswith(".predictions.jsonl")]
    if len(read) != 1:
        raise VerifyError(
            f"{writer['path']}: a rescoring reads one predictions file, not {len(read)}"
        )
    source = read_jsonl(read[0], required=("task", "index", "score"))
    if len(source) != len(lines):
        yield Difference(f"{path} (lines)", len(lines), len(source))
        return
    if not kind.instances:
        derived = rescore_rows(source)
    elif kind.judge:
        replied = [
            {**mine, "judge_replies": {**mine["judge_replies"], **line.get("judge_replies", {})}}
            for mine, line in zip(source, lines, strict=True)
        ]
        derived = rescore_instances(replied, protocol=replied[0]["protocol"])
    else:
        derived = rescore_instances(source, protocol=spec["protocol"])
    if len(derived) != len(lines):
        yield Difference(f"{path} (lines)", len(lines), len(derived))
        return
    for number, (line, again) in enumerate(zip(lines, derived, strict=True), 1):
        tally.checked["rescored predictions rescored again"] += 1
        if key := first_key_apart(line, again):
            yield Difference(
                f"{path}:{number} (item {line['index']}) {key}", line.get(key), again.get(key)
            )


def metrics_differences(
    path: Path, lines: Sequence[dict[str, Any]], tally: Tally
) -> Iterator[Difference]:
    """Each metrics record of `path` aggregated again from its predictions' lines of its task."""
    from memrepro.evaluation import summarize

    held = read_json(path)
    if not isinstance(held, list) or not all(isinstance(m, dict) for m in held):
        raise VerifyError(f"{path}: not a JSON list of metrics records")
    for position, record in enumerate(held):
        mine = [
            {k: v for k, v in line.items() if k != "task"}
            for line in lines
            if line["task"] == record.get("task")
        ]
        derived = summarize(
            mine, record["benchmark"], record["task"], record["system"], record["length"]
        )
        derived |= {k: record[k] for k in ("scorer",) if k in record}
        tally.checked["metrics records aggregated again"] += 1
        if key := first_key_apart(record, derived):
            yield Difference(
                f"{path}: record {position} ({record['task']}) {key}",
                record.get(key),
                derived.get(key),
            )


def differences(results: Path, tally: Tally) -> Iterator[Difference]:
    """Every difference, in the order of the checks (module docstring)."""
    from memrepro.verify.bundle import read_manifest

    workdir = results.resolve().parent.parent
    manifest = read_manifest(results) or {"files": {}, "referenced": {}}
    yield from bundle_differences(manifest, workdir, tally)
    writers = newest_writers(records_under(results.resolve()))
    yield from digest_differences(writers, tally, manifest["referenced"], workdir)
    for metrics in sorted(
        p for family in FAMILIES for p in (results / family).rglob("*.metrics.json")
    ):
        predictions = metrics.with_name(metrics.name.replace(".metrics.json", ".predictions.jsonl"))
        if not predictions.is_file():
            raise VerifyError(f"{metrics}: no predictions file beside it ({predictions.name})")
        lines = read_jsonl(predictions, required=("task", "index"))
        writer = writers.get(str(metrics.resolve()))
        if writer is None:
            raise VerifyError(f"{metrics}: no finished job of this run wrote it")
        if writer["rule"] in RULES_SCORED:
            settings = scoring_settings(writer, writers, results)
            yield from prediction_differences(predictions, settings, lines, tally)
        elif writer["rule"] == "rescore":
            yield from rescore_differences(predictions, writer, results, lines, tally)
        else:
            tally.left[f"{writer['rule']} predictions"] += len(lines)
        yield from metrics_differences(metrics, lines, tally)
    from memrepro.verify.reports import report_differences

    yield from report_differences(results, writers, tally)


def summary(tally: Tally) -> list[str]:
    """The lines that say what was checked and what was left."""
    lines = [f"checked: {n} {what}" for what, n in tally.checked.items()]
    lines += [f"not re-derived by this version: {what} ({n})" for what, n in tally.left.items()]
    return lines + [f"not re-derived by this version: {what}" for what in NOT_YET]


def signature_line(results: Path, public_key: Path | None) -> str:
    """What is known of who made the run: a bundle's signature checked against `public_key`,
    or why it is not. A bad or missing signature where a key is given stops verify."""
    from memrepro.verify.bundle import SIGNATURE, read_manifest, signature_holds

    folder = results.parent.parent
    if read_manifest(results) is None:
        if public_key is not None:
            raise VerifyError(f"{results}: not in a bundle ({MANIFEST}), so no signature to check")
        return "a results directory, not a bundle: no signature"
    signature = folder / SIGNATURE
    if not signature.is_file():
        if public_key is not None:
            raise VerifyError(f"{folder}: the bundle is unsigned (no {SIGNATURE})")
        return "an unsigned bundle: who made it is not checked"
    if public_key is None:
        return f"a signed bundle, the signature not checked: --key PUB checks it ({SIGNATURE})"
    if not signature_holds((folder / MANIFEST).read_bytes(), signature.read_bytes(), public_key):
        raise VerifyError(f"{signature}: not a signature of {MANIFEST} by the key in {public_key}")
    return f"a bundle signed by the key in {public_key} (ed25519)"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memrepro verify", description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="results/<run>, or an unpacked bundle's")
    parser.add_argument(
        "--key", type=Path, metavar="PUB", help="the bundle's signer's ed25519 public key (PEM)"
    )
    args = parser.parse_args(argv)
    results = args.run
    os.environ.pop(ENV_DIGEST_CACHE, None)  # every file hashed now, none read from a cache
    if not (results / "logs").is_dir():
        sys.exit(f"memrepro verify: {results}: not a results directory (no logs/ with job records)")
    tally = Tally()
    try:
        signed = signature_line(results, args.key)
        first = next(differences(results, tally), None)
    except (VerifyError, ValueError, OSError) as exc:
        sys.exit(f"memrepro verify: {exc}")
    if first is not None:
        sys.exit(f"memrepro verify: {first}")
    print("\n".join([*summary(tally), signed]))
    print(f"verified: {results}: every number checked is what its files give")


if __name__ == "__main__":
    main()
