"""`make bench`: the speed figures of the pipeline, each measured in this one run.

Rows: provenance cost of a trivial job (tracking on vs off) and of loading the records into
MLflow; planning the paper DAG under the SLURM profile; RULER-HQA eval-set synthesis against the
official algorithm (scripts/bench_synthesis.py) with peak RSS; the evaluation path streaming
doc-id contexts against stored text, per token (scripts/bench_eval_memory.py); the peak memory
of a 50 MB context cut to its long-context window, tokenized only as far as the window needs
against tokenized whole; the agent loop's overhead over raw generation on real vLLM
(scripts/bench_agent_overhead.py, in .venv-vllm); the smoke DAG in the venv and with every job
in its container image (their ratio, and whether they computed the same files); the images'
sizes (and, with --rebuild-images, build times from nothing); the per-job wall time of the last
`make mini` run, if there is one; the verdicts' error rates and coverage at the papers' n
(memrepro.scoring.calibration).
Every ratio compares two measurements of this run on this machine. Nothing is asserted.

    python scripts/bench.py                     # everything, ~20 min on 2 cores (images built)
    python scripts/bench.py --rebuild-images    # + each image from nothing, ~12 min more
    python scripts/bench.py --skip-smoke --sizes 200 3200 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import bench_eval_memory  # noqa: E402
import bench_synthesis  # noqa: E402

SIZES = (200, 800, 3200, 25600)
EVAL_QUESTIONS = 128  # RULER-HQA's filtered dev questions
DEV_QUESTIONS = 6664  # x 10 paragraphs: the real dev pool's 66,635 documents, rounded


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--questions", type=int, default=EVAL_QUESTIONS)
    parser.add_argument("--dev-questions", type=int, default=DEV_QUESTIONS)
    parser.add_argument("--repeats", type=int, default=5, help="paired runs of the trivial job")
    parser.add_argument("--skip-smoke", action="store_true", help="skip the smoke DAG runs")
    parser.add_argument(
        "--skip-containers", action="store_true", help="no images, no smoke run in containers"
    )
    parser.add_argument(
        "--rebuild-images", action="store_true", help="time each image's build from nothing"
    )
    return parser.parse_args(argv)


def heading(title: str) -> None:
    print(f"\n## {title}", flush=True)


def env_without_apptainer() -> dict[str, str]:
    """PATH without any directory holding apptainer or singularity: plans as such a host."""
    dirs = os.environ["PATH"].split(os.pathsep)
    kept = [d for d in dirs if not any(Path(d, b).exists() for b in ("apptainer", "singularity"))]
    return {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), *kept])}


def bench_provenance(work: Path, repeats: int) -> None:
    heading("Provenance: a trivial job (download-data of a fixture), tracking on vs off")
    results = work / "results/bench"
    settings = json.dumps({"url": "fixture:squad_dev_fixture.json", "sha256": None})

    def job(i: int, tracking: str) -> float:
        command = bench_synthesis.memrepro(
            *("--log", str(results / f"logs/download_data/{tracking}{i}.log")),
            *("download-data", "--settings", settings),
            *("--out", str(work / f"raw/{tracking}{i}.json")),
            *("--manifest", str(work / f"raw/{tracking}{i}.json.manifest.json")),
        )
        env = {**os.environ, "MEMREPRO_TRACKING": tracking}
        began = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        return time.perf_counter() - began

    from memrepro.tracking.invocation import end_invocation, start_invocation

    start_invocation(
        results, f"sqlite:///{results}/mlflow.db", {"run": "bench"}, "-", sys.argv, ["bench"]
    )
    on, off = [], []
    for i in range(repeats):  # paired, alternating
        on.append(job(i, "on"))
        off.append(job(i, "off"))
    tracking_on, tracking_off = statistics.median(on), statistics.median(off)
    print(f"job wall, median of {repeats}: on {tracking_on:.2f} s, off {tracking_off:.2f} s")
    cost = tracking_on - tracking_off
    print(f"provenance cost per job: {cost:+.3f} s ({tracking_on / tracking_off:.2f}x)")
    began = time.perf_counter()
    end_invocation(results, succeeded=True)  # loads the records in a subprocess
    loading = time.perf_counter() - began
    print(f"loading {repeats} records into MLflow, once per invocation: {loading:.1f} s")


def bench_plan() -> None:
    heading("Planning the paper DAG: snakemake -n --profile profiles/slurm all (no apptainer)")
    for extra in ([], ["--quiet"]):
        command = [sys.executable, "-m", "snakemake", "-n", "--profile", "profiles/slurm", "all"]
        began = time.perf_counter()
        done = subprocess.run(
            [*command, *extra],
            cwd=REPO,
            env=env_without_apptainer(),
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - began
        if done.returncode != 0:
            print(f"FAILED ({seconds:.1f} s): {done.stderr[-2000:]}")
            return
        total = re.search(r"^total\s+(\d+)$", done.stdout + done.stderr, re.MULTILINE)
        jobs = f"{total.group(1)} jobs" if total else ""
        print(f"{' '.join(['-n', *extra]):12} {seconds:6.1f} s   {jobs}")


def bench_synthesis_rows(work: Path, sizes: Sequence[int], questions: int, dev_q: int) -> None:
    heading(
        f"RULER-HQA eval sets: {questions} questions, a {dev_q * 10:,}-document pool "
        "(synthetic HotpotQA dev, tiny Qwen-style tokenizer)"
    )
    work.mkdir(parents=True)
    # in a child: Linux hands a child its parent's peak RSS, so this process stays small
    prepare = (
        f"import bench_eval_memory as b, pathlib; b.prepare(pathlib.Path({str(work)!r}), {dev_q})"
    )
    subprocess.run([sys.executable, "-c", prepare], cwd=REPO / "scripts", check=True)
    bench_synthesis.write_indices(work, questions)
    pool_s, pool_rss = bench_synthesis.run_measured(bench_synthesis.ours_pool(work))
    print(f"ours, hqa-pool once for every size: {pool_s:.1f} s, peak {pool_rss:.0f} MB")
    print(
        f"{'docs':>6} | {'official s':>10} {'MB':>6} | {'ours (text ≤10K) s':>18} {'MB':>6} "
        f"{'ratio':>6} | {'ours (doc ids) s':>16} {'MB':>6} {'ratio':>6}"
    )
    script = str(Path(bench_synthesis.__file__))
    for n in sizes:
        out = work / f"official_{n}.json"
        official = bench_synthesis.run_measured(
            [
                sys.executable,
                script,
                "--official",
                str(work / "dev.json"),
                str(work / "indices.json"),
                str(n),
                str(out),
            ]
        )
        text = bench_synthesis.run_measured(
            bench_synthesis.ours_eval_set(work, n, questions, 10000)
        )
        ids = bench_synthesis.run_measured(bench_synthesis.ours_eval_set(work, n, questions, 0))
        print(
            f"{n:>6} | {official[0]:>10.1f} {official[1]:>6.0f} | {text[0]:>18.1f} {text[1]:>6.0f} "
            f"{official[0] / text[0]:>5.1f}x | {ids[0]:>16.1f} {ids[1]:>6.0f} "
            f"{official[0] / ids[0]:>5.1f}x"
        )
        out.unlink()


def bench_eval_streaming(work: Path, n_docs: int = 3200, questions: int = 4) -> None:
    heading(f"Evaluation path, instant engine: {n_docs} docs stored as text vs as doc ids")
    script = str(Path(bench_eval_memory.__file__))
    rows = {}
    for label, store_ids_above in (("text", n_docs), ("doc ids", 0)):
        base = [sys.executable, script, "--child", str(n_docs), "--work", str(work)]
        base += ["--questions", str(questions), "--store-ids-above", str(store_ids_above)]
        subprocess.run([*base, "--build"], check=True, capture_output=True)
        out = subprocess.run(base, check=True, capture_output=True, text=True).stdout
        rows[label] = json.loads(out.strip().splitlines()[-1])
    for label, r in rows.items():
        per_mtok = r["eval_seconds"] / (r["mean_tokens"] * r["samples"]) * 1e6
        print(
            f"{label:>8}: {r['mean_tokens']:,.0f} tokens/sample, agent loop "
            f"{r['eval_seconds']:.1f} s ({per_mtok:.2f} s per M tokens), "
            f"job {r['seconds']:.1f} s, peak {r['peak_rss_mb']:.0f} MB"
        )
    ratio = rows["doc ids"]["eval_seconds"] / rows["text"]["eval_seconds"]
    print(f"doc-id streaming / text, per token: {ratio:.2f}x")


WINDOW_MB = 50  # the long-context row of the window benchmark
WHOLE_MB = 2  # tokenizing a context whole: measured at this size (50 MB: ~8 GB, minutes)


def window_context(megabytes: float) -> str:
    """A context of ~`megabytes` MB of text: the fixture corpus's documents over and over,
    blank lines between them (as a RULER or Mem-α context)."""
    from memrepro.data.sources import fixture_corpus

    block = "\n\n".join(fixture_corpus()) + "\n\n"
    return block * max(1, round(megabytes * 1e6 / len(block.encode())))


def rss_kb(field: str) -> int:
    """This process's VmRSS or VmHWM (its peak since exec or the last `reset_peak_rss`), kB."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE).group(1))


def reset_peak_rss() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux >= 4.0: VmHWM := VmRSS


class PromptRecorder:
    """An engine that answers at once and keeps the prompt it was sent."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer, self.prompt = tokenizer, None

    def chat(self, requests, sampling):
        from memrepro.engines.base import Completion

        self.prompt = requests[-1].messages[-1]["content"]
        return [Completion(text="Therefore, the answer is kaban.") for _ in requests]


def measure_window(tokenizer_dir: str, megabytes: float, path: str, cap: int) -> dict:
    """Peak memory of one long-context evaluation of a `megabytes` MB context, cut to `cap`
    tokens. `path` "window": the evaluation job's own path (RULER-HQA's direct long-context
    system over the row, middle-truncated by `window_ids`); "whole": the same prompt cut by
    tokenizing it whole, slicing and decoding (how it was cut before). `above_context_mb`: the
    peak over the process with the row loaded; `prompt_sha`: what reached the model."""
    import hashlib

    from transformers import AutoTokenizer

    from memrepro.agents.chunking import center_truncate
    from memrepro.baselines.longcontext import official_prompt
    from memrepro.benchmarks import Task
    from memrepro.evaluation import evaluate, workflow_runner
    from memrepro.systems.longcontext import longcontext_system

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    task = Task("ruler_hqa", "hqa")
    row = {"index": 0, "input": "Which river floods?", "answers": ["kaban"], "num_tokens": None}
    row["context"] = window_context(megabytes)
    engine = PromptRecorder(tokenizer)
    before = rss_kb("VmRSS")
    reset_peak_rss()
    began = time.perf_counter()
    if path == "window":
        with tempfile.TemporaryDirectory() as tmp:
            system = longcontext_system(task, tokenizer, None, cap, None)
            evaluate([row], workflow_runner(task, system, engine, None), Path(tmp, "p.jsonl"), 1)
        prompt = engine.prompt
    else:
        text = official_prompt(row["context"], row["input"])
        ids = tokenizer.encode(text, add_special_tokens=True)
        kept = center_truncate(ids, cap)
        prompt = text if len(ids) <= cap else tokenizer.decode(kept, skip_special_tokens=True)
    return {
        "megabytes": len(row["context"]) / 1e6,
        "path": path,
        "seconds": time.perf_counter() - began,
        "peak_rss_mb": rss_kb("VmHWM") / 1024,
        "above_context_mb": (rss_kb("VmHWM") - before) / 1024,
        "prompt_sha": hashlib.sha256(prompt.encode()).hexdigest(),
    }


def bench_context_window(
    work: Path, cap: int = 120_000, sizes: tuple[float, float] = (WINDOW_MB, WHOLE_MB)
) -> dict[tuple[float, str], dict]:
    """A 50 MB context's long-context evaluation cut to its window, each measurement in a fresh
    process: tokenized only as far as the window needs, against the whole context tokenized
    (at a smaller size: at 50 MB it takes ~8 GB and minutes). Returns the measurements."""
    large_mb, small_mb = sizes
    heading(
        f"Long context: a {large_mb} MB context middle-truncated to {cap:,} tokens "
        "(the tiny Qwen-style tokenizer), peak RSS of a fresh process"
    )
    from memrepro.data.sources import fixture_corpus
    from memrepro.models.tiny import build_tokenizer

    build_tokenizer(fixture_corpus(), 2048, 1 << 30).save_pretrained(work / "tokenizer")
    runs = {}
    for megabytes, path in ((large_mb, "window"), (small_mb, "window"), (small_mb, "whole")):
        call = f"measure_window({str(work / 'tokenizer')!r}, {megabytes}, {path!r}, {cap})"
        code = f"import json, bench; print(json.dumps(bench.{call}))"
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO / "scripts", capture_output=True, text=True
        )
        if done.returncode != 0:
            print(f"FAILED ({megabytes} MB, {path}):\n{done.stderr[-2000:]}")
            return runs
        runs[megabytes, path] = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"{'context':>8} {'cut by':>20} {'seconds':>8} {'peak RSS MB':>12} {'over context MB':>16}"
    )
    for (_, path), r in runs.items():
        label = "window_ids" if path == "window" else "tokenizing it whole"
        print(f"{r['megabytes']:>5.1f} MB {label:>20} {r['seconds']:>8.1f} "
              f"{r['peak_rss_mb']:>12.0f} {r['above_context_mb']:>16.0f}")  # fmt: skip
    large, small, whole = (
        runs[large_mb, "window"],
        runs[small_mb, "window"],
        runs[small_mb, "whole"],
    )
    same = "the same prompt" if small["prompt_sha"] == whole["prompt_sha"] else "DIFFERENT prompts"
    print(
        f"at {small['megabytes']:.1f} MB both cut {same}; over the context, whole / window: "
        f"{whole['above_context_mb'] / small['above_context_mb']:.1f}x"
    )
    whole_per_mb = whole["above_context_mb"] / whole["megabytes"]
    window_per_mb = (large["above_context_mb"] - small["above_context_mb"]) / (
        large["megabytes"] - small["megabytes"]
    )
    print(
        f"tokenizing whole, measured at {small['megabytes']:.1f} MB only: {whole_per_mb:.0f} MB "
        f"per MB of context, ~{whole_per_mb * large['megabytes'] / 1024:.1f} GB at "
        f"{large['megabytes']:.0f} MB (extrapolated), "
        f"{whole_per_mb * large['megabytes'] / large['above_context_mb']:.0f}x the window path's "
        f"{large['above_context_mb']:.0f} MB, which grows {window_per_mb:.1f} MB per MB "
        "(the prompt's copies of the text; its tokenization does not grow)"
    )
    return runs


def bench_smoke(work: Path, containers: bool) -> None:
    """The smoke DAG in the venv and, with the `core` image built, with every job in its
    container (profiles/containers, one scratch copy): wall times, their ratio, and whether the
    two runs computed the same files (memrepro.run_compare)."""
    heading(
        "The smoke DAG: profiles/smoke (venv) and profiles/containers (a scratch copy, 2 cores)"
    )
    for name in ("Snakefile", "workflow", "config", "profiles", "envs", "src"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, work / name)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])  # `memrepro`
    walls = {}
    for profile in ("smoke", "containers") if containers else ("smoke",):
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "memrepro.launch", "--profile", f"profiles/{profile}"],
            cwd=work,
            env={**os.environ, "PATH": path},
            capture_output=True,
            text=True,
        )
        walls[profile] = time.perf_counter() - began
        jobs = re.search(r"^total\s+(\d+)$", done.stdout + done.stderr, re.MULTILINE)
        state = "ok" if done.returncode == 0 else f"FAILED:\n{done.stderr[-3000:]}"
        print(f"{profile:10} {walls[profile] / 60:.1f} min wall, "
              f"{jobs.group(1) if jobs else '?'} jobs: {state}")  # fmt: skip
    if len(walls) == 2:
        from memrepro.run_compare import differences

        found = differences(work / "results" / "smoke", work / "results" / "smoke-containers")
        unequal = sum(len(found[k]) for k in ("differ", "only_a", "only_b"))
        print(f"containers / venv: {walls['containers'] / walls['smoke']:.2f}x wall; computed "
              f"files: {len(found['equal'])} equal, {unequal} not")  # fmt: skip


IMAGES = ("core", "infer-cpu", "train-cpu")


def container_engine() -> str | None:
    return shutil.which("podman") or shutil.which("docker")


def has_core_image() -> bool:
    engine = container_engine()
    return (
        bool(engine)
        and subprocess.run([engine, "image", "exists", "localhost/memrepro-core"]).returncode == 0
    )


def bench_images(rebuild: bool) -> None:
    """Each image's size and, with --rebuild-images, its build time from nothing (no layer
    cache, on the local base: `make base-image`)."""
    heading("Images (envs/Containerfile): size, and build time from nothing on the local base")
    engine = container_engine()
    if engine is None:
        print("skipped: neither podman nor docker")
        return
    for env in IMAGES:
        reference = f"localhost/memrepro-{env}"
        seconds = None
        if rebuild:
            began = time.perf_counter()
            command = [sys.executable, str(REPO / "envs" / "envtool.py"), "build", env]
            command += ["--base", "localhost/memrepro-base:bookworm", "--no-cache"]
            built = subprocess.run(command, capture_output=True, text=True)
            seconds = time.perf_counter() - began if built.returncode == 0 else None
            if built.returncode != 0:
                print(f"{env}: build FAILED\n{built.stderr[-2000:]}")
        inspected = subprocess.run(
            [engine, "image", "inspect", "--format", "{{.Size}}", reference],
            capture_output=True,
            text=True,
        )
        if inspected.returncode != 0:
            print(f"{env:10} not built (make images BASE=local)")
            continue
        size = int(inspected.stdout.strip()) / 1e9
        took = f", built in {seconds / 60:.1f} min" if seconds else ""
        print(f"{env:10} {size:.2f} GB{took}")


VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def bench_agent_overhead() -> None:
    heading("Agent loop overhead on real vLLM (CPU build): MemAgent via VLLMEngine vs raw LLM.chat")
    if not VLLM_PYTHON.is_file():
        print("skipped: no .venv-vllm (make vllm-env)")
        return
    script = REPO / "scripts" / "bench_agent_overhead.py"
    done = subprocess.run([str(VLLM_PYTHON), str(script)], capture_output=True, text=True)
    print(done.stdout.strip() if done.returncode == 0 else f"FAILED:\n{done.stderr[-3000:]}")


def bench_mini_jobs(results: Path = REPO / "results" / "mini" / "benchmarks") -> None:
    """Per rule: jobs, mean and max wall seconds (Snakemake's benchmark files of `make mini`)."""
    heading(f"The last make mini run: wall time per job ({results.relative_to(REPO)})")
    walls: dict[str, list[float]] = {}
    for tsv in sorted(results.rglob("*.tsv")) if results.is_dir() else []:
        rule = tsv.relative_to(results).parts[0]
        rows = tsv.read_text().splitlines()
        walls.setdefault(rule, []).append(float(rows[1].split("\t")[0]))
    if not walls:
        print("no mini run here (make mini)")
        return
    for rule, seconds in sorted(walls.items()):
        print(f"{rule:24} {len(seconds):3} jobs, mean {statistics.mean(seconds):6.1f} s, "
              f"max {max(seconds):6.1f} s")  # fmt: skip


def bench_verdicts() -> None:
    """The verdicts' error rates and coverage at the papers' n (seeded simulations)."""
    heading("Verdicts: error rates and coverage at the papers' n (memrepro.scoring.calibration)")
    from memrepro.scoring.calibration import main as calibration

    calibration()


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"# make bench, {time.strftime('%Y-%m-%d %H:%M')}: {platform.node()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bench_provenance(work / "provenance", args.repeats)
        bench_verdicts()
        bench_plan()
        bench_synthesis_rows(work / "synthesis", args.sizes, args.questions, args.dev_questions)
        bench_eval_streaming(work / "synthesis")
        (work / "window").mkdir()
        bench_context_window(work / "window")
        bench_agent_overhead()
        if not args.skip_containers:
            bench_images(args.rebuild_images)
        if not args.skip_smoke:
            (work / "smoke").mkdir()
            bench_smoke(work / "smoke", containers=not args.skip_containers and has_core_image())
    bench_mini_jobs()


if __name__ == "__main__":
    main()
