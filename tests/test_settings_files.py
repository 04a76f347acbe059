"""Job settings passed by reference (`--settings @FILE`)."""

from __future__ import annotations

import pytest

from memrl.settings_files import read_settings, settings_reference


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
