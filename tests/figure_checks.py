"""What can be checked of a drawn figure without looking at it: every data axes holds something
and is labelled, every legend entry matches something drawn (its colour, or the ours/paper
style of a black proxy), and no text reaches past the canvas. Used on every figure a test saves
(conftest's `checked_figures`)."""

from __future__ import annotations

from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

BLACK = to_rgba("black")


def figure_problems(fig: Figure) -> list[str]:
    problems = []
    drawn_lines = [line for ax in fig.axes for line in ax.get_lines()]
    drawn_patches = [patch for ax in fig.axes for patch in ax.patches]
    for i, ax in enumerate(fig.axes):
        if not ax.axison or ax.get_label() == "<colorbar>":
            continue
        if not (ax.lines or ax.patches or ax.collections or ax.images):
            problems.append(f"axes {i} ({ax.get_title()!r}) draws nothing")
        for name, shared, label, ticks in (
            ("x", ax.get_shared_x_axes(), "get_xlabel", "get_xticklabels"),
            ("y", ax.get_shared_y_axes(), "get_ylabel", "get_yticklabels"),
        ):
            # its own label or tick labels, or those of an axes it shares the axis with
            group = shared.get_siblings(ax)
            if not any(getattr(a, label)() or _texts(getattr(a, ticks)()) for a in group):
                problems.append(f"axes {i} ({ax.get_title()!r}) has no {name} label or ticks")
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    for legend in legends:
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if not _drawn(handle, drawn_lines, drawn_patches):
                problems.append(f"legend entry {text.get_text()!r} matches nothing drawn")
    from memrepro.report.plots import outside_canvas

    problems += [f"text outside the canvas: {text!r}" for text in outside_canvas(fig)]
    return problems


def _drawn(handle, lines: list[Line2D], patches: list[Patch]) -> bool:
    if isinstance(handle, Line2D):
        colour = to_rgba(handle.get_color())
        if colour == BLACK:  # a style proxy (ours / paper): some line drawn in that style
            marker = handle.get_marker()
            return any(
                line.get_linestyle() == handle.get_linestyle()
                and (marker in ("None", "", None) or line.get_marker() == marker)
                for line in lines
            )
        return any(to_rgba(line.get_color()) == colour for line in lines) or any(
            to_rgba(patch.get_facecolor()) == colour for patch in patches
        )
    if isinstance(handle, Patch):
        colour = to_rgba(handle.get_facecolor())
        return any(to_rgba(patch.get_facecolor()) == colour for patch in patches)
    return True


def _texts(labels) -> bool:
    return any(label.get_text() for label in labels)
