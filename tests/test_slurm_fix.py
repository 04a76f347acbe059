"""memrepro.slurm: the SLURM executor plugin sees a job killed with scancel as CANCELLED. The
plugin's own status parser runs on sacct's real output format (printf stands in for sacct, which
needs a cluster; tests/cluster/test_slurm.py scancels a job on a real one)."""

from __future__ import annotations

import asyncio
import importlib
import logging

import pytest

from memrepro import slurm

SACCT = "printf '19|CANCELLED by 0\\n20|COMPLETED\\n21|OUT_OF_MEMORY\\n'"


@pytest.fixture
def plugin():
    plugin = importlib.import_module(slurm.PLUGIN)
    original = plugin.query_job_status
    yield plugin
    plugin.query_job_status = original


def states(plugin) -> dict[str, str]:
    found, _ = asyncio.run(plugin.query_job_status(SACCT, logging.getLogger("test")))
    return found


def test_the_plugin_alone_misreads_a_cancelled_job(plugin):
    # if this fails, the plugin reads "CANCELLED by <uid>" itself and memrepro.slurm can go
    assert states(plugin)["19"] == "CANCELLED by 0"


def test_with_the_fix_every_state_is_one_word(plugin):
    assert slurm.report_cancelled_jobs()
    wrapped = plugin.query_job_status
    assert slurm.report_cancelled_jobs() and plugin.query_job_status is wrapped  # wrapped once
    assert states(plugin) == {"19": "CANCELLED", "20": "COMPLETED", "21": "OUT_OF_MEMORY"}
