"""The cross-reference checks that the schema cannot express: each names the config key at fault."""

from __future__ import annotations

from typing import Any

from memrepro.agents.structured_memory import STORES as MEMORY_STORES
from memrepro.benchmarks import (
    CUSTOM_BENCHMARK,
    MEMAGENT_BENCHMARKS,
    MEMALPHA_BENCHMARKS,
    registered,
)
from memrepro.config.matrix import eval_jobs, eval_systems, rl_ablation_groups
from memrepro.config.memalpha_build import check_build
from memrepro.config.report_plans import TABLES
from memrepro.config.reports import RL_ABLATION_FIGURES
from memrepro.config.rescoring import check_rescore
from memrepro.config.settings import OFFICIAL_HQA
from memrepro.data.custom import FORMATS as CUSTOM_FORMATS
from memrepro.data.memalpha import QUERY_PROMPTS
from memrepro.layout import (
    O200K,
    ConfigError,
    declared_context,
    longbench_source,
    memagent_runs,
    memalpha_runs,
    memalpha_splits,
    raw_file,
    trained_runs,
    uses_qa_server,
)
from memrepro.systems import system_kind
from memrepro.systems.memagent import agent_settings


def check_references(config: dict[str, Any]) -> None:
    _check_memory_ablation(config)  # first: it may add training runs
    _check_probe(config)
    _check_example(config)
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
    _check_memagent_recipes(config["training"])
    for run, spec in memalpha_runs(config).items():
        require(f"memalpha.training.runs.{run}.base", spec["base"], models)
    require("ruler.tokenizer", config["ruler"]["tokenizer"], models)
    for key in ("essays", "squad", "hotpotqa"):
        _require_source(config, f"ruler.{key}", config["ruler"][key])
    for task in config["longbench"]["tasks"]:
        _require_source(config, f"longbench.tasks ({task})", longbench_source(task))
    _check_kind_benchmarks(config)
    _check_protocols(config)
    _check_closed_book_prompts(config)
    _check_memalpha(config, require)  # first: a missing section also leaves its runs unknown
    _check_sources(config)
    for system, spec in config["evaluation"]["systems"].items():
        key = f"evaluation.systems.{system}"
        require(f"{key}.model", spec["model"], models | runs)
        engine = (spec.get("engine") or config["evaluation"]["engine"])["kind"]
        if spec.get("context_extension", "none") != "none" and engine != "vllm":
            raise ConfigError(
                f"config key {key}.context_extension: {spec['context_extension']} is a vLLM "
                f"engine setting, but the system's engine is {engine!r}"
            )
    _check_eval_questions(config["ruler_hqa"], config["filter"])
    _check_coverage(config)
    _check_agent_window(config)
    _check_disabled_memory(config)
    _check_rl_ablation(config)
    _check_case_studies(config)
    _check_margins(config)
    _check_custom(config)
    check_rescore(config)
    check_build(config)


def check_data(config: dict[str, Any]) -> None:
    """Each benchmark's data that can be read while the plan is made (a dataset of one's own
    on this machine): a bad row stops the run before any job, naming its file, line and field."""
    for found in registered().values():
        found.check_data(config)


def _check_custom(config: dict[str, Any]) -> None:
    """One's own datasets: their sources exist in a format the reader takes, `custom.systems`
    names configured systems, and Mem-α's framework can ask the instances' questions."""
    spec = config.get("custom")
    if spec is None:
        return
    for name, dataset in spec["datasets"].items():
        key = f"custom.datasets.{name}.source"
        _require_source(config, key, dataset["source"])
        suffix = raw_file(config, dataset["source"]).suffix
        if suffix not in CUSTOM_FORMATS:
            raise ConfigError(
                f"config key {key}: sources.{dataset['source']}.url must end in one of "
                f"{CUSTOM_FORMATS}, got {suffix!r}"
            )
    systems = config["evaluation"]["systems"]
    if spec["systems"] != "all" and (unknown := sorted(set(spec["systems"]) - set(systems))):
        raise ConfigError(
            f"config key custom.systems: unknown systems {unknown} (known: {sorted(systems)})"
        )
    for name in spec["systems"] if spec["systems"] != "all" else ():
        kind = system_kind(systems[name]["kind"])
        if not kind.runs(systems[name], CUSTOM_BENCHMARK):
            raise ConfigError(
                f"config key custom.systems: {name} cannot run one's own datasets "
                f"({kind.allowed_why or f'a {kind.name} system'})"
            )
    source = spec.get("instances", {}).get("source")
    if source is not None and source not in QUERY_PROMPTS:
        raise ConfigError(
            f"config key custom.instances.source: no query prompt for {source!r} "
            f"(known: {sorted(QUERY_PROMPTS)})"
        )


def _check_eval_questions(ruler: dict[str, Any], filter_spec: dict[str, Any]) -> None:
    """The eval sets' questions come from the released files (`ruler_hqa.official.rows` of
    them) or from the filter's dev questions (`filter.keep_dev`): no more than those."""
    official = [key for key in ("questions", "eval_sets") if ruler.get(key) == OFFICIAL_HQA]
    if official and "official" not in ruler:
        raise ConfigError(
            f"config key ruler_hqa.official: needed by ruler_hqa.{official[0]}: official "
            "(the url of MemAgent's released files and their row count)"
        )
    key, limit = (
        ("ruler_hqa.official.rows", ruler["official"]["rows"])
        if official
        else ("filter.keep_dev", filter_spec["keep_dev"])
    )
    if ruler["eval_questions"] > limit:
        raise ConfigError(f"config key ruler_hqa.eval_questions: exceeds {key} ({limit})")


def _check_margins(config: dict[str, Any]) -> None:
    """report.equivalence_margin names `default` and tables (the schema bounds each margin; the
    loader refuses NaN and infinity)."""
    for name in config["report"].get("equivalence_margin", {}):
        if name != "default" and name not in TABLES:
            raise ConfigError(
                f"config key report.equivalence_margin.{name}: not a table "
                f"(tables: {', '.join(TABLES)})"
            )


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
            missing = [b for b in RL_ABLATION_FIGURES.values() if b not in _benchmarks(spec)]
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


def _check_example(config: dict[str, Any]) -> None:
    """Table 5's example instance: its systems memorise instances (their kind has a memorizer)
    and each source it narrows its search to is a data source of some configured split."""
    spec = config.get("memalpha", {}).get("example")
    if not spec:
        return
    key = "config key memalpha.example"
    for sid in spec["systems"]:
        system = config["evaluation"]["systems"].get(sid)
        if system is None:
            raise ConfigError(f"{key}.systems: {sid!r} is not in evaluation.systems")
        if system_kind(system["kind"]).memorizer is None:
            raise ConfigError(f"{key}.systems: {sid!r} ({system['kind']}) memorises no instance")
    splits = memalpha_splits(config)
    held = {source for split in splits for source in config["memalpha"][split]["sources"]}
    if unknown := [source for source in spec.get("sources", []) if source not in held]:
        raise ConfigError(
            f"{key}.sources: {unknown} are no data sources of the splits {', '.join(splits)}"
        )


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


def _check_kind_benchmarks(config: dict[str, Any]) -> None:
    """Each system runs only benchmarks its kind may run."""
    for name, spec in config["evaluation"]["systems"].items():
        kind = system_kind(spec["kind"])
        if outside := [b for b in _benchmarks(spec) if b not in kind.allowed]:
            why = f" ({kind.allowed_why})" if kind.allowed_why else ""
            article = "an" if kind.name[0] in "aeiou" else "a"
            raise ConfigError(
                f"config key evaluation.systems.{name}.benchmarks: {article} {kind.name} system "
                f"runs only on {list(kind.allowed)}{why}, not on {', '.join(outside)}"
            )


def _check_protocols(config: dict[str, Any]) -> None:
    """Each MemAgent switched to the other paper's protocol runs only where it is the other one:
    question-blind on MemAgent's benchmarks (on Mem-α's, every MemAgent reads an instance before
    its questions already; it reads for Mem-α's RULER-QA task description, whose section
    `_check_memalpha` requires), question-aware on Mem-α's (on MemAgent's, every MemAgent
    writes its memory for the question already); never both, and only a MemAgent."""
    for name, spec in config["evaluation"]["systems"].items():
        key = f"config key evaluation.systems.{name}"
        switched = [flag for flag in ("question_blind", "question_aware") if spec.get(flag)]
        if switched and spec["kind"] != "memagent":
            raise ConfigError(f"{key}.{switched[0]}: only a memagent system has it")
        if len(switched) == 2:
            raise ConfigError(f"{key}: question_blind and question_aware, at once")
        benchmarks = set(_benchmarks(spec))
        if spec.get("question_blind") and (on := sorted(benchmarks & set(MEMALPHA_BENCHMARKS))):
            raise ConfigError(
                f"{key}.benchmarks: a question-blind MemAgent runs MemAgent's benchmarks; on "
                f"{', '.join(on)} every MemAgent system reads each instance before its "
                "questions already"
            )
        if spec.get("question_aware") and (on := sorted(benchmarks - set(MEMALPHA_BENCHMARKS))):
            raise ConfigError(
                f"{key}.benchmarks: a question-aware MemAgent runs Mem-α's benchmarks; on "
                f"{', '.join(on)} every MemAgent system writes its memory for the question "
                "already"
            )


def _check_closed_book_prompts(config: dict[str, Any]) -> None:
    """`prompt` (the schema knows its values) only on a closed-book."""
    for name, spec in config["evaluation"]["systems"].items():
        if "prompt" not in spec:
            continue
        key = f"config key evaluation.systems.{name}.prompt"
        if spec["kind"] != "closedbook":
            raise ConfigError(f"{key}: only a closedbook system has it")


def _check_sources(config: dict[str, Any]) -> None:
    """A system's `sources` are data sources of the Mem-α benchmarks it runs."""
    for name, spec in config["evaluation"]["systems"].items():
        if "sources" not in spec:
            continue
        on = [b for b in _benchmarks(spec) if b in MEMALPHA_BENCHMARKS]
        known = {s for b in on for s in config["memalpha"][b]["sources"]}
        if unknown := [s for s in spec["sources"] if s not in known]:
            raise ConfigError(
                f"config key evaluation.systems.{name}.sources: {', '.join(unknown)} is not a "
                f"source of its Mem-α benchmarks ({', '.join(on) or 'none'}): "
                f"{', '.join(sorted(known)) or 'no sources'}"
            )


def _benchmarks(spec: dict[str, Any]) -> list[str]:
    """A configured system's benchmarks: its own, else its kind's default."""
    return list(spec.get("benchmarks", system_kind(spec["kind"]).benchmarks))


def _check_memalpha(config: dict[str, Any], require: Any) -> None:
    """The `memalpha` section, required once a system runs one of Mem-α's benchmarks or reads
    instances as Mem-α does, must resolve."""
    users = [
        name
        for name, spec in config["evaluation"]["systems"].items()
        if not set(_benchmarks(spec)).isdisjoint(MEMALPHA_BENCHMARKS)
        or system_kind(spec["kind"]).instances_only
        or spec.get("question_blind")  # memalpha.ruler_hqa.prompt: what its memory is for
    ]
    if "memalpha" not in config:
        if users:
            raise ConfigError(f"config key memalpha: required by the systems {users}")
        return
    spec = config["memalpha"]
    for benchmark in memalpha_splits(config):
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


# what a stage must have once its recipe is laid over it (the schema's stage lacks clip_high)
STAGE_KEYS = ("steps", "rollout_batch", "group_size", "mini_batches_per_step", "lr",
              "warmup_steps", "kl_coef", "clip_low", "clip_high", "clip_c",
              "filter_groups", "kl_in_reward", "norm_adv_by_std")  # fmt: skip


def _check_memagent_recipes(training: dict[str, Any]) -> None:
    """MemAgent's recipe exists; every recipe sets the same keys, so a switch leaves none unset
    or stale; no stage sets a key the recipes set (it would be silently replaced); a recipe's
    `runs` names training runs; and each stage has every key once its recipe is laid over it."""
    recipes, name = training["recipes"], training["recipe"]
    if name not in recipes:
        raise ConfigError(
            f"config key training.recipe: unknown recipe {name!r} (known: {sorted(recipes)})"
        )
    key_sets = {r: sorted(set(entry) - {"runs"}) for r, entry in recipes.items()}
    if len({tuple(keys) for keys in key_sets.values()}) > 1:
        raise ConfigError(
            f"config key training.recipes: the recipes set different keys: {key_sets}"
        )
    for stage in ("stage1", "stage2"):
        if shadowed := sorted(set(training[stage]) & set(key_sets[name])):
            raise ConfigError(
                f"config key training.{stage}: {', '.join(shadowed)} set by training.recipes too "
                "(the recipe's value wins): remove it from the stage"
            )
        if missing := [k for k in STAGE_KEYS if k not in {**training[stage], **recipes[name]}]:
            raise ConfigError(
                f"config key training.{stage}: no {', '.join(missing)} in the stage nor in "
                f"recipe {name!r}"
            )
    for recipe, entry in recipes.items():
        if unknown := sorted(set(entry.get("runs", {})) - set(training["runs"])):
            raise ConfigError(
                f"config key training.recipes.{recipe}.runs: not training runs: {unknown}"
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
