"""A fix for the SLURM executor plugin (snakemake-executor-plugin-slurm 2.8.0, the latest), applied
by the workflow (workflow/rules/common.smk) in the main Snakemake process.

The plugin reads job states from `sacct -X --parsable2 --format=JobIdRaw,State` and compares them
with single words ("FAILED", "CANCELLED", ...). sacct reports a job killed with scancel as
"CANCELLED by <uid>", which matches none, so the plugin took the job for a running one and
Snakemake waited for it forever (found by tests/cluster/test_slurm.py on a real cluster). Here the
plugin's status query is wrapped so that every state is its first word, which is what it expects.
"""

from __future__ import annotations

import importlib

PLUGIN = "snakemake_executor_plugin_slurm"


def job_state(state: str) -> str:
    """sacct's job state without the detail it may carry: 'CANCELLED by 1000' -> 'CANCELLED'."""
    return state.split(" ", 1)[0]


def report_cancelled_jobs() -> bool:
    """Wrap the plugin's status query (once); False where the plugin is not installed."""
    try:
        plugin = importlib.import_module(PLUGIN)
    except ImportError:
        return False
    query = plugin.query_job_status
    if getattr(query, "memrepro_job_state", False):
        return True

    async def query_job_status(command, logger):
        states, seconds = await query(command, logger)
        if states is not None:
            states = {job: job_state(state) for job, state in states.items()}
        return states, seconds

    query_job_status.memrepro_job_state = True
    plugin.query_job_status = query_job_status
    return True
