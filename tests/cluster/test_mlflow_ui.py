"""A finished run moved elsewhere, audited as a person does it: a smoke run of Table 3 (or the
whole smoke run `make test` kept, where CI has one) is copied to another directory and the
original deleted; on the copy, `memrepro lineage` walks to the base model, a rerun has nothing to
do, a load adds nothing, and MLflow's UI (`memrepro ui`), driven in Debian's headless Chromium by
Playwright, opens on the runs and leads by the links of each run's description from table3's run
to the base model's download run, with the artifacts served from the copy; on the way, the
evaluation's score is a metric chart, one of its items is a trace whose spans are the memory's
updates, and the training run shows the checkpoint it wrote as a logged model and the data set
it read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow_server import free_port, serving
from test_workflow import copy_workflow, kept_smoke, snakemake, snakemake_env

pytestmark = pytest.mark.cluster

TABLE = "results/smoke/tables/table3.md"
UI_START_S = 120
# table3 -> an evaluation of the trained system -> its checkpoint's training -> the base model
CHAIN = (r"^evaluate \S+\/rl-\S+$", r"^train_stage2 ", r"^train_stage1 ", r"^download_model ")


@pytest.fixture(scope="module")
def moved(tmp_path_factory, repo) -> Path:
    """Table 3 of the smoke run, made in one directory and moved to another (the first gone)."""
    made = tmp_path_factory.mktemp("made")
    copy_workflow(repo, made)
    if kept := kept_smoke():
        shutil.copytree(kept, made / "results/smoke", symlinks=True)
    else:
        done = snakemake("--profile", "profiles/smoke", "table3", cwd=made)
        assert done.returncode == 0, done.stderr[-5000:]
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "memrepro"
    shutil.copytree(made, elsewhere, symlinks=True)  # file times kept, as cp -a and rsync -a do
    shutil.rmtree(made)
    return elsewhere


def test_a_moved_run_keeps_its_lineage_and_nothing_is_left_to_do(moved):
    lineage = subprocess.run(
        [sys.executable, "-m", "memrepro.cli", "lineage", "--json", TABLE],
        cwd=moved,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert lineage.returncode == 0, lineage.stderr
    assert "records written in " in lineage.stderr  # the rebase, said once
    names = {job["name"] for job in json.loads(lineage.stdout)["jobs"].values()}
    for step in CHAIN:
        assert any(re.search(step, name) for name in names), step
    again = snakemake("--profile", "profiles/smoke", "table3", cwd=moved)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    load = subprocess.run(
        [sys.executable, "-m", "memrepro.tracking", "results/smoke"],
        cwd=moved,
        capture_output=True,
        text=True,
        check=False,
    )
    assert load.returncode == 0 and "'jobs': 0" in load.stderr, load.stderr[-3000:]


@pytest.fixture(scope="module")
def ui(moved):
    """`memrepro ui` on the moved run's store; yields the address it prints."""
    port = free_port("127.0.0.1")
    command = [sys.executable, "-m", "memrepro.cli", "ui", "results/smoke", "--port", str(port)]
    log = moved / "ui.log"
    with serving(command, log, f"http://127.0.0.1:{port}", cwd=moved):
        deadline = time.monotonic() + 30  # it polls its server every 0.5 s, then prints
        while not (printed := re.findall(r"MLflow UI of results/smoke: (\S+)", log.read_text())):
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield printed[0]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium (apt-get install chromium): .ci/run installs it"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


def artifacts(address: str, run_id: str) -> list[str]:
    root = address.split("#")[0]
    url = f"{root}ajax-api/2.0/mlflow/artifacts/list?run_id={run_id}"
    with urllib.request.urlopen(url, timeout=30) as reply:
        return [entry["path"] for entry in json.load(reply).get("files", [])]


def follow(page, name: re.Pattern[str] | str, heading: str | None = None):
    """Open the run page's whole description, click its link named `name` (MLflow opens a
    description's links in a new tab) and return the new tab, once it shows the run's name
    (`heading`, else the link's), and the link's text."""
    page.get_by_text("Description", exact=True).first.wait_for()
    more = page.get_by_text("Show more", exact=True)
    if more.count():
        more.first.click()
    link = page.get_by_role("link", name=name, exact=isinstance(name, str)).first
    text = link.inner_text()
    with page.context.expect_page() as opened:
        link.click()
    run = opened.value
    run.get_by_role("heading", name=heading or text, exact=True).wait_for()
    return run, text


def see_metric_chart(page, title: re.Pattern[str]) -> None:
    """The run's Model metrics tab, filtered to `score.`, shows the score's chart; back to the
    overview (its description's links) after."""
    page.get_by_role("tab", name="Model metrics").click()
    page.get_by_placeholder("Search metric charts").fill("score.")
    page.get_by_text(title).first.wait_for()
    page.get_by_role("tab", name="Overview").click()


def see_item_trace(page) -> None:
    """The run's Traces tab lists its items; one item's trace shows its memory updates as
    spans, each named by its chunk; back to the overview after."""
    page.get_by_role("tab", name=re.compile("Traces")).click()
    page.get_by_text(re.compile(r"^tr-[0-9a-f]+$")).first.click()
    page.get_by_text(re.compile(r"^memory update \(chunk \d+\)$")).first.wait_for()
    page.get_by_text("Inputs / Outputs", exact=True).first.wait_for()  # the item's question
    page.keyboard.press("Escape")
    page.get_by_role("tab", name="Overview").click()


def test_the_ui_leads_from_table3_to_the_base_model_by_the_descriptions_links(ui, browser):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(ui)
    # the runs, not MLflow's GenAI overview: the pipeline's run, named by run, time, targets
    runs = page.get_by_role("link", name=re.compile(r"^smoke \d\d-\d\d \d\d:\d\d (table3|all)$"))
    runs.first.click()
    page.get_by_text(re.compile(r"^Run smoke: FINISHED; \d+ jobs")).wait_for()
    page, _ = follow(page, "table3", heading="make_table table3")
    run_id = page.url.split("/runs/", 1)[1].split("?")[0]
    assert {"table3.md", "table3.csv", "provenance.json"} <= set(artifacts(ui, run_id))
    followed = []
    for step in CHAIN:
        page, name = follow(page, re.compile(step))
        followed.append(name)
        if step == CHAIN[0]:  # an evaluation: its score's chart, and its items' traces
            see_metric_chart(page, re.compile(r"^score\.\w+$"))
            see_item_trace(page)
        if step == CHAIN[1]:  # a training: the checkpoint it wrote, a logged model, and its data
            page.get_by_text("rl-memagent-tiny stage2", exact=True).first.wait_for()
            page.get_by_text("data/stage2/train.jsonl", exact=False).first.wait_for()
    assert followed[-1] == "download_model tiny-instruct", followed
    page.get_by_text("models/tiny-instruct", exact=True).first.wait_for()  # what it wrote
