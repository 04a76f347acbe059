"""Training recipes key by key: the paper config's switch reproduces both papers' transcribed
recipes, our verl overrides read back as the job's recipe, another run's config is read and
compared, and the `recipes` tables mark every drift."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memrepro.config import (
    SCHEMA,
    ConfigError,
    load_yaml,
    memalpha_runs,
    memalpha_train_settings,
    train_settings,
    validate_config,
)
from memrepro.recipe_diff import main as recipe_diff
from memrepro.report.recipes import build_recipes_table, load_recipes
from memrepro.train.recipes import (
    RecipeError,
    check_transcription,
    from_verl,
    job_recipe,
    read_trainer_config,
    recipe_record,
    stated,
    verdict,
    write_recipe,
)
from memrepro.verl.overrides import MEMAGENT, MEMALPHA, VerlPaths, verl_overrides

REPO = Path(__file__).resolve().parents[1]
PAPERS = {
    name: load_yaml(REPO / "config" / "paper" / f"{name}.yaml") for name in ("memagent", "memalpha")
}
PATHS = VerlPaths("train.parquet", "val.parquet", "model", "checkpoints")


def paper_config(recipe: str = "official") -> dict[str, Any]:
    config = load_yaml(REPO / "config" / "config.yaml")
    config["training"]["recipe"] = recipe
    config["memalpha"]["training"]["recipe"] = recipe
    return config


def memagent_records(config: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        recipe_record(train_settings(config, run, stage), "memagent")
        for run in config["training"]["runs"]
        for stage in ("stage1", "stage2")
    ]


def memalpha_records(config: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        recipe_record(memalpha_train_settings(config, run), "memalpha")
        for run in memalpha_runs(config)
    ]


@pytest.mark.parametrize("recipe", ["official", "paper"])
def test_the_paper_configs_switch_trains_each_transcribed_recipe_to_the_key(recipe):
    """Every trained job of the paper plan, under either switch, drifts from no key its recipe
    states: config.yaml's `recipes` reproduce the paper files' transcriptions."""
    config = paper_config(recipe)
    name = {"official": "official-script recipe", "paper": "paper recipe"}[recipe]
    for paper, records in (("memagent", memagent_records), ("memalpha", memalpha_records)):
        for record in records(config):
            values, run, stage = record["values"], record["recipe_run"], record["stage"]
            assert record["recipe"] == recipe
            assert verdict(values, PAPERS[paper]["recipe"], recipe, run, stage) == name, record


def test_the_two_recipes_differ_where_the_issue_of_each_paper_says():
    """MemAgent: the 7B script's batch of 128, clip-high 0.2 and no dynamic sampling against
    §A.3's 256 and DAPO's two halves; Mem-α: 85 steps, a KL loss, the last checkpoint,
    token-mean against 205, none, best, per-action."""
    by_recipe = {
        recipe: {r["run"] + r["stage"]: r["values"] for r in memagent_records(paper_config(recipe))}
        for recipe in ("official", "paper")
    }
    official, paper = by_recipe["official"], by_recipe["paper"]

    def differ(a: dict, b: dict) -> set[str]:
        assert set(a) == set(b)
        return {k for k in a if a[k] != b[k]}

    assert differ(official["rl-memagent-7bstage1"], paper["rl-memagent-7bstage1"]) == {
        "rollout_batch",
        "ppo_mini_batch_size",
        "mini_batch_rows",
        "clip_high",
        "dynamic_sampling",
    }
    assert differ(official["rl-memagent-14bstage1"], paper["rl-memagent-14bstage1"]) == {
        "clip_high",
        "dynamic_sampling",
    }
    alpha = {r: memalpha_records(paper_config(r))[0]["values"] for r in ("official", "paper")}
    assert differ(alpha["official"], alpha["paper"]) == {
        "steps",
        "warmup_steps",
        "kl_loss_coef",
        "checkpoint",
        "loss_agg",
    }


def test_algorithm_1s_recipe_is_the_paper_recipe_with_the_kl_in_the_reward():
    """training.recipe: algorithm1 drifts from the paper recipe in exactly Algorithm 1's two
    changes: the KL leaves the loss for the reward, and the advantage is divided by the std."""
    paper, variant = (
        {r["run"] + r["stage"]: r["values"] for r in memagent_records(paper_config(name))}
        for name in ("paper", "algorithm1")
    )
    for job, values in variant.items():
        changed = {key for key in values if values[key] != paper[job][key]}
        assert changed == {
            "kl_loss_coef",
            "kl_in_reward",
            "kl_reward_coef",
            "kl_reward_type",
            "norm_adv_by_std",
        }
        assert (values["kl_loss_coef"], values["kl_reward_coef"]) == (0, 1.0e-3)
    record = memagent_records(paper_config("algorithm1"))[0]
    said = verdict(record["values"], PAPERS["memagent"]["recipe"], "algorithm1", "rl-memagent-7b",
                   "stage1")  # fmt: skip
    assert said == (
        "4 keys drift from the paper recipe: KL loss coefficient, KL in the reward, "
        "KL reward coefficient β, advantage ÷ group std"
    )


@pytest.mark.parametrize(
    ("agent", "recipe", "name"),
    [("memagent", MEMAGENT, "official"), ("memagent", MEMAGENT, "algorithm1"),
     ("memalpha", MEMALPHA, "official")],
)  # fmt: skip
def test_our_verl_overrides_read_back_as_the_jobs_recipe(agent, recipe, name):
    """The vocabulary's verl keys are the ones our launcher writes: every key read back from a
    paper job's overrides equals its recipe (the context cut is our agent loop's, not verl's)."""
    config = paper_config(name) if agent == "memagent" else paper_config()
    if agent == "memagent":
        settings = train_settings(config, "rl-memagent-7b", "stage1")
    else:
        settings = memalpha_train_settings(config, "memalpha-4b-b0.05-g0.1")
    lines = verl_overrides(settings, PATHS, recipe)
    read = from_verl(read_trainer_config_lines(lines))
    ours = job_recipe(settings, agent)
    compared = {key for key in read if key != "context_truncation"}
    assert len(compared) >= 20
    assert {key: read[key] for key in compared} == {key: ours[key] for key in compared}


def read_trainer_config_lines(lines: list[str]) -> dict[str, Any]:
    from memrepro.train.recipes import _from_overrides

    return _from_overrides(lines, Path("overrides"))


def test_the_cpu_trainer_is_said_to_shuffle_and_have_no_dynamic_sampling():
    settings = {**train_settings(paper_config(), "rl-memagent-14b", "stage1"), "backend": "cpu"}
    values = job_recipe(settings, "memagent")
    assert (values["shuffle"], values["dynamic_sampling"]) == (True, False)
    drift = verdict(values, PAPERS["memagent"]["recipe"], "official", "rl-memagent-14b", "stage1")
    assert drift == "1 key drifts from the official-script recipe: data shuffled"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "nested.yaml",
            "actor_rollout_ref:\n  actor:\n    optim: {lr: 1e-6}\n    use_kl_loss: false\n",
        ),
        (
            "list.yaml",
            "- actor_rollout_ref.actor.optim.lr=1e-6\n"
            "- ++actor_rollout_ref.actor.use_kl_loss=false\n",
        ),
        (
            "flat.json",
            json.dumps(
                {
                    "actor_rollout_ref.actor.optim.lr": 1e-6,
                    "actor_rollout_ref.actor.use_kl_loss": False,
                }
            ),
        ),
        (
            "list.json",
            json.dumps(
                [
                    "actor_rollout_ref.actor.optim.lr=1e-6",
                    "actor_rollout_ref.actor.use_kl_loss=False",
                ]
            ),
        ),
    ],
)
def test_a_third_partys_config_is_read_in_each_format(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    values = from_verl(read_trainer_config(path), path)
    assert values == {"lr": 1e-6, "kl_loss_coef": 0}  # a KL loss switched off: coefficient 0


def test_mem_alphas_own_group_key_is_read_as_the_group_size(tmp_path):
    assert from_verl({"customized_grpo_rollout_n": 8}) == {"group_size": 8}


def test_an_unreadable_recipe_file_stops_naming_it_and_what_can_be_read(tmp_path):
    with pytest.raises(RecipeError, match=r"x\.toml: unknown format '\.toml'; readable: a verl"):
        read_trainer_config(tmp_path / "x.toml")
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"path": "m"}}')
    with pytest.raises(
        RecipeError, match=r"bad\.json: no key maps.*its keys: model\.path.*readable: actor_"
    ):
        from_verl(read_trainer_config(bad), bad)
    broken = tmp_path / "broken.yaml"
    broken.write_text("- a=1\n- b\n")
    with pytest.raises(RecipeError, match=r"broken\.yaml: item 2 is not a `key=value` override"):
        read_trainer_config(broken)


def test_a_stated_value_may_differ_by_run_and_apply_to_one_stage():
    entry = {"official": {"default": 256, "rl-memagent-7b": 128}, "stages": ["stage1"]}
    assert stated(entry, "official", "rl-memagent-7b", "stage1") == 128
    assert stated(entry, "official", "another-run", "stage1") == 256
    assert stated(entry, "official", "rl-memagent-7b", "stage2") is None
    assert stated(entry, "paper", "rl-memagent-7b", "stage1") is None


def test_both_transcriptions_name_recipe_keys_with_a_source_for_every_value():
    for paper, data in PAPERS.items():
        check_transcription(data["recipe"], paper)
    with pytest.raises(ValueError, match=r"recipe\.keys\.lr: paper value without paper_at"):
        check_transcription({"keys": {"lr": {"paper": 1e-6}}}, "x")
    with pytest.raises(ValueError, match=r"not recipe keys: \['learning_rate'\]"):
        check_transcription({"keys": {"learning_rate": {}}}, "x")


def test_the_table_marks_each_drift_and_gives_a_verdict_per_job(tmp_path):
    config = load_yaml(REPO / "config" / "smoke.yaml")
    settings = train_settings(config, "rl-memagent-tiny", "stage1")
    write_recipe(tmp_path, settings, "memagent")
    [record] = load_recipes([tmp_path])
    table = build_recipes_table([record], PAPERS["memagent"]["recipe"])
    column = "rl-memagent-tiny stage1 (official recipe, cpu)"
    assert table.loc["PPO clip ε_high", column] == "0.2 (≠ paper)"
    assert table.loc["data shuffled", column] == "yes (≠ script)"
    assert table.loc["prompts per step", column] == "2 (≠ both)"
    assert table.loc["learning rate", column] == "0.0001 (≠ both)"
    assert table.loc["PPO clip ε_high", "Paper"].startswith("0.28 — Eq. 2's ε_high")
    assert table.loc["data shuffled", "Paper"] == "not stated"
    assert table.loc["Verdict", column] == (
        "7 keys drift from the official-script recipe: training steps, prompts per step, "
        "rollouts per prompt (G), prompts per update, learning rate, LR warm-up steps, "
        "data shuffled"
    )


def test_a_checkpoint_without_its_recipe_names_itself(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"recipe\.json: missing: .* delete the directory"):
        load_recipes([tmp_path])


def memagent_config_error(edit) -> str:
    config = load_yaml(REPO / "config" / "config.yaml")
    edit(config["training"])
    with pytest.raises(ConfigError) as caught:
        validate_config(config, SCHEMA)
    return str(caught.value)


def test_a_recipe_switch_that_cannot_work_stops_the_plan_naming_the_key():
    assert "training.recipe: unknown recipe 'dapo'" in memagent_config_error(
        lambda t: t.update(recipe="dapo")
    )
    assert "training.recipes: the recipes set different keys" in memagent_config_error(
        lambda t: t["recipes"]["paper"].update(lr=2e-6)
    )
    assert "training.stage1: clip_high set by training.recipes too" in memagent_config_error(
        lambda t: t["stage1"].update(clip_high=0.3)
    )
    assert "training.recipes.official.runs: not training runs: ['rl-memagent-3b']" in (
        memagent_config_error(
            lambda t: t["recipes"]["official"]["runs"].update({"rl-memagent-3b": {}})
        )
    )


GOLDEN = REPO / "tests/golden/recipes"


def test_recipe_diff_prints_every_key_and_the_nearer_recipe(tmp_path, capsys):
    path = tmp_path / "theirs.yaml"
    path.write_text(
        "- data.train_batch_size=128\n- actor_rollout_ref.actor.clip_ratio_high=0.28\n"
        "- trainer.project_name=x\n"
    )
    recipe_diff([str(path), "--paper", "memagent", "--run", "rl-memagent-7b"])
    out = capsys.readouterr().out
    assert "rollout_batch        128" in out and "≠ paper" in out
    assert "shuffle              yes (verl's default)" in out  # unset: the fork's default
    assert "not compared (outside the recipe, or not read by MemAgent's verl fork): " in out
    assert "trainer.project_name" in out
    with pytest.raises(SystemExit, match=r"memrepro recipe-diff: .*nothing\.yaml"):
        recipe_diff([str(tmp_path / "nothing.yaml")])


@pytest.mark.parametrize(
    ("name", "run", "verdict_line"),
    [
        ("memagent_7b_overrides", "rl-memagent-7b", "official-script recipe, 0 drifts"),
        ("memagent_14b_overrides", "default", "official-script recipe, 0 drifts"),
        ("memagent_7b_resolved", "rl-memagent-7b", "official-script recipe, 0 drifts"),
        (
            "verl_port_at_defaults",
            "rl-memagent-7b",
            "official-script recipe, 4 drifts: KL loss coefficient, advantage ÷ group std, "
            "data shuffled, long-context truncation",
        ),
    ],
)
def test_recipe_diff_reads_real_configs_over_verls_defaults(name, run, verdict_line, capsys):
    """The official scripts' overrides and the 7B run's resolved config (steps left to the
    epochs, the fork's own grpo_use_adv) read as the official recipe; a port that leaves seven
    settings at verl's defaults reads the four whose defaults differ."""
    recipe_diff([str(GOLDEN / f"{name}.yaml"), "--run", run])
    assert capsys.readouterr().out.rstrip().endswith(f"verdict: {verdict_line}")


def test_mem_alphas_script_reads_as_its_recipe_in_chunk_rows(capsys):
    """Mem-α's script: 5 epochs over its 562 training rows at 32 a step (85 steps), a warm-up
    ratio of 0.05 (4 steps), 32 chunk rows per update (ppo_mini_batch_size 32 at rollout.n 1)."""
    args = ["--paper", "memalpha", "--train-rows", "562"]
    recipe_diff([str(GOLDEN / "memalpha_official_overrides.yaml"), *args])
    out = capsys.readouterr().out
    assert "85 (5 epochs x 562 rows / 32)" in out and "4 (lr_warmup_steps_ratio 0.05 x 85" in out
    assert out.rstrip().endswith("verdict: official-script recipe, 0 drifts")


def test_steps_follow_from_the_epochs_where_the_rows_are_given(capsys):
    recipe_diff([str(GOLDEN / "memagent_7b_overrides.yaml"), "--run", "rl-memagent-7b"])
    assert "unset (30 epochs x the rows / 128: give --train-rows)" in capsys.readouterr().out
    rows = ["--train-rows", "1708"]  # 13 steps an epoch at 128 prompts
    recipe_diff([str(GOLDEN / "memagent_7b_overrides.yaml"), "--run", "rl-memagent-7b", *rows])
    out = capsys.readouterr().out
    assert "390 (30 epochs x 1708 rows / 128)" in out and "1 drift: training steps" in out


def test_interpolations_and_nulls_are_listed_not_compared(tmp_path, capsys):
    """`${…}` is known only when Hydra runs; null is verl's default: neither is a drift."""
    path = tmp_path / "theirs.yaml"
    path.write_text(
        "data:\n  train_batch_size: ${oc.env:BS}\n  shuffle: null\n"
        "actor_rollout_ref:\n  actor:\n    clip_ratio_high: 0.28\n"
    )
    recipe_diff([str(path), "--paper", "memagent"])
    out = capsys.readouterr().out
    assert "rollout_batch        ${oc.env:BS} (an interpolation: not compared)" in out
    assert "shuffle              yes (verl's default)" in out
    said = "not compared (Hydra interpolations, known only when it runs): data.train_batch_size"
    assert said in out
    assert "null, read as MemAgent's verl fork's default: data.shuffle" in out
    assert "prompts per step" not in out.splitlines()[-1]  # rollout_batch is no drift


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (b"- data.shuffle=False\n", ["--run", "rl-memagent-7"], "--run 'rl-memagent-7': "),
        (b"- data.shuffle=False\n", ["--stage", "stage3"], "--stage 'stage3': memagent has "),
        (b"- data.shuffle=False\n- data.shuffle=True\n", [], "data.shuffle is set twice"),
        (b"data:\n  shuffle: false\n  shuffle: true\n", [], "shuffle set twice, at lines 2 and 3"),
        (
            b"data.shuffle: false\ndata:\n  shuffle: true\n",
            [],
            "data.shuffle set twice: once as a dotted key, once nested",
        ),
        (b"\xff\xfe", [], "not UTF-8 text \\(byte 0 is 0xff\\)"),
        (b"- data.shuffle=False\n", ["--paper-file", "nope.yaml"], "not a readable paper file"),
        (b"- data.shuffle=False\n", ["--paper-file", "config.yaml"], "no `recipe` section"),
    ],
)
def test_every_bad_input_is_one_sentence(tmp_path, monkeypatch, content, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "theirs.yaml").write_bytes(content)
    (tmp_path / "config.yaml").write_text("seed: 0\n")
    with pytest.raises(SystemExit, match=f"memrepro recipe-diff: .*{message}"):
        recipe_diff(["theirs.yaml", *args])


def test_a_tie_goes_to_the_recipe_behind_the_printed_numbers():
    from memrepro.recipe_diff import nearest

    both = {"keys": {"lr": {"paper": 1e-6, "official": 2e-6}}}
    values = {"lr": 3e-6}
    assert nearest(values, both, "default", "stage1") == (
        "paper recipe and official-script recipe, 1 drift: learning rate"
    )
    printed = both | {"printed_by": "official"}
    assert nearest(values, printed, "default", "stage1") == (
        "official-script recipe, 1 drift: learning rate"
    )


def test_a_memory_ablation_variant_takes_its_runs_recipe():
    config = copy.deepcopy(paper_config())
    config["evaluation"]["memory_ablation"]["retrain"] = True
    variants = [run for run in memagent_runs_of(config) if run.startswith("rl-memagent-7b-m")]
    assert variants
    settings = train_settings(config, variants[0], "stage1")
    assert (settings["recipe_run"], settings["rollout_batch"]) == ("rl-memagent-7b", 128)
    assert "runs" not in settings  # the recipe's per-run part is laid over, not carried


def memagent_runs_of(config: dict[str, Any]) -> list[str]:
    from memrepro.layout import memagent_runs

    return list(memagent_runs(config))


def test_a_table_showing_a_run_of_ours_names_the_recipe_that_trained_it():
    from memrepro.config import report_settings
    from memrepro.report.recipes import trained_recipe_notes

    config = paper_config("paper")
    systems = report_settings(config)["systems"]
    trained = [s for s in systems if "memagent_recipe" in s]
    assert {s["model"] for s in trained} == {"rl-memagent-7b", "rl-memagent-14b"}
    [note] = trained_recipe_notes(systems, [s["id"] for s in systems])
    assert note.startswith("Trained here with the paper recipe (training.recipe: paper): ")
    assert "memagent_recipes table" in note
    others = [s["id"] for s in systems if "memagent_recipe" not in s]
    assert len(others) > 10 and trained_recipe_notes(systems, others) == []


def test_the_docs_example_is_recipe_diffs_own_output(capsys):
    from docs_pages import docs_text

    recipe_diff([str(GOLDEN / "verl_port_at_defaults.yaml"), "--run", "rl-memagent-7b"])
    out = capsys.readouterr().out.splitlines()
    docs = docs_text(REPO)
    start = docs.index(
        "The output of `memrepro recipe-diff tests/golden/recipes/verl_port_at_defaults"
    )
    block = docs[start:].split("```")[1].strip().splitlines()
    shown = [line for line in block if line != "..."]
    assert len(shown) == 10 and all(line in out for line in shown)


def test_stage_two_is_marked_as_the_pipelines_own(tmp_path):
    config = load_yaml(REPO / "config" / "smoke.yaml")
    write_recipe(tmp_path, train_settings(config, "rl-memagent-tiny", "stage2"), "memagent")
    table = build_recipes_table(load_recipes([tmp_path]), PAPERS["memagent"]["recipe"])
    [said] = table.loc["Verdict"].iloc[2:]
    assert said.endswith(
        "; stage II's steps and chunks are the pipeline's own (§A.3 gives its data "
        "only: 2,560 rows up to 60K tokens)"
    )


def test_a_tiny_trained_model_opens_the_recipes_table_with_the_machinery_banner(tmp_path):
    from memrepro.report.recipes import machinery_jobs_banner

    config = load_yaml(REPO / "config" / "smoke.yaml")
    write_recipe(tmp_path, train_settings(config, "rl-memagent-tiny", "stage1"), "memagent")
    records = load_recipes([tmp_path])
    tiny = {"rl-tiny": {"display": "RL tiny", "model": "rl-memagent-tiny", "reproduces": False}}
    banner = machinery_jobs_banner(records, tiny)
    assert banner.startswith("Machinery check only: every system here runs")
    assert machinery_jobs_banner(records, {"rl": {**tiny["rl-tiny"], "reproduces": True}}) is None


def test_the_docs_count_the_recipe_vocabulary_as_the_code_holds_it(repo):
    from docs_pages import docs_text

    from memrepro.train.recipes import KEYS

    assert f"`memrepro.train.recipes.KEYS`: {len(KEYS)} keys" in " ".join(docs_text(repo).split())
