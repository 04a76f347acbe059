"""Training curves of either paper's runs: per step, MemAgent's reward, KL and clip fraction;
Mem-α's reward terms, KL and memory size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from memrepro.data.io import iter_jsonl
from memrepro.report.plots import number, save

TRAIN_METRICS_FILE = "train_metrics.jsonl"  # what a trainer writes into its output directory
# The training curve's panels: (metrics key, y label); each file must have these keys.
CURVE_PANELS = (
    ("reward_mean", "Reward (mean)"),
    ("kl", "KL to reference"),
    ("pg_clipfrac", "Clip fraction"),
)


CLIPFRAC_LOWER = "pg_clipfrac_lower"  # drawn dotted in the clip-fraction panel when present
VAL_REWARD = "val_reward"  # a validated step's score, drawn as squares in the first panel
VAL_LEGEND = "validation: the training verifier on held-out rows"
MEMALPHA_CURVE_PANELS = (  # Mem-α's GRPO: each reward term, KL, the memory's size
    ("r1_mean", "r1: QA correctness"),
    ("r2_mean", "r2: tool-call success"),
    ("r3_mean", "r3: compression"),
    ("r4_mean", "r4: content validity"),
    ("kl", "KL to reference"),
    ("memory_tokens_mean", "Memory (tokens)"),
)


CURVES = {"memagent": CURVE_PANELS, "memalpha": MEMALPHA_CURVE_PANELS}


def read_training_curve(
    path: str | Path, panels: Sequence[tuple[str, str]] = CURVE_PANELS
) -> dict[str, list[float]]:
    """Per-step columns of a `train_metrics.jsonl` (one JSON object per training step).

    Returns "step" (the record's `step`, else its 0-based position), the `panels`' keys,
    CLIPFRAC_LOWER when every record has it, and "val_step"/VAL_REWARD for the validated steps.
    Steps must increase. Errors name the file and the line (counted over non-blank lines, as
    iter_jsonl reads them).
    """
    path = Path(path)
    keys = [key for key, _ in panels]
    columns: dict[str, list[float]] = {"step": [], **{key: [] for key in keys}}
    lower: list[float] = []
    validated: dict[str, list[float]] = {"val_step": [], VAL_REWARD: []}
    for line, record in enumerate(iter_jsonl(path), start=1):
        where = f"{path}: line {line}"
        missing = [key for key in keys if key not in record]
        if missing:
            raise ValueError(f"{where}: missing training metric(s) {', '.join(missing)}")
        step = number(record.get("step", line - 1), f"{where}: 'step'")
        if columns["step"] and step <= columns["step"][-1]:
            raise ValueError(
                f"{where}: step {step:g} does not follow step {columns['step'][-1]:g} "
                "(two runs in one file?)"
            )
        columns["step"].append(step)
        for key in keys:
            columns[key].append(number(record[key], f"{where}: {key!r}"))
        if CLIPFRAC_LOWER in record:
            lower.append(number(record[CLIPFRAC_LOWER], f"{where}: {CLIPFRAC_LOWER!r}"))
        if VAL_REWARD in record:
            validated["val_step"].append(step)
            validated[VAL_REWARD].append(number(record[VAL_REWARD], f"{where}: {VAL_REWARD!r}"))
    if not columns["step"]:
        raise ValueError(f"{path}: no training step recorded (empty metrics file)")
    if len(lower) == len(columns["step"]):
        columns[CLIPFRAC_LOWER] = lower
    if validated["val_step"]:
        columns.update(validated)
    return columns


def training_metrics_files(
    paths: Sequence[str | Path], labels: Sequence[str] | None = None
) -> dict[str, Path]:
    """{label: metrics file} for `paths` (metrics files, or training output directories holding
    TRAIN_METRICS_FILE). Without labels, each is named by the shortest trailing part of its
    directory that tells it apart from the others (`stage1`, or `seed1/stage1`)."""
    files = [Path(p) / TRAIN_METRICS_FILE if Path(p).is_dir() else Path(p) for p in paths]
    if labels is None:
        parts = [file.parent.resolve().parts for file in files]
        depth = 1
        while depth < max(map(len, parts), default=1) and len(
            {part[-depth:] for part in parts}
        ) < len(parts):
            depth += 1
        labels = ["/".join(part[-depth:]) for part in parts]
    if len(labels) != len(files):
        raise ValueError(f"{len(labels)} labels for {len(files)} metrics files")
    if len(set(labels)) != len(labels):
        raise ValueError(f"training-curve labels must be distinct, got {list(labels)}")
    return dict(zip(labels, files, strict=True))


def plot_training_curve(
    metrics_files: Mapping[str, str | Path],
    out_prefix: str | Path,
    title: str,
    panels: Sequence[tuple[str, str]] = CURVE_PANELS,
) -> list[Path]:
    """One panel per (metric, label) of `panels` (MemAgent's: reward, KL, clip fraction) per
    training step, one line per label ({label: metrics file}), sharing the step axis; written
    to `<prefix>.png` and `<prefix>.pdf`."""
    if not metrics_files:
        raise ValueError("plot_training_curve: no metrics file given")
    curves = {label: read_training_curve(path, panels) for label, path in metrics_files.items()}
    fig = Figure(figsize=(7.0, 2.5 * len(panels)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, sharex=True)
    keys = [key for key, _ in panels]
    clip_panel = axes[keys.index("pg_clipfrac")] if "pg_clipfrac" in keys else None
    offset = 0  # a later curve (stage II) continues where the one before it ended
    for i, (label, curve) in enumerate(curves.items()):
        colour = f"C{i % 10}"
        marker = "o" if len(curve["step"]) <= 50 else None
        steps = [offset + step for step in curve["step"]]
        for ax, (key, _) in zip(axes, panels, strict=True):
            ax.plot(steps, curve[key], "-", marker=marker, markersize=3, color=colour, label=label)
            if i > 0:
                ax.axvline(offset - 0.5, color="grey", linestyle=":", linewidth=0.8)
        if CLIPFRAC_LOWER in curve and clip_panel is not None:
            clip_panel.plot(steps, curve[CLIPFRAC_LOWER], ":", color=colour)
        if VAL_REWARD in curve:
            validated = [offset + step for step in curve["val_step"]]
            axes[0].plot(validated, curve[VAL_REWARD], "--s", color=colour, fillstyle="none")
        offset = (max(steps) if steps else offset - 1) + 1
    for ax, (_, ylabel) in zip(axes, panels, strict=True):
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axes[0].set_title(title)
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    consecutive = " (one after another, dotted at each start)" if len(curves) > 1 else ""
    axes[-1].set_xlabel(f"Training step{consecutive}")
    handles, labels = axes[0].get_legend_handles_labels()
    if any(VAL_REWARD in curve for curve in curves.values()):
        marker = {"linestyle": "--", "marker": "s", "fillstyle": "none"}
        handles.append(Line2D([], [], color="black", label=VAL_LEGEND, **marker))
        labels.append(VAL_LEGEND)
    if clip_panel is not None and any(CLIPFRAC_LOWER in curve for curve in curves.values()):
        handles += [
            Line2D([], [], color="black", linestyle="-", label="clip fraction"),
            Line2D([], [], color="black", linestyle=":", label="dual-clip (lower) fraction"),
        ]
        labels += ["clip fraction", "dual-clip (lower) fraction"]
    fig.legend(handles, labels, fontsize="small", loc="outside lower center", ncols=3)
    return save(fig, out_prefix)
