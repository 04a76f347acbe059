from collections import Counter

import pytest

from memrepro.engines.base import Completion, SamplingParams
from memrepro.train.filter import NO_CONTEXT_PROMPT, filter_flags, filter_questions

ROWS = [
    {"index": 0, "input": "Which river flows through Quillane?", "answers": ["River Sarn"]},
    {"index": 1, "input": "Where was Ilse Marrow born?", "answers": ["Halvick"]},
    {"index": 2, "input": "When was Jory Callum born?", "answers": ["1954"]},
    {"index": 3, "input": "Are Halvick and Caddow in one region?", "answers": ["yes"]},
    {"index": 4, "input": "Where was Aldous Penhallow born?", "answers": ["Ferrow"]},
    {"index": 5, "input": "Where was Corra Vantley born?", "answers": ["Quillane"]},
    {"index": 6, "input": "When was Greywater chartered?", "answers": ["1699"]},
]
FAILED = Completion(text="", error="timeout")


class ScriptedEngine:
    """Answers (question, sample number) from a script; anything else gets a clueless reply."""

    tokenizer = None

    def __init__(self, script, extra=0):
        self.script = script
        self.extra = extra
        self.calls = []

    def chat(self, requests, sampling):
        self.calls.append((list(requests), sampling))
        seen = Counter()
        out = []
        for request in requests:
            question = request.messages[0]["content"].split("\n")[0]
            reply = self.script.get((question, seen[question]), "I am not sure.")
            seen[question] += 1
            out.append(reply if isinstance(reply, Completion) else Completion(text=reply))
        return out + [Completion(text="")] * self.extra


def make_engines():
    base = ScriptedEngine(
        {
            # boxed only: strict match after space removal, but no substring "river sarn"
            (ROWS[0]["input"], 0): "Probably \\boxed{RiverSarn}",
            (ROWS[2]["input"], 1): "\\boxed{1960}",
            (ROWS[3]["input"], 0): FAILED,
            (ROWS[3]["input"], 1): Completion(text="yes \\boxed{yes}", error="cut off"),
            (ROWS[4]["input"], 1): "The answer is \\boxed{Ferrow}.",
        }
    )
    instruct = ScriptedEngine(
        {
            # contains only, in the second sample
            (ROWS[1]["input"], 1): "I believe she was born in halvick.",
            (ROWS[3]["input"], 0): "\\boxed{no}",
            (ROWS[4]["input"], 0): "ferrow, a market town",
        }
    )
    return {"base": base, "instruct": instruct}


def test_filter_drops_answerable_rows_and_reports():
    engines = make_engines()
    kept, report = filter_questions(ROWS, engines)
    assert [r["index"] for r in kept] == [2, 3, 5, 6]
    assert kept[0] is ROWS[2]
    assert report == {
        "n_in": 7,
        "n_kept": 4,
        "n_dropped": 3,
        "n_survivors": 4,
        "dropped_by": {
            "base/boxed": 2,
            "base/contains": 1,
            "instruct/boxed": 0,
            "instruct/contains": 2,
        },
        "n_failed_requests": 2,
        "kept_limit": None,
        "verifier": "official",  # the boxed criterion's verifier, recorded in the report
    }


def test_one_batched_call_per_engine_with_repeated_requests():
    engines = make_engines()
    sampling = SamplingParams(temperature=0.9, top_p=0.5, seed=3)
    filter_questions(ROWS, engines, n_samples=3, sampling=sampling, max_tokens=64)
    for engine in engines.values():
        assert len(engine.calls) == 1
        requests, used = engine.calls[0]
        assert used == sampling
        assert len(requests) == 3 * len(ROWS)
        for r, row in enumerate(ROWS):
            group = requests[3 * r : 3 * r + 3]
            assert group[0] == group[1] == group[2]
            assert group[0].max_tokens == 64
            assert group[0].messages == (
                {"role": "user", "content": f"{row['input']}\nYour final answer in \\boxed{{}}."},
            )


def test_defaults_follow_the_official_filter():
    engines = make_engines()
    filter_questions(ROWS[:1], engines)
    requests, sampling = engines["base"].calls[0]
    assert (sampling.temperature, sampling.top_p) == (1.0, 0.7)
    assert len(requests) == 2 and requests[0].max_tokens == 512
    assert NO_CONTEXT_PROMPT.format(question="Q?") == "Q?\nYour final answer in \\boxed{}."


def test_samples_beyond_n_are_not_looked_at():
    # With one sample, the second-sample hits of the script no longer count.
    kept, report = filter_questions(ROWS, make_engines(), n_samples=1)
    assert [r["index"] for r in kept] == [1, 2, 3, 5, 6]
    assert report["dropped_by"]["instruct/contains"] == 1
    assert report["n_failed_requests"] == 1


def test_keep_cuts_survivors_to_the_head():
    kept, report = filter_questions(ROWS, make_engines(), keep=2)
    assert [r["index"] for r in kept] == [2, 3]
    assert (report["n_kept"], report["n_survivors"], report["kept_limit"]) == (2, 4, 2)


def test_no_engines_keeps_everything():
    kept, report = filter_questions(ROWS, {})
    assert kept == ROWS and report["n_dropped"] == 0 and report["dropped_by"] == {}


def test_engine_returning_wrong_count_fails():
    with pytest.raises(RuntimeError, match="'bad' returned 15 completions for 14 requests"):
        filter_questions(ROWS, {"bad": ScriptedEngine({}, extra=1)})


# --- the boxed criterion's verifier: official by default, extended on request ---

LENIENT_ONLY = [
    # each is a boxed hit for the extended verifier only; none contains its gold as a substring
    ({"index": 10, "input": "What share voted yes?", "answers": ["50"]}, "\\boxed{5 0%}"),
    ({"index": 11, "input": "Who founded Ashby?", "answers": ["Tam Rook"]}, "\\fbox{TamRook}"),
    ({"index": 12, "input": "How many halves?", "answers": ["0.5"]}, "\\boxed{\\frac12}"),
]


def lenient_engine():
    return {"m": ScriptedEngine({(row["input"], 0): text for row, text in LENIENT_ONLY})}


def test_the_filter_uses_the_official_verifier_by_default():
    rows = [row for row, _ in LENIENT_ONLY]
    kept, report = filter_questions(rows, lenient_engine(), n_samples=1)
    assert kept == rows and report["verifier"] == "official"
    assert report["dropped_by"] == {"m/boxed": 0, "m/contains": 0}
    kept, report = filter_questions(rows, lenient_engine(), n_samples=1, verifier="extended")
    assert kept == [] and report["dropped_by"] == {"m/boxed": 3, "m/contains": 0}


def test_filter_flags():
    official, extended = filter_flags(), filter_flags("extended")
    assert official["boxed"]("\\boxed{50%}", ["50"]) == 0.0
    assert extended["boxed"]("\\boxed{50%}", ["50"]) == 1.0
    assert official["contains"] is extended["contains"]
    with pytest.raises(ValueError, match="unknown verifier 'strict'"):
        filter_questions(ROWS, {}, verifier="strict")


def test_the_dropped_share_and_lengths_are_set_beside_appendix_a3():
    from memrepro.train.filter import against_appendix

    rows = [{"num_tokens": 27_000}, {"num_tokens": 29_000}]
    near = against_appendix({"n_in": 100, "n_dropped": 55}, rows)
    assert near["dropped_share_holds"] and near["mean_tokens"] == 28_000
    assert near["tokens_vs_paper"] == {"200 articles": 0.0, "stage I": 28_000 / 32_000 - 1}
    far = against_appendix({"n_in": 100, "n_dropped": 10}, [])
    assert far["dropped_share_holds"] is False and far["mean_tokens"] is None
    assert against_appendix({"n_in": 0, "n_dropped": 0}, rows)["dropped_share_holds"] is None
