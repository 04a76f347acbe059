"""`memrepro verify` on runs it cannot check: one sentence naming the file, rc 1. The smoke run's
own check and its tamperings are in tests/test_workflow.py (they need the run)."""

from __future__ import annotations

import pytest

from memrepro import verify
from memrepro.verify import bundle
from memrepro.verify import reports as verify_reports


def run_verify(path) -> str:
    with pytest.raises(SystemExit) as done:
        verify.main([str(path)])
    return str(done.value.code)


def test_a_directory_without_job_records_is_not_a_run(tmp_path):
    assert (
        run_verify(tmp_path)
        == f"memrepro verify: {tmp_path}: not a results directory (no logs/ with job records)"
    )


def test_a_metrics_file_needs_its_predictions_and_a_job_that_wrote_it(tmp_path):
    (tmp_path / "logs").mkdir()
    metrics = tmp_path / "eval/ruler/sys/1024.metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text("[]")
    assert run_verify(tmp_path).endswith(
        "1024.metrics.json: no predictions file beside it (1024.predictions.jsonl)"
    )
    (tmp_path / "eval/ruler/sys/1024.predictions.jsonl").write_text('{"task": "t", "index": 0}\n')
    assert run_verify(tmp_path).endswith("1024.metrics.json: no finished job of this run wrote it")


@pytest.mark.parametrize(
    ("held", "derived", "same"),
    [
        (0.1 + 0.2, 0.3, True),  # rounding in the last places
        (1.0, 1, False),  # a float turned int is a change of type
        ({"a": [1.0, 2.0]}, {"a": [1.0, 2.0]}, True),
        ({"a": 1.0}, {"a": 1.0, "b": 2.0}, False),
        ([0.5], [0.5, 0.5], False),
    ],
)
def test_numbers_are_the_same_up_to_rounding_and_type(held, derived, same):
    assert verify.same_number(held, derived) is same


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_a_table_cell_apart_is_named_by_its_line_row_and_column(tmp_path):
    header = "system,label,ours,verdict\n"
    held = write(tmp_path / "held.csv", header + "Agent,50,41.0,agrees\nOracle,50,90.0,agrees\n")
    again = write(tmp_path / "again.csv", header + "Agent,50,41.0,agrees\nOracle,50,88.0,agrees\n")
    [apart] = verify_reports.csv_differences(held, again)
    assert str(apart) == f"{held}:3 (Oracle, 50) ours: the run holds '90.0', its files give '88.0'"
    fewer = write(tmp_path / "fewer.csv", header + "Agent,50,41.0,agrees\n")
    assert [d.where for d in verify_reports.csv_differences(held, fewer)] == [f"{held} (rows)"]
    assert list(verify_reports.csv_differences(held, held)) == []


def test_a_page_differs_by_its_lines_but_not_by_the_footnote_naming_the_invocation(tmp_path):
    held = write(tmp_path / "held.md", "| a |\nMade by commit 1, invocation x\nnote\n")
    same = write(tmp_path / "same.md", "| a |\nMade by commit 2, invocation y\nnote\n")
    other = write(tmp_path / "other.md", "| a |\nMade by commit 2\nanother note\n")
    assert list(verify_reports.text_differences(held, same)) == []
    [apart] = verify_reports.text_differences(held, other)
    assert apart.where.endswith("line 2 (footnote apart)") and apart.held == "note"


def test_a_claim_apart_is_named_by_its_number_and_field(tmp_path):
    held = write(tmp_path / "c.claims.json", '[{"claim_id": "rl_helps", "holds": true}]')
    [apart] = verify_reports.claims_differences(held, [{"claim_id": "rl_helps", "holds": False}])
    assert apart.where == f"{held}: claim 0 (rl_helps) holds" and apart.derived is False
    [count] = verify_reports.claims_differences(held, [])
    assert (count.held, count.derived) == (1, 0)


def instance_line(**changes):
    line = {
        "task": "longmemeval_s*",
        "index": 0,
        "n_questions": 2,
        "questions": ["When?", "Where?"],
        "answers": ["May", "Rome"],
        "responses": ["in May", "Paris"],
        "judge_replies": {"0": "Yes.", "1": "No."},
        "protocol": "agent",
        "scores": [1.0, 0.0],
        "score": 0.5,
        "failed": False,
        "failed_questions": 0,
        "question_errors": {},
    }
    return line | changes


def test_an_instance_is_scored_again_question_by_question_from_its_own_line():
    assert verify.scored_again({}, instance_line()) == {"scores": [1.0, 0.0], "score": 0.5}
    # a verdict swapped against the judge's reply is what the reply does not give
    swapped = instance_line(scores=[0.0, 1.0])
    assert verify.scored_again({}, swapped)["scores"] == [1.0, 0.0]
    # an unjudged source under its protocol; a question whose request failed scores 0
    squad = instance_line(task="squad", responses=["May", "Rome"], judge_replies={})
    assert verify.scored_again({}, squad)["scores"] == [1.0, 1.0]
    lost = squad | {"failed": True, "failed_questions": 1, "question_errors": {"1": "timeout"}}
    assert verify.scored_again({}, lost)["scores"] == [1.0, 0.0]
    # one's own data: the dataset's metric, which the line names
    own = squad | {"task": "minutes", "metric": "em", "answers": [["May"], ["Rome"]]}
    own |= {"responses": ["may", "in Rome"]}
    assert verify.scored_again({}, own)["scores"] == [1.0, 0.0]  # exact match, normalised


def pem_key(tmp_path, key, name):
    from cryptography.hazmat.primitives import serialization

    path = tmp_path / name
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public = tmp_path / f"{name}.pub"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return path, public


def test_a_signature_holds_for_its_bytes_and_its_key_only(tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key, public = pem_key(tmp_path, Ed25519PrivateKey.generate(), "a.pem")
    _, stranger = pem_key(tmp_path, Ed25519PrivateKey.generate(), "b.pem")
    signature = bundle.sign(b'{"files": {}}', key)
    assert bundle.signature_holds(b'{"files": {}}', signature, public)
    assert not bundle.signature_holds(b'{"files": {"x": 1}}', signature, public)
    assert not bundle.signature_holds(b'{"files": {}}', signature, stranger)
    assert not bundle.signature_holds(b'{"files": {}}', b"not base64!", public)


def test_a_key_that_is_not_an_ed25519_pem_is_named(tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key

    other, _ = pem_key(tmp_path, generate_private_key(SECP256R1()), "ec.pem")
    with pytest.raises(bundle.BundleError, match=r"ec\.pem: not an ed25519 key"):
        bundle.sign(b"x", other)
    text = write(tmp_path / "text.pem", "a key, I promise\n")
    with pytest.raises(bundle.BundleError, match=r"text\.pem: not a PEM private key"):
        bundle.sign(b"x", text)


def test_bundle_refuses_a_directory_that_is_not_a_run(tmp_path):
    with pytest.raises(SystemExit) as done:
        bundle.main([str(tmp_path), str(tmp_path / "out.tar.gz")])
    assert "not a results directory (no logs/ with job records)" in str(done.value.code)
    (tmp_path / "logs").mkdir()
    with pytest.raises(SystemExit) as done:
        bundle.main([str(tmp_path), str(tmp_path / "out.tar.gz")])
    assert "no job records under logs/: not a run" in str(done.value.code)
    assert not (tmp_path / "out.tar.gz").exists()


@pytest.mark.parametrize("text", ["[]", '{"files": []}', '{"files": {}}'])
def test_a_damaged_bundle_manifest_is_named(tmp_path, text):
    run = tmp_path / "results/smoke"
    (run / "logs").mkdir(parents=True)
    write(tmp_path / "bundle.json", text)
    assert run_verify(run).endswith(
        "bundle.json: not a bundle manifest (an object with 'files', 'referenced')"
    )
