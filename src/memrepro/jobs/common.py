"""What every job body shares: the log, an engine from its settings, the empty-set guard, and
asking a model many questions in resumable waves."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("memrepro")


def require_rows(rows: Sequence[Any], path: Path, what: str) -> None:
    """Stop on an empty set, naming its file: evaluated, it would read as accuracy 0.0."""
    if not rows:
        raise SystemExit(f"{path}: no {what} (an empty set has no score)")


def build_engine(model: Path | str, spec: dict[str, Any], job_log: Path | None) -> Any:
    """An engine from a config engine block: `kind` picks it, the other keys configure it. A
    server the engine starts (`served`) logs beside the job's log."""
    from memrepro.engines import make_engine

    options = {key: value for key, value in spec.items() if key != "kind"}
    if spec["kind"] == "served" and job_log is not None:
        options["log_path"] = job_log.with_name(f"{job_log.stem}.{Path(model).name}.server.log")
    return make_engine(spec["kind"], str(model), options)


def ask_in_waves(
    requests: Mapping[str, Any],
    partial: Path,
    engine: Callable[[], Any],
    spec: Mapping[str, Any],
    what: str,
    title: str,
    labels: Mapping[str, str] | None = None,
    refuse: Callable[[str], str | None] | None = None,
) -> dict[str, str]:
    """Each request's reply (ChatRequests by key), asked `spec["wave_size"]` at a time: `what`
    names a request in messages, `title` the progress bar.

    Replies are appended to `partial` wave by wave, so a rerun asks only for what is missing (a
    damaged line is dropped with a warning and asked again). A failed request, or a reply that
    `refuse` names a problem of, is not kept: the job fails naming it (by `labels`), and its
    rerun asks only for those. `engine` builds the engine, only when something is left to ask.
    """
    from memrepro.data.io import append_jsonl
    from memrepro.engines.base import SamplingParams
    from memrepro.evaluation import load_finished
    from memrepro.progress import progress

    labels = labels or {}
    done = {r["key"]: r["reply"] for r in load_finished(partial, ("key", "reply"))}
    todo = [key for key in requests if key not in done]
    if todo:
        model = engine()
        sampling = SamplingParams(**spec["sampling"])
        failed = []
        with progress(title, len(requests), len(done), "request") as bar:
            for start in range(0, len(todo), spec["wave_size"]):
                wave = todo[start : start + spec["wave_size"]]
                answered = []
                replies = model.chat([requests[key] for key in wave], sampling)
                for key, completion in zip(wave, replies, strict=True):
                    if completion.failed:
                        failed.append(f"{labels.get(key, key)}: {completion.error}")
                    elif refuse is not None and (why := refuse(completion.text)):
                        failed.append(f"{labels.get(key, key)}: reply refused, {why}")
                    else:
                        answered.append({"key": key, "reply": completion.text})
                append_jsonl(partial, answered)
                done.update((r["key"], r["reply"]) for r in answered)
                bar.advance(len(wave))
        if failed:
            for failure in failed:
                log.warning("%s request of %s", what, failure)
            more = f"; and {len(failed) - 3} more (each in the log)" if failed[3:] else ""
            raise SystemExit(
                f"{len(failed)} {what} request(s) failed (a rerun retries only them): "
                + "; ".join(failed[:3])
                + more
            )
    return {key: done[key] for key in requests}
