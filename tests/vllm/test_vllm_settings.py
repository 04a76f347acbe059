"""The smoke run's tiny model and the long-context baselines' RoPE settings on real vLLM."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ask

from memrepro.baselines.longcontext import rope_engine_settings
from memrepro.engines.base import SamplingParams, prompt_ids
from memrepro.engines.vllm import VLLMEngine
from memrepro.models import TINY_CONTEXT

SAMPLING = SamplingParams(temperature=0.7, top_p=0.95, seed=0)


def run_tiny(model: Path, **settings: object) -> tuple[VLLMEngine, list]:
    engine = VLLMEngine(str(model), **settings)
    requests = [ask("The ferry leaves at dawn.", 8), ask("Where is the ferry?", 8)]
    done = engine.chat(requests, SAMPLING)
    for request, completion in zip(requests, done, strict=True):
        assert not completion.failed, completion.error
        assert completion.prompt_ids == prompt_ids(engine.tokenizer, request)
        assert 1 <= len(completion.response_ids) <= 8
    return engine, done


# Not a line more: importing torch (or anything that imports multiprocessing) before the
# TemporaryDirectory would hide the hang this script once had.
SCRIPT_WITHOUT_CLOSE = """
import sys
import tempfile

from memrepro.engines.vllm import VLLMEngine

if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        engine = VLLMEngine(sys.argv[1])
        print(engine.max_model_len)
"""


def test_the_tiny_model_runs_on_the_cpu_backend_in_a_script_that_exits(
    tiny: Path, tmp_path: Path
) -> None:
    """A script that never closes its engine still exits, even with a weakref finalizer (here a
    TemporaryDirectory's) older than vLLM's import, which used to make the exit wait forever
    for vLLM's engine-core process."""
    config = json.loads((tiny / "config.json").read_text())
    assert config["hidden_size"] // config["num_attention_heads"] >= 32  # CPU attention's minimum
    script = tmp_path / "script.py"
    script.write_text(SCRIPT_WITHOUT_CLOSE)
    done = subprocess.run(
        [sys.executable, str(script), str(tiny)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [str(TINY_CONTEXT)]
    assert done.stdout.split() == [str(TINY_CONTEXT)]


def test_static_yarn_extends_the_window_through_hf_overrides(tiny: Path) -> None:
    setup = rope_engine_settings(
        "yarn", max_model_len=4 * TINY_CONTEXT, original_max_position_embeddings=TINY_CONTEXT
    )
    engine, _ = run_tiny(tiny, **setup.settings)
    assert engine.max_model_len == 4 * TINY_CONTEXT
    rope = engine.llm.llm_engine.model_config.hf_config.rope_parameters
    assert (rope["rope_type"], rope["factor"]) == ("yarn", 4.0)
    engine.close()


def test_no_dca_drops_the_dual_chunk_config_in_the_engine_process(
    tiny: Path, tmp_path: Path
) -> None:
    """A Qwen2.5-1M-style config.json (dual_chunk_attention_config) loads once the pickled
    DropConfigKeys override removed it."""
    model = tmp_path / "tiny-1m"
    model.mkdir()
    for path in tiny.iterdir():
        (model / path.name).write_bytes(path.read_bytes())
    config = json.loads((model / "config.json").read_text())
    config["dual_chunk_attention_config"] = {"chunk_size": 1024, "local_size": 128}
    (model / "config.json").write_text(json.dumps(config))
    setup = rope_engine_settings("no_dca", max_model_len=TINY_CONTEXT)
    engine, _ = run_tiny(model, **setup.settings)
    hf_config = engine.llm.llm_engine.model_config.hf_config
    assert not hasattr(hf_config, "dual_chunk_attention_config")
    engine.close()
