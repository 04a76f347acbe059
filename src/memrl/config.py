"""Load and validate a MemRL config, and expand it into the experiment matrix.

The Snakefile imports this module; every path, job list and per-job setting the DAG uses comes
from here, so the workflow rules stay thin and the logic stays testable.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema
import yaml

from memrl.agents.structured_memory import STORES as MEMORY_STORES
from memrl.data.longbench import LONGBENCH_SUM  # Table 2; the other tasks are QA (Table 3)
from memrl.data.memalpha import QUERY_PROMPTS
from memrl.data.ruler import TASKS as RULER_TASK_SPECS
from memrl.scoring.verifier import DEFAULT_VERIFIER

O200K = "o200k_base"  # tiktoken's encoding: Mem-α's memory counter (core cap, compression)

STAGES = ("stage1", "stage2")
MEMALPHA_STAGE = "grpo"  # a Mem-α run's one training stage


class ConfigError(ValueError):
    """A config that the schema or a cross-reference check rejects; the message names the key."""


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML's safe loader, but a key given twice in one mapping is an error (YAML says so;
    PyYAML silently keeps the last)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                if key in first_line:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (first given at line {first_line[key]})",
                        key_node.start_mark,
                    )
                first_line[key] = key_node.start_mark.line + 1
            except TypeError:  # an unhashable key: PyYAML's own error follows
                pass
        return super().construct_mapping(node, deep)


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A config (or schema) file: syntax errors, tabs and duplicate keys fail naming the file,
    the line and the column."""
    from memrl.data.io import read_text

    try:
        text = read_text(path)
        data = yaml.load(text, Loader=_StrictLoader)  # a safe loader, strict on duplicates
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read config: {exc}") from exc
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_error(path, text, exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config must be a mapping, got {type(data).__name__}")
    return data


def _yaml_error(path: str | Path, text: str, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return f"{path}: not valid YAML: {exc}"
    message = exc.problem or exc.context
    if exc.context and exc.problem:
        message += f" ({exc.context})"
    line = text.splitlines()[mark.line] if mark.line < len(text.splitlines()) else ""
    if "\t" in line[: mark.column + 1]:
        message += "; the line holds a tab: YAML indents with spaces only"
    return f"{path}:{mark.line + 1}:{mark.column + 1}: {message}"


def validate_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Validate against the workflow schema, then check that every cross-reference resolves."""
    schema = load_yaml(schema_path)
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(config), key=lambda e: list(e.path)
    )
    if errors:
        raise ConfigError(_describe(errors[0]))
    _check_references(config)


def _describe(error: jsonschema.ValidationError) -> str:
    key = ".".join(str(part) for part in error.absolute_path) or "<top level>"
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"config key {key}: unknown key(s) {', '.join(map(str, unknown))}"
    return f"config key {key}: {error.message}"


def _check_references(config: dict[str, Any]) -> None:
    _check_memory_ablation(config)  # first: it may add training runs
    _check_probe(config)
    models = set(config["models"])
    agent_runs, memalpha = set(memagent_runs(config)), set(memalpha_runs(config))
    runs = set(trained_runs(config))
    for section, names in (("training.runs", agent_runs), ("memalpha.training.runs", memalpha)):
        if clash := sorted(models & names):
            raise ConfigError(f"config key {section}: names also used in models: {clash}")
    if both := sorted(memalpha & agent_runs):
        raise ConfigError(f"memalpha.training.runs: names also used in training.runs: {both}")

    def require(key: str, name: str, allowed: set[str]) -> None:
        if name not in allowed:
            raise ConfigError(
                f"config key {key}: unknown model {name!r} (known: {sorted(allowed)})"
            )

    for source in config["sources"]:
        raw_file(config, source)
    mix = config["training"]["stage2_data"]
    if mix["source"] not in config["sources"]:
        raise ConfigError(
            f"config key training.stage2_data.source: unknown source {mix['source']!r} "
            f"(known: {sorted(config['sources'])})"
        )
    window = config["training"]["stage2"]["max_chunks"] * config["agent"]["chunk_tokens"]
    if mix["max_context_tokens"] > window:
        raise ConfigError(
            "config key training.stage2_data.max_context_tokens: "
            f"{mix['max_context_tokens']} exceeds stage2.max_chunks x agent.chunk_tokens = {window}"
            " (longer rows would be center-truncated, often cutting out the evidence)"
        )
    require("ruler_hqa.tokenizer", config["ruler_hqa"]["tokenizer"], models)
    for i, name in enumerate(config["filter"]["models"]):
        require(f"filter.models.{i}", name, models)
    for run, spec in config["training"]["runs"].items():
        require(f"training.runs.{run}.base", spec["base"], models)
    for run, spec in memalpha_runs(config).items():
        require(f"memalpha.training.runs.{run}.base", spec["base"], models)
    require("ruler.tokenizer", config["ruler"]["tokenizer"], models)
    for key in ("essays", "squad", "hotpotqa"):
        _require_source(config, f"ruler.{key}", config["ruler"][key])
    for task in config["longbench"]["tasks"]:
        _require_source(config, f"longbench.tasks ({task})", longbench_source(task))
    _check_memalpha(config, require)  # first: a missing section also leaves its runs unknown
    for system, spec in config["evaluation"]["systems"].items():
        key = f"evaluation.systems.{system}"
        require(f"{key}.model", spec["model"], models | runs)
        engine = (spec.get("engine") or config["evaluation"]["engine"])["kind"]
        if spec.get("context_extension", "none") != "none" and engine != "vllm":
            raise ConfigError(
                f"config key {key}.context_extension: {spec['context_extension']} is a vLLM "
                f"engine setting, but the system's engine is {engine!r}"
            )
        rag_allowed = (*RAG_BENCHMARKS, *MEMALPHA_BENCHMARKS)
        if spec["kind"] == "rag" and not set(spec.get("benchmarks", RAG_BENCHMARKS)) <= set(
            rag_allowed
        ):
            raise ConfigError(f"config key {key}.benchmarks: RAG runs only on {rag_allowed}")
        if spec["kind"] == "mem0" and not set(spec.get("benchmarks", ())) <= set(
            MEMAGENT_BENCHMARKS
        ):
            raise ConfigError(
                f"config key {key}.benchmarks: Mem0 runs only on {MEMAGENT_BENCHMARKS}"
            )
    ruler = config["ruler_hqa"]
    if ruler["eval_questions"] > config["filter"]["keep_dev"]:
        raise ConfigError("config key ruler_hqa.eval_questions: exceeds filter.keep_dev")
    _check_coverage(config)
    _check_agent_window(config)
    _check_disabled_memory(config)
    _check_rl_ablation(config)
    _check_case_studies(config)


def _check_rl_ablation(config: dict[str, Any]) -> None:
    """Each system of a Figure 6/7 group exists, runs both figures' benchmarks, and the memory
    workflow's roles are MemAgent systems."""
    systems = config["evaluation"]["systems"]
    for group, roles in rl_ablation_groups(config).items():
        for role, sid in roles.items():
            key = f"config key report.rl_ablation.{group}.{role}"
            if sid not in systems:
                raise ConfigError(f"{key}: unknown system {sid!r} (known: {sorted(systems)})")
            spec = systems[sid]
            benchmarks = spec.get("benchmarks", _default_benchmarks(spec["kind"]))
            missing = [b for b in RL_ABLATION_FIGURES.values() if b not in benchmarks]
            if missing:
                raise ConfigError(f"{key}: system {sid!r} does not run {', '.join(missing)}")
            if role != "backbone" and spec["kind"] != "memagent":
                raise ConfigError(f"{key}: system {sid!r} is a {spec['kind']}, not a memagent")


def _check_agent_window(config: dict[str, Any]) -> None:
    """MemAgent's largest prompt plus its reply must fit each of its models' declared context
    (a tiny model's, or `max_position_embeddings`), with each run's and system's own budgets. A
    Hugging Face model's is unknown while planning; a request beyond it fails, and failed
    requests fail the job."""
    runs = trained_runs(config)
    users = [(f"training.runs.{run}", spec, run) for run, spec in memagent_runs(config).items()]
    users += [
        (f"evaluation.systems.{sid}", spec, spec["model"])
        for sid, spec in eval_systems(config).items()
        if spec["kind"] == "memagent"
    ]
    for key, spec, name in users:
        agent = agent_settings(config, spec)
        window = agent["query_tokens"] + agent["chunk_tokens"] + 2 * agent["memory_tokens"]
        base = runs[name]["base"] if name in runs else name
        context = declared_context(config["models"][base])
        if context is not None and window > context:
            where = "agent" if "agent" not in spec else f"{key}.agent"
            raise ConfigError(
                f"config key {where}.memory_tokens: query_tokens + chunk_tokens + 2 x "
                f"memory_tokens = {window} tokens (the memory prompt and its reply) exceed model "
                f"{base!r}'s context of {context}"
            )


def _check_probe(config: dict[str, Any]) -> None:
    """Table 4's systems are memagent systems run on RULER-HQA at every probe length (its
    random row is their RULER-HQA evaluation)."""
    probe = config["evaluation"].get("probe")
    if not probe:
        return
    key = "config key evaluation.probe"
    unknown = sorted(set(probe["n_docs"]) - set(config["ruler_hqa"]["n_docs"]))
    if unknown:
        raise ConfigError(f"{key}.n_docs: {unknown} not in ruler_hqa.n_docs (the random row)")
    for sid in probe["systems"]:
        spec = config["evaluation"]["systems"].get(sid, {})
        if spec.get("kind") != "memagent":
            raise ConfigError(f"{key}.systems: {sid!r} is not a memagent system")
        if "ruler_hqa" not in spec.get("benchmarks", MEMAGENT_BENCHMARKS):
            raise ConfigError(f"{key}.systems: {sid!r} does not run ruler_hqa (the random row)")
        limit = spec.get("max_docs")
        if limit is not None and max(probe["n_docs"]) > limit:
            raise ConfigError(f"{key}.n_docs: above {sid!r}'s max_docs {limit}")


def _check_memory_ablation(config: dict[str, Any]) -> None:
    """Its systems are memagent systems, its tasks are the benchmarks' configured tasks, and
    `retrain` has a training run to retrain."""
    ablation = config["evaluation"].get("memory_ablation")
    if not ablation:
        return
    key = "config key evaluation.memory_ablation"
    systems = config["evaluation"]["systems"]
    for sid in ablation["systems"]:
        if systems.get(sid, {}).get("kind") != "memagent":
            raise ConfigError(f"{key}.systems: {sid!r} is not a memagent system")
        if ablation["retrain"] and systems[sid]["model"] not in config["training"]["runs"]:
            raise ConfigError(
                f"{key}.retrain: system {sid!r} runs {systems[sid]['model']!r}, not a training "
                "run of training.runs: there is nothing to retrain"
            )
        own = agent_settings(config, systems[sid])
        if [own["memory_tokens"], own["chunk_tokens"]] in ablation["settings"]:
            raise ConfigError(
                f"{key}.settings: [{own['memory_tokens']}, {own['chunk_tokens']}] is system "
                f"{sid!r}'s own budget: the system itself is that row (a variant would repeat it)"
            )
    configured = {"ruler": config["ruler"]["tasks"], "longbench": config["longbench"]["tasks"]}
    for benchmark, tasks in ablation["tasks"].items():
        unknown = [task for task in tasks if task not in configured[benchmark]]
        if unknown:
            raise ConfigError(
                f"{key}.tasks.{benchmark}: {unknown} not in {benchmark}.tasks "
                f"({configured[benchmark]})"
            )


def declared_context(model: dict[str, Any]) -> int | None:
    """A model's context length when the config knows it (a tiny model's is built from it)."""
    if model["source"] == "tiny":
        from memrl.models import TINY_CONTEXT  # not memrl.models.tiny: torch takes seconds

        return int(model.get("max_position_embeddings", TINY_CONTEXT))
    return model.get("max_position_embeddings")


def _check_coverage(config: dict[str, Any]) -> None:
    """Limits that would silently leave work out: a shard without samples, a system cut from a
    whole benchmark by its own length limit, a RULER task capped below every length."""
    samples = {
        "ruler_hqa": config["ruler_hqa"]["eval_questions"],
        "ruler": config["ruler"]["samples"],
    }
    for benchmark, steps in config["evaluation"]["shards"].items():
        for start, count in steps.items():
            if benchmark in samples and count > samples[benchmark]:
                raise ConfigError(
                    f"config key evaluation.shards.{benchmark}.{start}: {count} shards for "
                    f"{samples[benchmark]} samples per task (some shards would be empty)"
                )
    shortest = {  # a system's limit -> the lengths it limits, and the shortest of them
        "max_docs": ("ruler_hqa.n_docs", min(config["ruler_hqa"]["n_docs"])),
        "max_length": ("ruler.lengths", min(config["ruler"]["lengths"])),
    }
    for name, system in config["evaluation"]["systems"].items():
        for key, (lengths, least) in shortest.items():
            if system.get(key) is not None and system[key] < least:
                raise ConfigError(
                    f"config key evaluation.systems.{name}.{key}: {system[key]} is below every "
                    f"{lengths} (the shortest is {least}): the system would run none of them; "
                    "drop the benchmark from its `benchmarks` instead"
                )
    for task, cap in config["ruler"].get("max_length", {}).items():
        if task in config["ruler"]["tasks"] and cap < shortest["max_length"][1]:
            raise ConfigError(
                f"config key ruler.max_length.{task}: {cap} is below every ruler.lengths "
                f"(the shortest is {shortest['max_length'][1]}): the task would never run"
            )


def _check_memalpha(config: dict[str, Any], require: Any) -> None:
    """Memalpha and MEM1 systems run only on Mem-α's benchmarks; the `memalpha` section,
    required once a system runs one of them, must resolve."""
    users = []
    for name, spec in config["evaluation"]["systems"].items():
        benchmarks = spec.get("benchmarks", _default_benchmarks(spec["kind"]))
        kind = spec["kind"]
        if kind in MEMALPHA_ONLY_KINDS and not set(benchmarks) <= set(MEMALPHA_KIND_BENCHMARKS):
            raise ConfigError(
                f"config key evaluation.systems.{name}.benchmarks: a {kind} system runs only "
                f"on {list(MEMALPHA_KIND_BENCHMARKS)}"
            )
        if not set(benchmarks).isdisjoint(MEMALPHA_BENCHMARKS) or kind in MEMALPHA_ONLY_KINDS:
            users.append(name)
    if "memalpha" not in config:
        if users:
            raise ConfigError(f"config key memalpha: required by the systems {users}")
        return
    spec = config["memalpha"]
    for benchmark in MEMALPHA_SPLITS:
        _require_source(config, f"memalpha.{benchmark}.source", spec[benchmark]["source"])
        unknown = sorted(set(spec[benchmark]["sources"]) - set(QUERY_PROMPTS))
        if unknown:
            raise ConfigError(
                f"config key memalpha.{benchmark}.sources: no query prompt for {unknown}"
            )
    require("memalpha.qa.model", spec["qa"]["model"], set(config["models"]))
    if spec["ruler_hqa"]["source"] not in QUERY_PROMPTS:
        raise ConfigError(
            f"config key memalpha.ruler_hqa.source: no query prompt for "
            f"{spec['ruler_hqa']['source']!r}"
        )
    if spec["memory_tokenizer"] != O200K:
        require("memalpha.memory_tokenizer", spec["memory_tokenizer"], set(config["models"]))
    if "training" in spec:
        _check_memalpha_recipe(spec["training"])
    _check_memalpha_runs_evaluated(config)
    _check_memalpha_window(config)
    if memalpha_runs(config) and uses_qa_server(config):
        missing = [k for k in ("save_every", "verl", "qa_server") if k not in spec["training"]]
        if missing:
            raise ConfigError(
                f"config key memalpha.training: training.backend verl needs {', '.join(missing)}"
            )


def _require_source(config: dict[str, Any], key: str, source: str) -> None:
    if source not in config["sources"]:
        raise ConfigError(
            f"config key {key}: unknown source {source!r} (known: {sorted(config['sources'])})"
        )


def longbench_source(task: str) -> str:
    """The sources key of a LongBench config's parquet."""
    return f"longbench_{task}"


# --- paths -------------------------------------------------------------------------------------


def results_dir(config: dict[str, Any]) -> Path:
    return Path("results") / config["run"]


def tracking_uri(config: dict[str, Any]) -> str:
    return config.get("tracking_uri") or f"sqlite:///{results_dir(config) / 'mlflow.db'}"


RAW_FORMATS = (".json", ".jsonl", ".parquet")


def raw_file(config: dict[str, Any], source: str) -> Path:
    """Where download_data puts a source: raw/<name> + the suffix of its url (RAW_FORMATS)."""
    url = config["sources"][source]["url"]
    suffix = Path(url.split("?", 1)[0]).suffix
    if suffix not in RAW_FORMATS:
        raise ConfigError(
            f"config key sources.{source}.url: must end in one of {RAW_FORMATS}, got {url!r}"
        )
    return results_dir(config) / "raw" / f"{source}{suffix}"


def checkpoint_dir(config: dict[str, Any], run: str, stage: str) -> Path:
    return results_dir(config) / "checkpoints" / run / stage


def memalpha_runs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Mem-α training runs by name (none without a `memalpha.training` section)."""
    return config.get("memalpha", {}).get("training", {}).get("runs", {})


def memagent_runs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """MemAgent's training runs by name: `training.runs`, and with `memory_ablation.retrain`
    one more per ablated run and setting, `<run>-m<M>-c<C>`, trained with those budgets."""
    runs = dict(config["training"]["runs"])
    ablation = config["evaluation"].get("memory_ablation")
    if ablation and ablation["retrain"]:
        systems = config["evaluation"]["systems"]
        for system in ablation["systems"]:
            run = systems[system]["model"]
            for memory, chunk in ablation["settings"]:
                if run in config["training"]["runs"]:
                    agent = {"memory_tokens": memory, "chunk_tokens": chunk}
                    runs[ablation_name(run, memory, chunk, "-")] = {**runs[run], "agent": agent}
    return runs


def ablation_name(name: str, memory: int, chunk: int, separator: str = ".") -> str:
    """A memory-ablation variant of a system (`.`) or training run (`-`): m<M>-c<C>."""
    return f"{name}{separator}m{memory}-c{chunk}"


def agent_settings(config: dict[str, Any], spec: dict[str, Any]) -> dict[str, int]:
    """The agent's budgets for a system or training run: `agent`, with the spec's override."""
    return {**config["agent"], **spec.get("agent", {})}


def trained_runs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every training run by name: MemAgent's and Mem-α's (their names never collide)."""
    return {**memagent_runs(config), **memalpha_runs(config)}


def model_dir(config: dict[str, Any], name: str) -> Path:
    """A model's directory: a trained run's final checkpoint (MemAgent: stage II; Mem-α: its
    GRPO stage), or a fetched model."""
    if name in memagent_runs(config):
        return checkpoint_dir(config, name, STAGES[-1])
    if name in memalpha_runs(config):
        return checkpoint_dir(config, name, MEMALPHA_STAGE)
    if name in config["models"]:
        return results_dir(config) / "models" / name
    raise ConfigError(f"unknown model {name!r}")


# --- the experiment matrix --------------------------------------------------------------------


BENCHMARKS = ("ruler_hqa", "ruler", "longbench", "memalpha", "mab")
MEMAGENT_BENCHMARKS = BENCHMARKS[:3]  # MemAgent's suites (seed 000)
MEMALPHA_BENCHMARKS = BENCHMARKS[3:]  # Mem-α's: Memalpha validation, MemoryAgentBench (seed 004)
QA_ONLY_KINDS = ("rag", "mem0")  # D.2's agent baselines: RULER-HQA and LongBench-QA
MEMALPHA_ONLY_KINDS = ("memalpha", "mem1")  # agents of Mem-α's framework and its baselines
# what they read: Mem-α's instances, and RULER-HQA's samples made instances (memalpha.ruler_hqa)
MEMALPHA_KIND_BENCHMARKS = (*MEMALPHA_BENCHMARKS, "ruler_hqa")
RAG_BENCHMARKS = ("ruler_hqa", "longbench")  # Tables 10 and 11 (the paper ran RAG on nothing else)
NO_LENGTH = 0  # the one "length" of a benchmark without a length axis (LongBench, Mem-α's)
RULER_HQA_TASK = "hqa"  # RULER-HQA's one task
PROBE_BENCHMARK = "ruler_hqa_probe"  # Table 4: RULER-HQA, the gold groups at given depths
EVAL_BENCHMARKS = (*BENCHMARKS, PROBE_BENCHMARK)  # what an evaluation job may read


class EvalJob(NamedTuple):
    """One evaluation job: a system on one benchmark at one length, every task there (one model
    load; its predictions and metrics hold a record per task)."""

    benchmark: str
    system: str  # a concrete system id (eval_systems)
    length: int  # n_docs (RULER-HQA), target tokens (RULER), 0 (LongBench)
    tasks: tuple[str, ...]  # ("hqa",) for RULER-HQA, RULER tasks, LongBench configs
    shards: int  # jobs the samples are split over (`eval_shards`), merged by merge_eval


Systems = dict[str, dict[str, Any]]


def eval_systems(config: dict[str, Any]) -> Systems:
    """Concrete systems by id: memagent and long-context systems as configured, every RAG system
    expanded over its grid into `<name>.<retriever>-k<K>-<unit>` (unit `doc` = whole documents,
    Table 10; `c<C>` = C-token chunks, Table 11)."""
    systems: dict[str, dict[str, Any]] = {}
    for name, spec in config["evaluation"]["systems"].items():
        base = {"benchmarks": list(_default_benchmarks(spec["kind"])), **spec, "name": name}
        if spec["kind"] != "rag":
            systems[name] = base
            systems.update(_memory_ablation_systems(config, name, base))
            continue
        units = [("doc", None), *((f"c{c}", c) for c in spec["chunk_tokens"])]
        for retriever in spec["retrievers"]:
            for k in spec["top_k"]:
                for unit, chunk_tokens in units:
                    systems[f"{name}.{retriever}-k{k}-{unit}"] = {
                        **base,
                        "retriever": retriever,
                        "top_k": k,
                        "unit": unit,
                        "unit_tokens": chunk_tokens,
                    }
    return systems


def _memory_ablation_systems(config: dict[str, Any], name: str, base: dict[str, Any]) -> Systems:
    """The variants of a system of `evaluation.memory_ablation`: `<name>.m<M>-c<C>` per setting,
    its agent's budgets overridden (and, with `retrain`, its model the run trained with them),
    on the ablation's tasks only, its paper row Tables 8/9's `<prefix>-m<M>-c<C>`."""
    ablation = config["evaluation"].get("memory_ablation")
    if not ablation or name not in ablation["systems"]:
        return {}
    retrained = ablation["retrain"] and base["model"] in config["training"]["runs"]
    variants = {}
    for memory, chunk in ablation["settings"]:
        suffix = f"m{memory}-c{chunk}"
        variants[ablation_name(name, memory, chunk)] = {
            **base,
            "model": ablation_name(base["model"], memory, chunk, "-")
            if retrained
            else base["model"],
            "agent": {"memory_tokens": memory, "chunk_tokens": chunk},
            "benchmarks": list(ablation["tasks"]),
            "tasks": ablation["tasks"],
            "display": f"{base['display']} {suffix}",
            "paper_row": f"{ablation['systems'][name]}-{suffix}",
            "ablation_of": name,
        }
    return variants


def _default_benchmarks(kind: str) -> tuple[str, ...]:
    if kind in MEMALPHA_ONLY_KINDS:
        return MEMALPHA_BENCHMARKS
    return RAG_BENCHMARKS if kind in QA_ONLY_KINDS else MEMAGENT_BENCHMARKS


def _runs_benchmark(system: dict[str, Any], benchmark: str) -> bool:
    if benchmark not in system["benchmarks"]:
        return False
    if system["kind"] == "rag":  # whole documents (Mem-α's: its chunks), fixed chunks: LongBench
        return (system["unit"] == "doc") == (benchmark != "longbench")
    return True


def memorizes(system: dict[str, Any], benchmark: str) -> bool:
    """Whether a system's evaluation on `benchmark` takes two jobs: its own model reads every
    instance first (`memorize`: the Mem-α policy writes its memory, MemAgent its memory and
    answers, MEM1 its summary), then the evaluate job answers or judges on the QA model. Mem-α
    and MEM1 do so on every benchmark they read (RULER-HQA too); MemAgent on Mem-α's only."""
    if system["kind"] in MEMALPHA_ONLY_KINDS:
        return True
    return system["kind"] == "memagent" and benchmark in MEMALPHA_BENCHMARKS


def eval_model(config: dict[str, Any], system: dict[str, Any], benchmark: str) -> str:
    """The model an evaluate job loads: the QA model after a memorize job, else the system's."""
    return qa_model(config) if memorizes(system, benchmark) else system["model"]


def ruler_sets(config: dict[str, Any]) -> list[tuple[str, int]]:
    """Every (task, length) RULER set, lengths above a task's `max_length` left out."""
    ruler = config["ruler"]
    caps = ruler.get("max_length", {})
    return [
        (task, length)
        for task in ruler["tasks"]
        for length in ruler["lengths"]
        if length <= caps.get(task, length)
    ]


def eval_jobs(config: dict[str, Any], systems: Systems | None = None) -> list[EvalJob]:
    """Every evaluation job: systems (config order) x their benchmarks x lengths, each job
    covering the benchmark's tasks at that length. `systems`: `eval_systems(config)`, when the
    caller has it already."""
    jobs = []
    for system_id, system in (systems or eval_systems(config)).items():
        tasks: dict[tuple[str, int], list[str]] = {}
        if _runs_benchmark(system, "ruler_hqa"):
            limit = system.get("max_docs")
            for n in config["ruler_hqa"]["n_docs"]:
                if limit is None or n <= limit:
                    tasks[("ruler_hqa", n)] = [RULER_HQA_TASK]
        only = system.get("tasks", {})  # a memory-ablation variant's tasks
        if _runs_benchmark(system, "ruler"):
            limit = system.get("max_length")
            for task, length in ruler_sets(config):
                if (limit is None or length <= limit) and task in only.get("ruler", (task,)):
                    tasks.setdefault(("ruler", length), []).append(task)
        if _runs_benchmark(system, "longbench"):
            tasks[("longbench", NO_LENGTH)] = [
                task
                for task in config["longbench"]["tasks"]
                if not (system["kind"] in QA_ONLY_KINDS and task in LONGBENCH_SUM)  # D.2: QA
                and task in only.get("longbench", (task,))
            ]
        for benchmark in MEMALPHA_BENCHMARKS:
            if _runs_benchmark(system, benchmark):
                tasks[(benchmark, NO_LENGTH)] = list(config["memalpha"][benchmark]["sources"])
        probe = config["evaluation"].get("probe")
        if probe and system_id in probe["systems"]:
            for n in probe["n_docs"]:
                tasks[(PROBE_BENCHMARK, n)] = [probe_task(p) for p in probe["placements"]]
        jobs += [
            EvalJob(
                benchmark,
                system_id,
                length,
                tuple(names),
                eval_shards(config, system, benchmark, length),
            )
            for (benchmark, length), names in tasks.items()
            if names
        ]
    return jobs


# A RAG sample reads its top-k units: its cost does not grow with N. A memorising system's
# evaluate job reads its one memorize job's output whole.
UNSHARDED_KINDS = ("rag", *MEMALPHA_ONLY_KINDS)


def probe_task(placement: Sequence[int]) -> str:
    """A probe placement's task name: [0, 20] (percent depths of the two groups) -> p0_20."""
    return f"p{placement[0]}_{placement[1]}"


def probe_set_settings(config: dict[str, Any], task: str, n_docs: int) -> dict[str, Any]:
    """One probe set: the RULER-HQA eval set of n_docs with the groups at the task's depths."""
    depths = [int(percent) / 100 for percent in task[1:].split("_")]
    return {**eval_set_settings(config, n_docs), "placement": depths}


def eval_shards(config: dict[str, Any], system: dict[str, Any], benchmark: str, length: int) -> int:
    """Jobs one evaluation is split over: `evaluation.shards.<benchmark>` maps a length to the
    shard count from that length up (the longest such length wins); 1 below them all. A probe
    set is split as the RULER-HQA set of its length."""
    if system["kind"] in UNSHARDED_KINDS:
        return 1
    benchmark = "ruler_hqa" if benchmark == PROBE_BENCHMARK else benchmark
    steps = sorted(
        (int(start), count)
        for start, count in config["evaluation"]["shards"].get(benchmark, {}).items()
    )
    return next((count for start, count in reversed(steps) if length >= start), 1)


def model_gpus(config: dict[str, Any], name: str) -> int:
    """GPUs an inference job on this model needs (a trained run inherits its base model's)."""
    runs = trained_runs(config)
    base = runs[name]["base"] if name in runs else name
    return int(config["models"][base].get("gpus", 0))


def train_gpus(config: dict[str, Any], run: str) -> int:
    """GPUs of a training job in all (SLURM's --gpus counts the job's total, not per node); a
    Mem-α run on verl adds its QA server's (memrl.verl.job.qa_server_plan): on one node its
    GPUs, else a whole node of its own."""
    spec = trained_runs(config)[run]
    gpus = spec.get("gpus_per_node", 0) * spec.get("nodes", 1)
    if run in memalpha_runs(config) and uses_qa_server(config):
        server = config["memalpha"]["training"]["qa_server"]["gpus"]
        gpus += server if spec.get("nodes", 1) == 1 else spec["gpus_per_node"]
    return gpus


def train_nodes(config: dict[str, Any], run: str) -> int:
    """Nodes of a training job: a multi-node Mem-α run on verl adds its QA server's node."""
    nodes = trained_runs(config)[run].get("nodes", 1)
    if run in memalpha_runs(config) and uses_qa_server(config) and nodes > 1:
        return nodes + 1
    return nodes


def uses_qa_server(config: dict[str, Any]) -> bool:
    """Mem-α GRPO on verl serves the frozen QA model / judge next to the trainer."""
    return config["training"]["backend"] == "verl"


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


# --- per-job settings: exactly what one job may read from the config ----------------------------


def infer_memrl(config: dict[str, Any]) -> str:
    """The command that runs the infer jobs' `memrl`: `infer_venv`'s, else the one on PATH."""
    venv = config.get("infer_venv")
    return shlex.quote(str(Path(venv) / "bin" / "memrl")) if venv else "memrl"


def engine_settings(
    config: dict[str, Any], spec: dict[str, Any] | None, model: str
) -> dict[str, Any]:
    """An engine block (`spec`, else evaluation.engine) with the model's tensor-parallel size."""
    engine = dict(spec or config["evaluation"]["engine"])
    if engine["kind"] in ("vllm", "served"):
        engine.setdefault("tensor_parallel_size", max(1, model_gpus(config, model)))
    return engine


def model_fetch_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What download_model needs: the model's source spec, without inference-time keys."""
    return {key: value for key, value in config["models"][name].items() if key != "gpus"}


def filter_settings(config: dict[str, Any]) -> dict[str, Any]:
    spec = config["filter"]
    return {
        "models": {name: engine_settings(config, spec["engine"], name) for name in spec["models"]},
        **{key: spec[key] for key in ("n_samples", "sampling", "max_tokens")},
        "keep": {"train": spec["keep_train"], "dev": spec["keep_dev"]},
        "verifier": spec.get("verifier", DEFAULT_VERIFIER),
    }


def synthesize_settings(config: dict[str, Any]) -> dict[str, Any]:
    ruler = config["ruler_hqa"]
    keys = ("train_questions", "dev_questions", "train_docs", "store_ids_above")
    return {**{key: ruler[key] for key in keys}, "seed": config["seed"]}


def eval_set_settings(config: dict[str, Any], n_docs: int) -> dict[str, Any]:
    ruler = config["ruler_hqa"]
    return {
        "n_docs": n_docs,
        "eval_questions": ruler["eval_questions"],
        "store_ids_above": ruler["store_ids_above"],
        "seed": config["seed"],
    }


# Bumped when a code change alters what a job writes, so that Snakemake rebuilds it (its params
# change): RULER rows 2 = the official key order and the fork's answer prefixes (issue 16);
# the RULER-HQA pool 2 = the questions' key-information groups (Table 4's probe).
RULER_ROWS_FORMAT = 2
HQA_POOL_FORMAT = 2


def hqa_pool_settings() -> dict[str, Any]:
    return {"format": HQA_POOL_FORMAT}


def ruler_set_settings(config: dict[str, Any], task: str, length: int) -> dict[str, Any]:
    ruler = config["ruler"]
    return {
        "task": task,
        "length": length,
        "samples": ruler["samples"],
        "variant": ruler["variant"],
        "seed": config["seed"],
        "format": RULER_ROWS_FORMAT,
    }


def train_settings(config: dict[str, Any], run: str, stage: str) -> dict[str, Any]:
    spec = memagent_runs(config)[run]
    stage_spec = dict(config["training"][stage])
    if "rollout_batch" in spec:
        stage_spec["rollout_batch"] = spec["rollout_batch"]
    backend = config["training"]["backend"]
    if backend == "verl":  # the cpu trainer's jobs must not rerun when verl-only keys change
        verl = dict(config["training"]["verl"])
        if verl["tensor_parallel_size"] is None:
            verl["tensor_parallel_size"] = max(1, model_gpus(config, spec["base"]))
        stage_spec["verl"] = verl
    return {
        "backend": backend,
        "run": run,
        "stage": stage,
        "verifier": config["training"].get("verifier", DEFAULT_VERIFIER),
        "agent": agent_settings(config, spec),
        "seed": config["seed"],
        "gpus_per_node": spec.get("gpus_per_node", 0),
        "nodes": spec.get("nodes", 1),
        **stage_spec,
    }


def _check_disabled_memory(config: dict[str, Any]) -> None:
    """Stores are disabled on memalpha systems only, and never all three."""
    for sid, spec in config["evaluation"]["systems"].items():
        disabled = spec.get("disabled_memory")
        key = f"config key evaluation.systems.{sid}.disabled_memory"
        if disabled and spec["kind"] != "memalpha":
            raise ConfigError(f"{key}: a {spec['kind']} system has no memory stores to disable")
        if disabled and set(disabled) >= set(MEMORY_STORES):
            raise ConfigError(f"{key}: every store disabled: the agent could remember nothing")


def _check_memalpha_runs_evaluated(config: dict[str, Any]) -> None:
    """Every Mem-α training run is some memalpha system's model: that system is its row of
    Tables 4 and 9; a run nobody evaluates would train for nothing."""
    evaluated = {
        spec["model"]
        for spec in config["evaluation"]["systems"].values()
        if spec["kind"] == "memalpha"
    }
    for run in memalpha_runs(config):
        if run not in evaluated:
            raise ConfigError(
                f"config key memalpha.training.runs.{run}: no memalpha system evaluates it (add "
                f"one to evaluation.systems with model: {run}; it gives the run its row in "
                "memalpha_table4 and memalpha_table9)"
            )


def _check_memalpha_window(config: dict[str, Any]) -> None:
    """A memorisation reply (memalpha.agent.max_new_tokens), and in training the capped prompt
    with it, fit each policy's window where the config knows it (an engine's max_model_len, a
    tiny model's context)."""
    spec = config["memalpha"]
    reply = spec["agent"]["max_new_tokens"]
    runs = memalpha_runs(config)
    for sid, system in config["evaluation"]["systems"].items():
        if system["kind"] != "memalpha":
            continue
        base = runs[system["model"]]["base"] if system["model"] in runs else system["model"]
        if base not in config["models"]:
            continue  # an unknown model: named by the systems' own check
        engine = system.get("engine") or config["evaluation"]["engine"]
        window = engine.get("max_model_len") or declared_context(config["models"][base])
        if window is not None and reply >= window:
            raise ConfigError(
                f"config key memalpha.agent.max_new_tokens: {reply} leaves no room for a prompt "
                f"in system {sid!r}'s window of {window} tokens"
            )
    cap = spec.get("training", {}).get("prompt_cap")
    for run, run_spec in runs.items():
        if run_spec["base"] not in config["models"]:
            continue  # named by the runs' own check
        window = declared_context(config["models"][run_spec["base"]])
        if window is not None and cap + reply > window:
            raise ConfigError(
                f"config key memalpha.training.prompt_cap: {cap} + max_new_tokens {reply} exceed "
                f"run {run!r}'s base {run_spec['base']!r} window of {window} tokens"
            )


def _check_memalpha_recipe(training: dict[str, Any]) -> None:
    """The chosen recipe exists, and one that keeps the best checkpoint validates."""
    recipe = training["recipe"]
    if recipe not in training["recipes"]:
        raise ConfigError(
            f"config key memalpha.training.recipe: unknown recipe {recipe!r} "
            f"(known: {sorted(training['recipes'])})"
        )
    if training["recipes"][recipe]["checkpoint"] == "best" and not training["validation"]["every"]:
        raise ConfigError(
            f"config key memalpha.training.validation.every: recipe {recipe!r} keeps the best "
            "validated checkpoint, so training must validate (every > 0)"
        )


def memalpha_recipe(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe that trains the Mem-α runs: its name and its recipes entry."""
    training = config["memalpha"]["training"]
    return {"recipe": training["recipe"], **training["recipes"][training["recipe"]]}


def memalpha_train_settings(config: dict[str, Any], run: str) -> dict[str, Any]:
    """Everything a Mem-α GRPO job reads: its run (base, β, γ), the chosen recipe (steps,
    warm-up, KL, checkpoint), the shared hyperparameters, validation on the Memalpha validation
    sources, the policy's memorisation settings with the training prompt cap, the QA step, the
    judge."""
    spec = config["memalpha"]
    skip = ("runs", "recipe", "recipes")
    training = {key: value for key, value in spec["training"].items() if key not in skip}
    agent = {**spec["agent"], "prompt_cap": training.pop("prompt_cap")}
    agent["cut_responses"] = training.pop("cut_responses")
    qa = {k: v for k, v in spec["qa"].items() if k not in ("engine", "model")}
    run_spec = {"nodes": 1, "gpus_per_node": 0, **memalpha_runs(config)[run]}
    return {
        "backend": config["training"]["backend"],
        "run": run,
        "stage": MEMALPHA_STAGE,
        "seed": config["seed"],
        **run_spec,
        **training,
        **memalpha_recipe(config),
        "agent": agent,
        "memory_tokenizer": spec["memory_tokenizer"],
        "sources": spec["train"]["sources"],
        "validation_sources": spec["memalpha"]["sources"],
        "qa": qa,
    }


def stage2_data_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {"seed": config["seed"], **config["training"]["stage2_data"]}


SYSTEM_KEYS = {  # what each kind reads from its system spec, beyond kind/model
    "memagent": (),
    "longcontext": ("max_input_tokens", "max_output_tokens", "context_extension"),
    "rag": ("retriever", "top_k", "unit", "unit_tokens", "max_input_tokens", "max_output_tokens"),
    "mem0": ("mem0",),
}


def eval_settings(
    config: dict[str, Any], job: EvalJob, shard: int, systems: Systems | None = None
) -> dict[str, Any]:
    """Everything one evaluation (shard) reads: the job, the system and the engine."""
    system = (systems or eval_systems(config))[job.system]
    evaluation = config["evaluation"]
    if job.benchmark in MEMALPHA_BENCHMARKS or memorizes(system, job.benchmark):
        return _memalpha_eval_settings(config, job, shard, system)
    engine = engine_settings(config, system.get("engine"), system["model"])
    if system.get("max_model_len") is not None:
        engine["max_model_len"] = system["max_model_len"]
    settings = {
        **job._asdict(),
        "kind": system["kind"],
        "shard": shard,
        "engine": engine,
        "wave_size": evaluation["wave_size"],
        "allow_failures": allowed_failures(config),
        "sampling": evaluation["sampling"],
        "final_prompt": evaluation["final_prompt"],
        **{key: system.get(key) for key in SYSTEM_KEYS[system["kind"]]},
    }
    if system["kind"] in ("memagent", "mem0"):  # Mem0 answers with the agent's final budget
        settings["agent"] = agent_settings(config, system)
    settings.update(retriever_options(config, system))
    if job.benchmark == "ruler":
        settings["variant"] = config["ruler"]["variant"]
    if job.benchmark == "longbench" and evaluation.get("longbench_strip_think"):
        settings["strip_think"] = True  # only when on: LongBench jobs rerun only then
    return settings


def _memalpha_eval_settings(
    config: dict[str, Any], job: EvalJob, shard: int, system: dict[str, Any]
) -> dict[str, Any]:
    """An evaluate job on a Mem-α benchmark: after a memorize job it runs the QA model (which
    answers from memory or judges); a context baseline runs its own model, which also judges."""
    spec = config["memalpha"]
    qa = {k: v for k, v in spec["qa"].items() if k not in ("engine", "model")}
    settings = {**job._asdict(), "kind": system["kind"], "shard": shard, "qa": qa}
    if system["kind"] != "memalpha":  # a baseline: scored as long_context_eval.py scores them
        settings["protocol"] = spec["baselines"]["protocol"]
    settings["wave_size"] = config["evaluation"]["wave_size"]
    settings["allow_failures"] = allowed_failures(config)
    if job.benchmark == "ruler_hqa":
        settings["ruler_hqa"] = spec["ruler_hqa"]
    if memorizes(system, job.benchmark):
        settings["engine"] = engine_settings(config, spec["qa"].get("engine"), qa_model(config))
        if system["kind"] == "mem1":  # the QA model answers with the memory as its context
            mem1 = spec["baselines"]["mem1"]
            settings["sampling"] = spec["baselines"]["sampling"]
            settings.update({key: mem1[key] for key in ("max_input_tokens", "max_output_tokens")})
        return settings
    settings["engine"] = engine_settings(config, system.get("engine"), system["model"])
    settings["sampling"] = spec["baselines"]["sampling"]
    settings.update({key: system[key] for key in ("max_input_tokens", "max_output_tokens")})
    if system["kind"] == "rag":
        settings.update(retriever=system["retriever"], top_k=system["top_k"])
        settings.update(retriever_options(config, system))
    return settings


def retriever_options(config: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """A RAG system's retriever options: the embedding endpoint for `openai` (none otherwise,
    so that the other retrievers' jobs do not rerun when it changes)."""
    if system["kind"] != "rag" or system["retriever"] != "openai":
        return {}
    return {"retriever_options": config["evaluation"].get("embedding", {})}


def allowed_failures(config: dict[str, Any]) -> float:
    """The fraction of an engine job's samples that may fail (`evaluation.allow_failures`)."""
    return float(config["evaluation"].get("allow_failures", 0))


def qa_model(config: dict[str, Any]) -> str:
    """Mem-α's frozen QA model (and LongMemEval judge): a models key."""
    return config["memalpha"]["qa"]["model"]


def memalpha_data(config: dict[str, Any], split: str) -> Path:
    """The downloaded parquet of a `memalpha` split (train, memalpha = validation, mab)."""
    return raw_file(config, config["memalpha"][split]["source"])


def stats_file(config: dict[str, Any], split: str) -> Path:
    return results_dir(config) / "stats" / f"{split}.json"


def memorize_settings(
    config: dict[str, Any], job: EvalJob, systems: Systems | None = None
) -> dict[str, Any]:
    """Everything a memorize job reads: the system's engine and its agent's settings."""
    system = (systems or eval_systems(config))[job.system]
    spec = config["memalpha"]
    settings = {
        **{key: value for key, value in job._asdict().items() if key != "shards"},
        "kind": system["kind"],
        "engine": engine_settings(config, system.get("engine"), system["model"]),
        "wave_size": config["evaluation"]["wave_size"],
        "allow_failures": allowed_failures(config),
    }
    if job.benchmark == "ruler_hqa":
        settings["ruler_hqa"] = spec["ruler_hqa"]
    if system["kind"] == "memagent":
        return {**settings, **spec["baselines"]["memagent"]}
    if system["kind"] == "mem1":
        mem1 = spec["baselines"]["mem1"]
        return {**settings, "sampling": mem1["sampling"], "memory_tokens": mem1["memory_tokens"]}
    return {
        **settings,
        "agent": spec["agent"],
        "sampling": spec["sampling"],
        "memory_tokenizer": spec["memory_tokenizer"],
        "disabled_memory": system.get("disabled_memory", []),
        "seed": config["seed"],
    }


def merge_settings(job: EvalJob) -> dict[str, Any]:
    return job._asdict()


REPORTED_SYSTEM_KEYS = (
    "kind",
    "model",
    "name",
    "benchmarks",
    "retriever",
    "top_k",
    "unit",
    "unit_tokens",
    "agent",  # a memory-ablation variant's budgets
    "ablation_of",  # ... and the system it varies
)


def report_settings(config: dict[str, Any]) -> dict[str, Any]:
    def labels(section: str) -> dict[int, str]:
        return {int(k): v for k, v in config[section]["length_labels"].items()}

    return {
        "systems": _report_systems(config, variants=False),
        "length_labels": labels("ruler_hqa"),
        "ruler_length_labels": labels("ruler"),
        "run": config["run"],
    }


def _report_systems(config: dict[str, Any], variants: bool) -> list[dict[str, Any]]:
    """The systems a report shows, as a list (settings JSON is key-sorted; the tables keep the
    config's order); memory-ablation variants only when `variants`."""
    return [
        {
            "id": system_id,
            "display": _display(spec),
            "paper_row": spec.get("paper_row"),
            **{key: spec[key] for key in REPORTED_SYSTEM_KEYS if key in spec},
            **_reward_weights(config, spec),
        }
        for system_id, spec in eval_systems(config).items()
        if variants or "ablation_of" not in spec
    ]


def _reward_weights(config: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """A Mem-α system whose policy is a Mem-α run of ours: its (β, γ), which pick its row of the
    ablation tables (memalpha_table4/9), and the recipe that trained it (their notes)."""
    run = memalpha_runs(config).get(system.get("model", ""))
    if system["kind"] != "memalpha" or run is None:
        return {}
    return {"reward_weights": [run["beta"], run["gamma"]], "training": memalpha_recipe(config)}


def paper_file(config: dict[str, Any], name: str) -> str:
    """The published numbers a table or figure is compared with (config/paper/)."""
    memalpha = (*MEMALPHA_TABLES, SUITES_TABLE, *MEMALPHA_FIGURES)
    key = "memalpha_paper" if name in memalpha else "paper"
    return config["report"][key]


def _display(system: dict[str, Any]) -> str:
    if system["kind"] != "rag":
        return system["display"]
    unit = "" if system["unit"] == "doc" else f" C={system['unit_tokens']}"
    return f"{system['display']} ({system['retriever']}){unit} K={system['top_k']}"


NIAH_CONFIG_TABLE = "table7"  # the NIAH synthetic configuration: reads the RULER sets it describes
PROBE_TABLE = "table4"  # §3.3.3: the probe, as differences from the random placement
MEMAGENT_TABLES = (
    "table1",
    "table2",
    "table3",
    PROBE_TABLE,
    NIAH_CONFIG_TABLE,
    "table8",
    "table9",
    "table10",
    "table11",
    "table_niah",
)
# Mem-α's dataset statistics: the `memalpha` splits each table describes (a stats job per split)
STATS_TABLES = {
    "memalpha_table6": ("memalpha",),
    "memalpha_table7": ("train", "memalpha"),
    "memalpha_table8": ("mab",),
}
MEMALPHA_SPLITS = ("train", *MEMALPHA_BENCHMARKS)
TRACE_TABLE = "memalpha_table5"  # final memories side by side: reads memorize records
MEMALPHA_SCORE_TABLES = ("memalpha_table1", "memalpha_table2", "memalpha_table3")
# the (β, γ) ablation of our Mem-α runs: validation (Table 4), MemoryAgentBench (Table 9)
ABLATION_TABLES = {"memalpha_table4": "memalpha", "memalpha_table9": "mab"}
MEMALPHA_TABLES = (*MEMALPHA_SCORE_TABLES, *ABLATION_TABLES, TRACE_TABLE, *STATS_TABLES)
SUITES_TABLE = "suites"  # beyond the papers: every system on RULER-HQA and MemoryAgentBench
TABLES = (*MEMAGENT_TABLES, *MEMALPHA_TABLES, SUITES_TABLE)
MEMALPHA_FIGURES = ("memalpha_frontier",)  # beyond the paper: score against memory size
RL_ABLATION_FIGURES = {"figure6": "ruler_hqa", "figure7": "longbench"}  # §3.3.1
# The memory ablation (evaluation.memory_ablation): name -> (benchmark, what stays fixed)
MEMORY_ABLATION = {
    "table8": ("ruler", "total"),  # §D.1: memory + chunk held at the agent's total
    "table9": ("longbench", "total"),
    "figure8": ("ruler", "chunk"),  # §3.3.2: memory 256 ... 4096, chunk at the agent's
    "figure9": ("longbench", "chunk"),
}
FLOPS_FIGURE = "figure10"  # Appendix B, with the RULER-HQA jobs' measured cost beside it
ABLATION_ROLES = ("backbone", "workflow", "rl")  # of each report.rl_ablation group
FLOPS_ROLES = ("backbone", "rl")  # Figure 10's
FIGURES = (
    "figure1",
    "figure5",
    "figure_ood",
    *RL_ABLATION_FIGURES,
    "figure8",
    "figure9",
    FLOPS_FIGURE,
    *MEMALPHA_FIGURES,
)
NIAH_FIGURE_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3")  # Figure 5


def report_needs(name: str) -> str:
    """The config part whose evaluations a table or figure reads (for 'nothing to show' errors)."""
    if name == PROBE_TABLE:
        return "evaluation.probe"
    if name in MEMORY_ABLATION:
        return "evaluation.memory_ablation"
    if name in RL_ABLATION_FIGURES:
        return "report.rl_ablation"
    if name in ABLATION_TABLES:
        return "memalpha.training.runs, evaluated as systems"
    return "evaluation.systems on its benchmarks"


def report_jobs(config: dict[str, Any], name: str) -> list[EvalJob]:
    """The evaluation jobs a table or figure reads (by benchmark, task and system kind); their
    metrics files may hold other tasks too, which the tables ignore."""
    kinds = eval_systems(config)
    every_job = eval_jobs(config, kinds)
    if name == PROBE_TABLE:  # the probe sets, and RULER-HQA at their lengths (random)
        probe = config["evaluation"].get("probe") or {"systems": {}, "n_docs": []}
        lengths = set(probe["n_docs"])
        return [
            j
            for j in every_job
            if j.system in probe["systems"]
            and (
                j.benchmark == PROBE_BENCHMARK
                or (j.benchmark == "ruler_hqa" and j.length in lengths)
            )
        ]
    if name in MEMORY_ABLATION:  # the ablated systems and their variants
        members = set(memory_ablation_members(config, name))
        benchmark = MEMORY_ABLATION[name][0]
        return [j for j in every_job if j.system in members and j.benchmark == benchmark]
    jobs = [j for j in every_job if "ablation_of" not in kinds[j.system]]  # the rest: not theirs

    def select(benchmark: str, rag: bool | None, tasks: Sequence[str] | None = None) -> list:
        return [
            job
            for job in jobs
            if job.benchmark == benchmark
            and (tasks is None or not set(tasks).isdisjoint(job.tasks))
            and (rag is None or (kinds[job.system]["kind"] == "rag") == rag)
        ]

    def memagent_suite() -> list[EvalJob]:  # RULER-HQA without RAG and Mem-α's agents
        return [
            j
            for j in select("ruler_hqa", rag=False)
            if kinds[j.system]["kind"] not in MEMALPHA_ONLY_KINDS
        ]

    def ablation(benchmark: str) -> list[EvalJob]:  # Mem-α systems of our own Mem-α runs
        runs = memalpha_runs(config)
        return [
            j
            for j in select(benchmark, rag=False)
            if kinds[j.system]["kind"] == "memalpha" and kinds[j.system]["model"] in runs
        ]

    def rl_ablation(benchmark: str, roles: Sequence[str] = ABLATION_ROLES) -> list[EvalJob]:
        groups = rl_ablation_groups(config).values()  # report.rl_ablation's systems in `roles`
        ablated = {group[role] for group in groups for role in roles}
        tasks = qa if benchmark == "longbench" else None
        return [j for j in select(benchmark, rag=False, tasks=tasks) if j.system in ablated]

    def policies() -> list[EvalJob]:  # Mem-α's framework with each policy, on validation
        return [j for j in select("memalpha", rag=False) if kinds[j.system]["kind"] == "memalpha"]

    qa = [t for t in config["longbench"]["tasks"] if t not in LONGBENCH_SUM]
    memagent = [j for j in jobs if kinds[j.system]["kind"] == "memagent"]
    selections = {
        "table1": memagent_suite,
        "figure1": memagent_suite,
        "table2": lambda: select("longbench", rag=False, tasks=LONGBENCH_SUM),
        "table3": lambda: select("longbench", rag=False, tasks=qa),
        "table10": lambda: (
            select("ruler_hqa", rag=True) + [j for j in memagent if j.benchmark == "ruler_hqa"]
        ),
        "table11": lambda: (
            select("longbench", rag=True, tasks=qa)
            + [
                j
                for j in memagent
                if j.benchmark == "longbench" and not set(qa).isdisjoint(j.tasks)
            ]
        ),
        "figure5": lambda: select("ruler", rag=None, tasks=NIAH_FIGURE_TASKS),
        "table_niah": lambda: select("ruler", rag=None, tasks=NIAH_FIGURE_TASKS),
        "figure_ood": lambda: select("ruler", rag=None),
        "memalpha_table1": lambda: select("memalpha", rag=None),
        "memalpha_table2": lambda: select("mab", rag=None),
        "memalpha_table3": policies,
        **{name: functools.partial(ablation, bench) for name, bench in ABLATION_TABLES.items()},
        **{name: functools.partial(rl_ablation, b) for name, b in RL_ABLATION_FIGURES.items()},
        FLOPS_FIGURE: lambda: rl_ablation("ruler_hqa", FLOPS_ROLES),
        "memalpha_frontier": lambda: select("memalpha", rag=None) + select("mab", rag=None),
        SUITES_TABLE: lambda: select("ruler_hqa", rag=None) + select("mab", rag=None),
        TRACE_TABLE: policies,
        NIAH_CONFIG_TABLE: list,  # no evaluation: the RULER sets (niah_sets)
    }
    if name not in selections:
        raise ConfigError(f"unknown table or figure {name!r}")
    return selections[name]()


def niah_sets(config: dict[str, Any]) -> list[tuple[str, int]]:
    """The (task, length) of every NIAH set the config synthesizes (Table 7 describes them)."""
    return [
        (task, n) for task, n in ruler_sets(config) if RULER_TASK_SPECS[task]["family"] == "niah"
    ]


def memory_ablation_members(config: dict[str, Any], name: str) -> list[str]:
    """The systems of a memory-ablation table or figure (MEMORY_ABLATION): each ablated system
    (the agent's own budgets), then its variants that keep the chunk (figures 8, 9) or the memory
    + chunk total (tables 8, 9) of the agent."""
    agent = config["agent"]
    fixed = MEMORY_ABLATION[name][1]
    members = []
    for sid, spec in eval_systems(config).items():
        if sid in config["evaluation"].get("memory_ablation", {}).get("systems", {}):
            members.append(sid)
        elif "ablation_of" in spec:
            memory, chunk = spec["agent"]["memory_tokens"], spec["agent"]["chunk_tokens"]
            if (fixed == "chunk" and chunk == agent["chunk_tokens"]) or (
                fixed == "total"
                and memory + chunk == agent["memory_tokens"] + agent["chunk_tokens"]
            ):
                members.append(sid)
    return members


def table_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What one table or figure reads beyond `report_settings`: Figures 6 and 7 their groups,
    Table 4 its probe, Table 7 the RULER settings it reports, the memory ablation its own
    systems (the only reports that show the variants)."""
    if name in MEMORY_ABLATION:
        members = set(memory_ablation_members(config, name))
        systems = [s for s in _report_systems(config, True) if s["id"] in members]
        return {"systems": systems, "agent": config["agent"]}
    if name in RL_ABLATION_FIGURES:
        return {"rl_ablation": rl_ablation_groups(config)}
    if name == PROBE_TABLE:
        probe = config["evaluation"].get("probe") or {"systems": {}, "placements": []}
        return {"probe": {"systems": probe["systems"], "placements": probe["placements"]}}
    if name != NIAH_CONFIG_TABLE:
        return {}
    ruler = config["ruler"]
    tokenizer = config["models"][ruler["tokenizer"]]
    return {
        "niah_config": {
            "variant": ruler["variant"],
            "samples": ruler["samples"],
            "tokenizer": tokenizer.get("id", ruler["tokenizer"]),
            "seed": config["seed"],
        }
    }


def flops_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Figure 10: the agent's q, N and o, the attention count (`report.flops_attention`), and
    per `report.rl_ablation` group the long-context
    backbone (and the input it truncates to) and RL-MemAgent, whose RULER-HQA jobs give the
    measured cost."""
    agent, systems = config["agent"], config["evaluation"]["systems"]
    return {
        "agent": {key: agent[key] for key in ("query_tokens", "chunk_tokens", "final_tokens")},
        "attention": config["report"].get("flops_attention", "fork"),
        "groups": {
            group: {
                "backbone": roles["backbone"],
                "rl": roles["rl"],
                "backbone_max_input": systems[roles["backbone"]].get("max_input_tokens"),
            }
            for group, roles in rl_ablation_groups(config).items()
        },
    }


def flops_models(config: dict[str, Any]) -> dict[str, str]:
    """Figure 10: per group, the model whose shape prices the FLOPs (RL-MemAgent's base)."""
    runs = trained_runs(config)
    systems = config["evaluation"]["systems"]
    models = {}
    for group, roles in rl_ablation_groups(config).items():
        model = systems[roles["rl"]]["model"]
        models[group] = runs[model]["base"] if model in runs else model
    return models


def _studies(config: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """`report.case_studies` by the evaluation each names: (benchmark, system, length)."""
    return {
        (study["benchmark"], study["system"], study["length"]): study
        for study in config["report"].get("case_studies", [])
    }


def case_studies(config: dict[str, Any]) -> list[EvalJob]:
    """The MemAgent evaluations whose chosen samples `report.case_studies` traces."""
    studies = _studies(config)
    return [j for j in eval_jobs(config) if (j.benchmark, j.system, j.length) in studies]


def case_study_settings(config: dict[str, Any], job: EvalJob) -> dict[str, Any]:
    """What `memrl trace` reads for one case study: the evaluation (its tasks, the agent's
    chunk size that cut its contexts) and which samples to show."""
    study = _studies(config)[(job.benchmark, job.system, job.length)]
    system = eval_systems(config)[job.system]
    return {
        **{key: value for key, value in job._asdict().items() if key != "shards"},
        "agent": agent_settings(config, system),
        **{key: study[key] for key in ("samples", "first", "only") if key in study},
    }


def _check_case_studies(config: dict[str, Any]) -> None:
    """Each case study names a MemAgent evaluation of the matrix (the only records with a
    memory trace)."""
    systems = eval_systems(config)
    jobs = {(j.benchmark, j.system, j.length) for j in eval_jobs(config, systems)}
    seen = set()
    for i, study in enumerate(config["report"].get("case_studies", [])):
        key = f"config key report.case_studies.{i}"
        evaluation = (study["benchmark"], study["system"], study["length"])
        if evaluation in seen:
            raise ConfigError(f"{key}: a second case study of {evaluation} (one per evaluation)")
        seen.add(evaluation)
        if systems.get(study["system"], {}).get("kind") != "memagent":
            raise ConfigError(f"{key}.system: {study['system']!r} is not a memagent system")
        if (study["benchmark"], study["system"], study["length"]) not in jobs:
            raise ConfigError(
                f"{key}: {study['system']!r} has no {study['benchmark']} evaluation at length "
                f"{study['length']}"
            )


def rl_ablation_groups(config: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Figures 6 and 7: per group label (a backbone size), the system id of each role."""
    return config["report"].get("rl_ablation", {})


def check_config_files(paths: Sequence[str | Path]) -> None:
    """Read each config file strictly: Snakemake's own reading keeps the last of duplicate keys."""
    for path in dict.fromkeys(map(str, paths)):
        load_yaml(path)


SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m memrl.config FILE`: check a config without Snakemake (which, on a YAML syntax
    error, names neither the line nor the column)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memrl.config", description=main.__doc__)
    parser.add_argument("config", type=Path)
    args = parser.parse_args(argv)
    try:
        config = load_yaml(args.config)
        validate_config(config, SCHEMA)
    except ConfigError as exc:
        message = str(exc)
        raise SystemExit(
            message if str(args.config) in message else f"{args.config}: {message}"
        ) from None
    print(f"{args.config}: valid ({len(eval_jobs(config))} evaluation jobs)")


if __name__ == "__main__":
    main()
