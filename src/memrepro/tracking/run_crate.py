"""The run as a Workflow Run RO-Crate, `results/<run>/ro-crate-metadata.json`, beside run.json.

It follows the Provenance Run Crate profile (https://w3id.org/ro/wfrun/provenance/0.6) on
RO-Crate 1.3, as Nextflow's nf-prov and Snakemake's report plugins do. The crate's root is the
results directory. It holds:

- the workflow: the Snakefile and its rule files, copied into `pipeline_info/workflow/` with
  the workflow's files a job read (`config/paper/`), each rule a tool and a step;
- one CreateAction per job (its newest record): the rule's tool, the files it read and wrote
  (each with its sha256 and size), its start and end, its status and its container image;
- the run's CreateAction, a ControlAction per job and the engine's OrganizeAction (Snakemake);
- the software that ran: memrepro, Snakemake, Python and each image.

A file outside the workflow directory (a package's fixture) is named by a `file://` URI.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memrepro import __version__
from memrepro.digests import file_digest

CRATE_FILE = "ro-crate-metadata.json"
WORKFLOW_COPY = "pipeline_info/workflow"  # the Snakefile, its rules and the files jobs read
CONTEXT = [
    "https://w3id.org/ro/crate/1.3/context",
    "https://w3id.org/ro/terms/workflow-run/context",
]
PROFILES = {
    "https://w3id.org/ro/wfrun/process/0.6": "Process Run Crate",
    "https://w3id.org/ro/wfrun/workflow/0.6": "Workflow Run Crate",
    "https://w3id.org/ro/wfrun/provenance/0.6": "Provenance Run Crate",
    "https://w3id.org/workflowhub/workflow-ro-crate/1.1": "Workflow RO-Crate",
}
SNAKEMAKE_LANGUAGE = "https://w3id.org/workflowhub/workflow-ro-crate#snakemake"
LICENSE = "https://spdx.org/licenses/CC-BY-4.0"  # the results; the code's licence is its own
STATUS = {
    "FINISHED": "http://schema.org/CompletedActionStatus",
    "FAILED": "http://schema.org/FailedActionStatus",
    "KILLED": "http://schema.org/FailedActionStatus",
    "RUNNING": "http://schema.org/ActiveActionStatus",
}


def iso(ms: int | None) -> str | None:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat() if ms else None


def ref(entity_id: str) -> dict[str, str]:
    return {"@id": entity_id}


def workflow_files(workdir: Path) -> list[Path]:
    """The Snakefile and every rule file, as the workflow directory holds them now."""
    rules = sorted((workdir / "workflow").rglob("*.smk")) if (workdir / "workflow").is_dir() else []
    return [p for p in [workdir / "Snakefile", *rules] if p.is_file()]


class CrateFiles:
    """The crate's data entities: each path a record names, with the sha256 its record gave it,
    by its id in the crate (a workflow file copied into `WORKFLOW_COPY`)."""

    def __init__(self, results: Path, workdir: Path) -> None:
        self.results, self.workdir = results, workdir
        self.files: dict[str, dict[str, Any]] = {}

    def add(self, path: str | Path, digest: str | None = None) -> str:
        """The id of `path`'s entity, made on first sight."""
        path = Path(path)
        if path.is_relative_to(self.results):
            name, where = path.relative_to(self.results).as_posix(), path
        elif path.is_relative_to(self.workdir) and path.is_file():
            name = f"{WORKFLOW_COPY}/{path.relative_to(self.workdir).as_posix()}"
            where = self.results / name
            where.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, where)
            digest = file_digest(where)  # the copy's own
        else:
            name, where = path.as_uri(), path
        if where.is_dir():
            name += "/"
        if name not in self.files:
            entity: dict[str, Any] = {"@id": name, "@type": "Dataset" if where.is_dir() else "File"}
            if where.is_file():
                entity["contentSize"] = where.stat().st_size
            if digest:
                entity["sha256"] = digest.removeprefix("sha256:")
            self.files[name] = entity
        return name

    def refs(self, paths: Mapping[str, str]) -> list[dict[str, str]]:
        """References to the entities of `paths` (path -> the digest a record gave it)."""
        return [ref(self.add(path, digest)) for path, digest in paths.items()]


def image_of(tags: Mapping[str, str]) -> dict[str, Any] | None:
    """A job's container image as a ContainerImage entity, or None (it ran in a venv)."""
    digest = tags.get("container.digest")
    if not digest:
        return None
    name = tags.get("container.image", "")
    kind = "SIFImage" if name.endswith(".sif") else "DockerImage"
    return {
        "@id": f"#image-{digest.removeprefix('sha256:')[:16]}",
        "@type": "ContainerImage",
        "additionalType": ref(f"https://w3id.org/ro/terms/workflow-run#{kind}"),
        "name": name,
        "sha256": digest.removeprefix("sha256:"),
    }


def job_name(record: Mapping[str, Any]) -> str:
    wildcards = " ".join(f"{k}={v}" for k, v in record.get("wildcards", {}).items())
    return f"{record['rule']} {wildcards}".strip()


def job_entities(
    record: Mapping[str, Any], files: CrateFiles, images: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """A job's CreateAction and its ControlAction (the step that ran it)."""
    action_id = f"#job-{record['record']}"
    action: dict[str, Any] = {
        "@id": action_id,
        "@type": "CreateAction",
        "name": job_name(record),
        "instrument": ref(f"#rule-{record['rule']}"),
        "object": files.refs(record.get("inputs", {})),
        "result": files.refs(record.get("outputs", {})),
        "startTime": iso(record.get("start_ms")),
        "endTime": iso(record.get("end_ms")),
        "actionStatus": ref(STATUS.get(record.get("status", "RUNNING"), STATUS["FAILED"])),
    }
    if image := image_of(record.get("tags", {})):
        images[image["@id"]] = image
        action["containerImage"] = ref(image["@id"])
    if record.get("status") in ("FAILED", "KILLED"):
        action["error"] = f"the job ended {record['status']} (its log: {record.get('log')})"
    control = {
        "@id": f"#control-{record['record']}",
        "@type": "ControlAction",
        "name": f"orchestrate {job_name(record)}",
        "instrument": ref(f"#step-{record['rule']}"),
        "object": ref(action_id),
    }
    return [action, control]


def workflow_entities(
    rules: Sequence[str], files: CrateFiles, snakemake_version: str
) -> list[dict[str, Any]]:
    """The workflow (the Snakefile, with its rule files as parts), its tools and steps, and the
    language it is written in."""
    found = [files.add(p) for p in workflow_files(files.workdir)]
    snakefile, rule_files = (found[0], found[1:]) if found else ("#workflow", [])
    workflow = {
        **files.files.pop(snakefile, {}),  # one entity: the file is the workflow
        "@id": snakefile,
        "@type": ["File"] * bool(found) + ["SoftwareSourceCode", "ComputationalWorkflow", "HowTo"],
        "name": "MemRepro: the MemAgent and Mem-α reproduction workflow",
        "programmingLanguage": ref(SNAKEMAKE_LANGUAGE),
        "hasPart": [ref(f"#rule-{rule}") for rule in rules] + [ref(p) for p in rule_files],
        "step": [ref(f"#step-{rule}") for rule in rules],
    }
    tools = [
        {
            "@id": f"#rule-{rule}",
            "@type": "SoftwareApplication",
            "name": f"rule {rule}",
            "softwareRequirements": ref("#memrepro"),
        }
        for rule in rules
    ]
    steps = [
        {
            "@id": f"#step-{rule}",
            "@type": "HowToStep",
            "name": f"rule {rule}",
            "position": str(position),
            "workExample": ref(f"#rule-{rule}"),
        }
        for position, rule in enumerate(rules)
    ]
    language = {
        "@id": SNAKEMAKE_LANGUAGE,
        "@type": "ComputerLanguage",
        "name": "Snakemake",
        "identifier": ref("https://snakemake.readthedocs.io"),
        "url": ref("https://snakemake.readthedocs.io"),
        "version": snakemake_version,
    }
    return [workflow, *tools, *steps, language]


def run_crate(
    results: Path,
    workdir: Path,
    invocation: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The crate's JSON-LD: `records` are the newest record of each job (pipeline_info)."""
    tags = invocation.get("tags", {})
    snakemake_version = tags.get("snakemake.version", "unknown")
    files = CrateFiles(results.resolve(), workdir.resolve())
    images: dict[str, dict[str, Any]] = {}
    rules = list(dict.fromkeys(r["rule"] for r in records))
    workflow = workflow_entities(rules, files, snakemake_version)
    written = {p: d for r in records for p, d in r.get("outputs", {}).items()}
    read_only = {p: d for r in records for p, d in r.get("inputs", {}).items() if p not in written}
    outputs = files.refs(dict(sorted(written.items())))  # first: each file with its writer's digest
    jobs = [e for record in records for e in job_entities(record, files, images)]
    run_id = f"#run-{invocation['invocation']}"
    run = {
        "@id": run_id,
        "@type": "CreateAction",
        "name": f"snakemake {tags.get('targets', 'all')} (invocation {invocation['invocation']})",
        "description": tags.get("command", ""),
        "instrument": ref(workflow[0]["@id"]),
        "object": files.refs(dict(sorted(read_only.items()))),
        "result": outputs,
        "startTime": iso(invocation.get("start_ms")),
        "endTime": iso(invocation.get("end_ms")),
        "actionStatus": ref(STATUS.get(invocation.get("status", "RUNNING"), STATUS["FAILED"])),
    }
    organize = {
        "@id": f"#organize-{invocation['invocation']}",
        "@type": "OrganizeAction",
        "name": "Snakemake's run of the workflow",
        "instrument": ref("#snakemake"),
        "object": [ref(e["@id"]) for e in jobs if e["@type"] == "ControlAction"],
        "result": ref(run_id),
        "startTime": run["startTime"],
        "endTime": run["endTime"],
    }
    software = [
        {"@id": "#snakemake", "@type": "SoftwareApplication", "name": "Snakemake",
         "url": ref("https://snakemake.github.io"), "version": snakemake_version},
        {"@id": "#memrepro", "@type": "SoftwareApplication", "name": "memrepro",
         "version": __version__, "description": f"commit {tags.get('git.commit', 'unknown')}"},
    ]  # fmt: skip
    profiles = [
        {"@id": uri, "@type": ["CreativeWork", "Profile"], "name": name, "version": uri[-3:]}
        for uri, name in PROFILES.items()
    ]
    actions = [run, *[e for e in jobs if e["@type"] == "CreateAction"]]
    root = {
        "@id": "./",
        "@type": "Dataset",
        "name": f"Run {tags.get('run', results.name)} of the MemRepro workflow",
        "description": "Every job of the run: its tool, inputs, outputs, times and software.",
        "datePublished": run["endTime"] or run["startTime"],
        "license": ref(LICENSE),
        "conformsTo": [ref(uri) for uri in PROFILES],
        "mainEntity": ref(workflow[0]["@id"]),
        "hasPart": [ref(workflow[0]["@id"]), *[ref(e["@id"]) for e in files.files.values()]],
        "mentions": [ref(a["@id"]) for a in actions],
    }
    descriptor = {
        "@id": CRATE_FILE,
        "@type": "CreativeWork",
        "conformsTo": ref("https://w3id.org/ro/crate/1.3"),
        "about": ref("./"),
    }
    graph = [
        descriptor, root, *profiles, *workflow, *software, *images.values(),
        run, organize, *jobs, *files.files.values(),
    ]  # fmt: skip
    license_entity = {"@id": LICENSE, "@type": "CreativeWork", "name": "CC BY 4.0"}
    return {"@context": CONTEXT, "@graph": [*graph, license_entity]}
