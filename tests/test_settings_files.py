"""Job settings passed by reference (`--settings @FILE`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrepro.settings_files import read_settings, settings_reference


def test_the_same_settings_give_the_same_file_and_other_settings_another(tmp_path):
    first = settings_reference({"b": 1, "a": [2, 3]}, tmp_path)
    assert first.startswith("@") and first == settings_reference({"a": [2, 3], "b": 1}, tmp_path)
    changed = settings_reference({"a": [2, 3], "b": 2}, tmp_path)
    assert changed != first  # another param: Snakemake reruns the job
    assert read_settings(first) == {"a": [2, 3], "b": 1}
    assert len(list(tmp_path.iterdir())) == 2  # no temporary file left


def test_settings_are_read_from_json_or_a_file_and_errors_name_it(tmp_path):
    assert read_settings('{"x": 1}') == {"x": 1}
    with pytest.raises(ValueError, match=r"settings file .*missing\.json: No such file"):
        read_settings(f"@{tmp_path / 'missing.json'}")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match=r"settings file .*bad\.json: not valid JSON"):
        read_settings(f"@{bad}")


def test_a_file_changed_after_planning_is_refused_by_its_job_and_rewritten_by_planning(tmp_path):
    settings = {"eval_questions": 8, "seed": 0, "shards": {20: 2, 100: 4}}  # int keys, as YAML
    reference = settings_reference(settings, tmp_path)
    path = Path(reference[1:])
    original = path.read_text()
    said: list[str] = []
    for damage in (
        original.replace("8", "3"),  # edited: valid JSON, other settings
        original[:10],  # cut short
        b"\xff\xfe".decode("latin-1"),  # not UTF-8 once written as latin-1
    ):
        path.write_bytes(damage.encode("latin-1"))
        with pytest.raises(ValueError, match=rf"settings file {path}: .*run the pipeline again"):
            read_settings(reference)
        assert settings_reference(settings, tmp_path, say=said.append) == reference
        assert path.read_text() == original
        assert read_settings(reference) == json.loads(json.dumps(settings))  # keys as JSON has them
    rewritten = (
        f"memrepro: {path} did not hold the settings its name stands for: rewritten from the"
    )
    assert said == [f"{rewritten} config"] * 3
    assert settings_reference(settings, tmp_path, say=said.append) == reference
    assert len(said) == 3  # an intact file is left alone, silently
    own = tmp_path / "mine.json"  # a file a person wrote, not named by a digest: taken as it is
    own.write_text('{"seed": 1}')
    assert read_settings(f"@{own}") == {"seed": 1}
