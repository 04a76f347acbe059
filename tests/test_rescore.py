"""Scores without regenerating: a finished evaluation's predictions scored again (a gold anywhere
in the reply, another Mem-α protocol, a second judge), the scorers table that sets them beside the
benchmark's own, and the judges' leniency probe."""

from __future__ import annotations

import copy
import json

import pytest
from memalpha_fakes import Replying

from memrepro import config as cfg
from memrepro.engines.base import Completion
from memrepro.jobs.rescore import judge_of, judge_replies
from memrepro.report.scorers import build_scorers_table, cell_text, load_scored
from memrepro.scoring import leniency
from memrepro.scoring.memalpha import JUDGE_TEMPLATE
from memrepro.scoring.metrics import score_answer_is
from memrepro.scoring.rescore import (
    disagreements,
    rescore_instances,
    rescore_rows,
    whole_reply,
)

JUDGE_PREFIX = JUDGE_TEMPLATE.split("{}")[0]
SAMPLING = {"temperature": 0.0, "top_p": 1.0, "seed": 0}


def row(index, response, answers=("Paris",), failed=False):
    scored = score_answer_is(response, answers[0])
    return {
        "task": "hqa",
        "index": index,
        "input": "Where?",
        "answers": list(answers),
        "response": response,
        "failed": failed,
        "n_calls": 1,
        "score": 0.0 if failed else scored["sub_em"],
        **{k: v for k, v in scored.items() if k != "pred"},
    }


def test_the_whole_reply_reads_an_answer_the_official_extraction_misses():
    assert score_answer_is("It is Paris.", "Paris")["sub_em"] == 0.0  # no "the answer is"
    assert whole_reply("It is Paris.", ["Paris"]) == 1.0
    assert whole_reply("<think>Paris?</think> Lyon", ["Paris"]) == 0.0  # the draft is not read
    assert (
        whole_reply("anything", ["", "the"]) == 0.0
    )  # a gold that normalises to "" matches nothing


def test_rescored_rows_replace_the_score_drop_the_other_metrics_and_keep_failures():
    lines = [row(0, "It is Paris."), row(1, "So the answer is Paris."), row(2, "", failed=True)]
    out = rescore_rows(lines)
    assert [r["score"] for r in out] == [1.0, 1.0, 0.0]
    assert all("sub_em" not in r and "f1" not in r for r in out)
    assert out[2]["failed"] and out[0]["response"] == "It is Paris."
    assert disagreements({str(i): r for i, r in enumerate(out)}, dict(enumerate(lines))) == (0, 0)
    by_key = {str(i): r for i, r in enumerate(lines)}
    assert disagreements({str(i): r for i, r in enumerate(out)}, by_key) == (1, 3)


def instance(task, answers, responses, scores, **kw):
    n = len(answers)
    return {
        "task": task,
        "index": kw.pop("index", 0),
        "n_questions": n,
        "questions": [f"q{j}" for j in range(n)],
        "answers": answers,
        "responses": responses,
        "judge_replies": kw.pop("judge_replies", {}),
        "protocol": kw.pop("protocol", "agent"),
        "scores": scores,
        "score": sum(scores) / n,
        "failed": False,
        "failed_questions": 0,
        "question_errors": {},
        "n_calls": n,
        **kw,
    }


def test_another_protocol_rescores_the_labels_and_keeps_the_judged_verdicts():
    labels = instance("icl_trec_coarse_6600shot_balance", ["2", "3"], ["Label: 2", "4"], [0.0, 0.0])
    judged = instance(
        "longmemeval_s", ["rubric"], ["an answer"], [1.0], index=1, judge_replies={"0": "Yes."}
    )
    [loose, kept] = rescore_instances([labels, judged], protocol="baseline")
    assert loose["scores"] == [1.0, 0.0] and loose["score"] == 0.5  # the first line holds "2"
    assert kept["scores"] == [1.0] and kept["protocol"] == "baseline"
    [strict] = rescore_instances([labels], protocol="agent")
    assert strict["scores"] == [0.0, 0.0]  # "Label: 2" is not all digits


def test_unanswered_questions_stay_at_zero_whatever_the_scorer():
    lost = instance("squad", ["Paris"], [""], [0.0], failed=True)  # its memorisation failed
    errored = instance(
        "squad", ["Paris", "Rome"], ["Paris", ""], [1.0, 0.0],
        failed=True, failed_questions=1, question_errors={"1": "timeout"},
    )  # fmt: skip
    [a, b] = rescore_instances([lost, errored], protocol="baseline")
    assert a["scores"] == [0.0] and b["scores"] == [1.0, 0.0]


def test_a_second_judge_sees_only_the_answered_judged_questions():
    judged = instance(
        "longmemeval_s", ["rubric a", "rubric b"], ["yes a", "b"], [0.0, 1.0],
        judge_replies={"0": "No.", "1": "Yes."},
    )  # fmt: skip
    other = instance("squad", ["Paris"], ["Paris"], [1.0], index=1)
    asked = []

    def judge(questions):
        asked.extend(questions)
        return ["Yes, it is.", "Not quite."]

    [rejudged, kept] = rescore_instances([judged, other], judge=judge)
    assert asked == [("q0", "rubric a", "yes a"), ("q1", "rubric b", "b")]
    assert rejudged["scores"] == [1.0, 0.0] and kept["scores"] == [1.0]
    assert rejudged["judge_replies"] == {"0": "Yes, it is.", "1": "Not quite."}
    assert disagreements({"x": rejudged}, {"x": judged}) == (2, 2)


def test_predictions_written_without_their_questions_say_how_to_rescore_them():
    old = instance("squad", ["Paris"], ["Paris"], [1.0])
    del old["questions"]
    with pytest.raises(ValueError, match=r"has no questions: .* evaluate again to rescore it"):
        rescore_instances([old], protocol="baseline")


def test_a_judge_that_fails_a_request_fails_the_job_never_a_verdict():
    class HalfDown(Replying):
        def chat(self, requests, sampling):
            return [Completion("yes"), Completion("", error="HTTP 500")]

    engine = HalfDown([])
    with pytest.raises(SystemExit, match="the judge failed 1 of 2 requests; the first: HTTP 500"):
        judge_replies(engine, ["a", "b"], judge_of({"sampling": SAMPLING, "max_tokens": 8}))


def test_the_leniency_probe_counts_the_wrong_answers_a_judge_accepts():
    asked = leniency.probe_prompts()
    kinds = [kind for kind, _ in asked]
    assert len(asked) == 2 * len(leniency.PROBE) and kinds.count("wrong") == len(leniency.PROBE)
    assert all(prompt.startswith(JUDGE_PREFIX) for _, prompt in asked)
    lenient = leniency.tally(kinds, ["Yes."] * len(kinds))
    assert lenient["wrong"]["accepted"] == lenient["right"]["accepted"] == len(leniency.PROBE)
    assert lenient["wrong"]["ci95"][0] > 70  # Wilson: 12 of 12 is above 75 % at 95 %
    # an exact judge: yes to the right answers only
    exact = leniency.tally(kinds, ["yes" if k == "right" else "no" for k in kinds])
    assert (exact["right"]["accepted"], exact["wrong"]["accepted"]) == (len(leniency.PROBE), 0)
    assert exact["replies"][1] == {"kind": "wrong", "reply": "no", "verdict": 0.0}
    with pytest.raises(ValueError, match="1 judge replies for 24 probe answers"):
        leniency.tally(kinds, ["yes"])


def test_each_vague_answer_recalls_nothing_the_right_one_states():
    for item in leniency.PROBE:
        assert whole_reply(item.wrong, [item.right.rstrip(".")]) == 0.0
        assert whole_reply(item.right, [item.right.rstrip(".")]) == 1.0


def lines_of(scores, task="hqa"):
    return {f"{task}#{i}": {"score": s} for i, s in enumerate(scores)}


SYSTEMS = [{"id": "agent", "display": "Agent", "kind": "memagent", "model": "m"}]


def scored(scorer, scores, length=50):
    lines = lines_of(scores)
    return {"system": "agent", "benchmark": "ruler_hqa", "length": length, "scorer": scorer} | {
        "lines": lines
    }


def test_a_cell_sets_the_rescored_score_beside_the_benchmarks_own_paired():
    own = scored("the benchmark's", [0.0] * 20 + [1.0] * 10)
    higher = scored("whole-reply", [1.0] * 20 + [1.0] * 10)
    text = cell_text(higher, own)
    assert text.startswith("100.0 vs 33.3: +66.7 [")
    assert text.endswith("20 of 30 answers scored differently (n 30): rescored higher")
    assert cell_text(own, own).endswith(
        "0 of 30 answers scored differently (n 30): the same scores"
    )
    few = scored("whole-reply", [1.0] + [0.0] * 4)
    assert cell_text(few, scored("x", [0.0] * 5)).endswith("(n 5): too few items")


def test_the_table_has_a_row_per_scorer_and_system_and_says_each_judges_leniency():
    probe = {
        "judge": "qwen3-32b",
        "wrong": {"n": 12, "accepted": 3, "ci95": [8.9, 53.2]},
        "right": {"n": 12, "accepted": 12, "ci95": [75.8, 100.0]},
    }
    records = [
        scored("the benchmark's", [0.0] * 12),
        scored("whole-reply", [1.0] * 12),
        {"probe": probe},
    ]
    scorers = {"whole-reply": {"kind": "whole_reply"}}
    frame = build_scorers_table(records, SYSTEMS, scorers)
    assert list(frame.index) == ["whole-reply: Agent"] and list(frame.columns) == ["ruler_hqa@50"]
    notes = frame.attrs["notes"]
    assert "whole-reply: a gold anywhere in the whole reply." in notes
    assert (
        "Judge qwen3-32b, leniency probe (vague-but-topical wrong answers, exact right ones): "
        "accepts 3 of 12 wrong answers (25 %, 95 % CI 9–53), and 12 of 12 right answers "
        "(100 %, 95 % CI 76–100)." in notes
    )
    with pytest.raises(ValueError, match="whole-reply: no evaluation of agent on ruler_hqa@20"):
        build_scorers_table([scored("whole-reply", [1.0], length=20)], SYSTEMS, scorers)


def test_records_are_read_from_each_predictions_file_with_its_scorer(tmp_path):
    for prefix, scorer in (("eval", None), ("rescore", "whole-reply")):
        metrics = {"system": "agent", "benchmark": "ruler_hqa", "length": 50}
        metrics |= {"scorer": scorer} if scorer else {}
        (tmp_path / f"{prefix}.metrics.json").write_text(json.dumps([metrics]))
        lines = [{"task": "hqa", "index": i, "score": 1.0} for i in range(2)]
        (tmp_path / f"{prefix}.predictions.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines)
        )
    (tmp_path / "judge.json").write_text(json.dumps({"judge": "j"}))
    paths = [tmp_path / n for n in ("eval.metrics.json", "eval.predictions.jsonl")]
    paths += [tmp_path / n for n in ("rescore.metrics.json", "rescore.predictions.jsonl")]
    records = load_scored([*paths, tmp_path / "judge.json"])
    assert [r.get("scorer") for r in records] == ["the benchmark's", "whole-reply", None]
    assert records[1]["lines"]["hqa#1"]["score"] == 1.0 and records[2] == {"probe": {"judge": "j"}}
    with pytest.raises(ValueError, match=r"its predictions .* are not among the inputs"):
        load_scored(paths[:1])


def test_the_smoke_plan_rescores_its_chosen_evaluations_and_probes_both_judges(repo):
    config = cfg.load_config([repo / "config/smoke.yaml"])
    jobs = cfg.rescore_jobs(config)
    assert sorted((j.scorer, j.evaluation.benchmark, j.evaluation.length) for j in jobs) == [
        ("baseline-protocol", "mab", 0),
        ("judge-tiny-base", "mab", 0),
        *(("whole-reply", "ruler_hqa", n) for n in (10, 20, 50)),
    ]
    probes = cfg.judge_probes(config)
    assert sorted(probes) == ["tiny-base", "tiny-instruct"]  # the second judge and the QA model
    qa = config["memalpha"]["qa"]
    assert probes["tiny-instruct"]["sampling"] == qa["judge_sampling"]
    assert probes["tiny-base"]["max_tokens"] == qa["judge_max_tokens"]  # unset: the QA judge's
    judge = cfg.rescore_settings(config, next(j for j in jobs if j.scorer == "judge-tiny-base"))
    assert judge["scorer"]["engine"]["kind"] == "hf" and judge["tasks"] == list(
        next(j for j in jobs if j.scorer == "judge-tiny-base").evaluation.tasks
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["judge-tiny-base"].update(model="gpt-9"),
            "rescore.judge-tiny-base.model: 'gpt-9' is not in models",
        ),
        (
            lambda r: r["whole-reply"].update(benchmarks=["mab"]),
            "rescore.whole-reply: a whole_reply scorer reads rows; mab's predictions are not",
        ),
        (
            lambda r: r["baseline-protocol"].pop("protocol"),
            "rescore.baseline-protocol: a memalpha_protocol scorer names its protocol",
        ),
        (
            lambda r: r["whole-reply"].update(systems=["nobody"]),
            "rescore.whole-reply.systems: not in evaluation.systems: nobody",
        ),
        (
            lambda r: r["whole-reply"].update(benchmarks=["ruler"], systems=["memalpha-tiny"]),
            "rescore.whole-reply: no evaluation of this config on ['ruler']",
        ),
        (lambda r: r["whole-reply"].update(scorer="vibes"), "'vibes' must be one of"),
    ],
)
def test_a_bad_scorer_names_its_key(repo, change, message):
    config = copy.deepcopy(cfg.load_yaml(repo / "config/smoke.yaml"))
    change(config["rescore"])
    with pytest.raises(cfg.ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        cfg.validate_config(config, cfg.SCHEMA)


def test_a_selection_narrows_each_scorers_systems_and_drops_one_left_with_none(repo):
    config = copy.deepcopy(cfg.load_yaml(repo / "config/smoke.yaml"))
    config["evaluation"]["select"] = {"systems": ["rl-memagent-tiny"]}
    cfg.validate_config(config, cfg.SCHEMA)
    assert sorted(config["rescore"]) == ["whole-reply"]
    assert [j.scorer for j in cfg.rescore_jobs(config)] == ["whole-reply"] * 3


def test_the_rescore_job_writes_predictions_and_metrics_that_derive_from_them(
    tmp_path, monkeypatch
):
    from memrepro import cli

    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    predictions = tmp_path / "eval.predictions.jsonl"
    lines = [row(i, text) for i, text in enumerate(["It is Paris.", "the answer is Paris", "Rome"])]
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    scorer = {"id": "whole-reply", "kind": "whole_reply"}
    settings = {"benchmark": "ruler_hqa", "system": "agent", "length": 50, "tasks": ["hqa"]}
    out, metrics = tmp_path / "r.predictions.jsonl", tmp_path / "r.metrics.json"
    argv = ["rescore", "--settings", json.dumps(settings | {"scorer": scorer})]
    argv += ["--predictions", str(predictions), "--out-predictions", str(out)]
    cli.main([*argv, "--metrics", str(metrics)])
    rescored = [json.loads(line) for line in out.read_text().splitlines()]
    [record] = json.loads(metrics.read_text())
    assert [r["score"] for r in rescored] == [1.0, 1.0, 0.0]
    assert record["scorer"] == "whole-reply" and record["n_items"] == 3
    assert record["accuracy"] == pytest.approx(100 * sum(r["score"] for r in rescored) / 3)
    with pytest.raises(SystemExit, match="--judge-model goes with"):
        cli.main([*argv, "--metrics", str(metrics), "--judge-model", str(tmp_path)])


def test_each_task_of_a_rescored_benchmark_is_a_column_of_its_own():
    """A judge that rejects half of one task's answers shows on that task, not on a pooled
    column that the other tasks dilute."""

    def two_tasks(scorer, first, second):
        record = scored(scorer, [])
        for task, scores in (("hotpotqa", first), ("musique", second)):
            for i, s in enumerate(scores):
                record["lines"][f"{task}#{i}"] = {
                    "task": task,
                    "index": i,
                    "score": s,
                    "scores": [s],
                }
        return record | {"benchmark": "longbench", "length": 0}

    own = two_tasks("the benchmark's", [1.0] * 20, [1.0] * 20)
    judge = two_tasks("judge", [1.0] * 10 + [0.0] * 10, [1.0] * 20)
    frame = build_scorers_table([own, judge], SYSTEMS, {"judge": {"kind": "whole_reply"}})
    assert list(frame.columns) == ["longbench: hotpotqa", "longbench: musique"]
    assert frame.loc["judge: Agent", "longbench: hotpotqa"].startswith("50.0 vs 100.0: -50.0 [")
    assert "the same scores" in frame.loc["judge: Agent", "longbench: musique"]
