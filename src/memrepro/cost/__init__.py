"""`memrepro cost`: what a target costs before it runs, and after a run what it used.

The modules, each importing only those listed before it:

- `plan`: the config files and Snakemake dry run of the arguments, and the jobs it prints.
- `responses`: the mean response length a training stage measured (`--lengths`).
- `pricing`: what pricing reads once per plan (`Pricing`): config, systems, models' shapes, the
  measured FLOP rate, the paper's sizes of Mem-α's instances.
- `work`: what an inference job computes: its engine calls per question or instance, their FLOPs.
- `training`: what a training job computes: the FLOPs of verl's passes over its rollouts.
- `gpu`: GPU work priced: the estimate (FLOPs at the measured prefill rate) and the allocation.
- `api`: a hosted model's calls, tokens and dollars.
- `storage`: downloads and checkpoints, in GB.
- `price`: one job's price, those parts put together.
- `report`: the prices per rule as text, Markdown or JSON rows.
- `actual`: what a finished run used beside the estimate (`--actual`).
- `command`: the command (`memrepro cost`, `python -m memrepro.cost`).
"""
