"""Provenance: each job appends a small record next to its log; one local step loads the records
into MLflow (one parent run per Snakemake invocation, one child run per job).

Jobs never import MLflow: importing it and opening its store costs seconds per job, and hundreds of
SLURM jobs must not write one SQLite file on a network disk. The modules, each importing only
those listed before it:

- `store`: where the MLflow store is (a URI made absolute, the store a moved results directory
  holds) and its `memrepro` experiment, with artifact locations relative to the store's folder.
- `invocation`: the Snakemake invocation (`start_invocation` in `onstart`, `end_invocation` in
  `onsuccess`/`onerror`), what it exports to its jobs, the git state and `made_by` footnotes.
- `record`: one job's record (`job_run`, `JobRecord`), written line by line and read back.
- `results_dir`: every record under a results directory, rebased onto where it lies now, and
  which record produced which content (`memrepro lineage`, `memrepro cost`).
- `runs`: how records are laid out as MLflow runs (names, tags, params, metrics, artifacts).
- `loader`: `load`, idempotent and serialised, which creates the runs not yet in MLflow;
  `python -m memrepro.tracking results/<run>` runs it by hand.

Set MEMREPRO_TRACKING=off to disable it entirely.
"""
