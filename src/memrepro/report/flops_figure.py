"""MemAgent's Figure 10 drawn: the FLOPs each method needs by context length (memrepro.report.flops,
from the models' shapes), beside the cost our RULER-HQA evaluations measured (wall seconds
per sample from Snakemake's benchmark files)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from memrepro.config import FLOPS_FIGURE
from memrepro.report.cells import BENCHMARK
from memrepro.report.claims import ClaimCheck
from memrepro.report.plots import (
    plain_log_ticks,
    save,
)
from memrepro.report.records import records_of
from memrepro.report.registry import MEMAGENT, FigureInput, PaperFigure

on_hqa = records_of(BENCHMARK)  # Figure 10's measured cost: RULER-HQA's evaluations

FLOPS_METHODS = {"backbone": "long_context", "rl": "memagent"}  # role -> flops.predicted_flops

FLOPS_LABELS = {"backbone": "long-context model", "rl": "MemAgent"}


def model_shape(model_dir: str | Path) -> Any:
    """The Qwen2 shape in a model directory's config.json (the downloaded model's own)."""
    from memrepro.data.io import read_json
    from memrepro.report.flops import Qwen2Shape

    path = Path(model_dir) / "config.json"
    config = read_json(path)
    missing = [key for key in SHAPE_KEYS if key not in config]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)} (not a Qwen2-style config)")
    return Qwen2Shape.from_config(config)


SHAPE_KEYS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
)


def read_wall_seconds(paths: Sequence[str | Path]) -> float:
    """The wall time of one evaluation: the `s` column of Snakemake's benchmark file of each job
    that ran it (each shard), the mean of its repeats, summed over the jobs."""
    total = 0.0
    for path in paths:
        frame = pd.read_csv(path, sep="\t")
        if "s" not in frame.columns or frame.empty:
            raise ValueError(f"{path}: not a Snakemake benchmark file (no `s` column or row)")
        total += float(frame["s"].mean())
    return total


@dataclass(frozen=True)
class Measured:
    """One system's RULER-HQA jobs: mean context tokens and wall seconds per sample, by length."""

    tokens: list[float]
    seconds: list[float]


def measured_costs(
    records: Iterable[Mapping[str, Any]], flops: Mapping[str, Any]
) -> dict[str, dict[str, Measured]]:
    """Per group and role (backbone, rl) of `flops` (settings: `groups`, `benchmarks` by
    "system/length"), the jobs' wall seconds per sample against their mean context tokens."""
    by_key = {
        f"{r['system']}/{int(r['length'])}": r
        for r in records
        if on_hqa(r) and r["mean_tokens"] is not None and r["n_items"]
    }
    measured: dict[str, dict[str, Measured]] = {}
    for group, roles in flops["groups"].items():
        measured[group] = {}
        for role in FLOPS_METHODS:
            points = sorted(
                (float(record["mean_tokens"]), read_wall_seconds(paths) / record["n_items"])
                for key, paths in flops["benchmarks"].items()
                if key.split("/")[0] == roles[role] and (record := by_key.get(key)) is not None
            )
            measured[group][role] = Measured([t for t, _ in points], [w for _, w in points])
    return measured


def plot_flops(
    shapes: Mapping[str, Any],
    measured: Mapping[str, Mapping[str, Measured]],
    flops: Mapping[str, Any],
    out_prefix: str | Path,
    title: str,
) -> list[Path]:
    """Figure 10. (a) Appendix B: FLOPs of the long-context model and of MemAgent from 8K to 4M
    tokens per group's model shape, with the fitted exponent p (cost ~ n^p). (b) Beyond the
    paper: our RULER-HQA jobs' wall seconds per sample against their mean context tokens
    (solid), and the FLOPs predicted at those tokens scaled to the first point (dotted)."""
    from memrepro.report.flops import (
        FIGURE_LENGTHS,
        attention_coefficient,
        fitted_exponent,
        predicted_flops,
    )

    attention = flops["attention"]

    fig = Figure(figsize=(12.0, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    predicted_ax, measured_ax = fig.subplots(1, 2)
    notes = []
    for g, (group, shape) in enumerate(shapes.items()):
        spec = flops["groups"][group]
        for role, method in FLOPS_METHODS.items():
            colour, style = f"C{2 * g + (role == 'rl')}", "-" if role == "rl" else "--"
            costs = predicted_flops(
                shape, FIGURE_LENGTHS, method, flops["agent"], attention=attention
            )
            p = fitted_exponent(FIGURE_LENGTHS, costs)
            label = f"{FLOPS_LABELS[role]}, {group} (p = {p:.2f})"
            predicted_ax.plot(FIGURE_LENGTHS, costs, style, color=colour, marker="o", label=label)
            ours = measured.get(group, {}).get(role)
            if ours is None or not ours.tokens:
                notes.append(f"{group} {FLOPS_LABELS[role]}: no measured job")
                continue
            cap = spec["backbone_max_input"] if role == "backbone" else None
            at = predicted_flops(
                shape, ours.tokens, method, flops["agent"], cap, attention=attention
            )
            scaled = [c * ours.seconds[0] / at[0] for c in at]
            fit = (
                f"p = {fitted_exponent(ours.tokens, ours.seconds):.2f}"
                if len(ours.tokens) > 1
                else "one length"
            )
            label = f"{FLOPS_LABELS[role]}, {group} ({spec[role]}, {fit})"
            measured_ax.plot(
                ours.tokens, ours.seconds, style, color=colour, marker="o", label=label
            )
            measured_ax.plot(ours.tokens, scaled, ":", color=colour)
            if cap is not None:
                notes.append(f"{group} {FLOPS_LABELS[role]}: input truncated to {cap:,} tokens")
    agent = flops["agent"]
    source = "the paper's verl fork" if attention == "fork" else "verl 0.9.1"
    predicted_ax.set_title(
        f"(a) Predicted, verl's Qwen2 estimate (q = {agent['query_tokens']}, "
        f"N = {agent['chunk_tokens']}, o = {agent['final_tokens']};\n"
        f"attention {attention_coefficient(attention)}·n²·d per layer, as {source})",
        fontsize="medium",
    )
    predicted_ax.set_ylabel("FLOPs (forward + backward)")
    measured_ax.set_title(
        "(b) Measured: evaluation wall time (dotted: predicted, scaled)", fontsize="medium"
    )
    measured_ax.set_ylabel("Wall seconds per sample")
    for ax in (predicted_ax, measured_ax):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Context length (tokens, log scale)")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small", loc="upper left")
    plain_log_ticks(measured_ax)
    fig.suptitle(title)
    if notes:
        fig.supxlabel("\n".join(notes), x=0.0, ha="left", fontsize="x-small")
    return save(fig, out_prefix)


def _figure10(f: FigureInput, out: str | Path, title: str, checks: Sequence[ClaimCheck]):
    if f.flops is None:
        raise ValueError("figure10 needs its settings (flops): agent, groups, models")
    shapes = {group: model_shape(path) for group, path in f.flops["models"].items()}
    return plot_flops(shapes, measured_costs(f.records, f.flops), f.flops, out, title)


FLOPS_FIGURES = {FLOPS_FIGURE: PaperFigure(_figure10, MEMAGENT)}
