"""A figure's text stays inside its canvas: what the layout pushes off is named in the PNG."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.filterwarnings("ignore:constrained_layout not applied")  # the text made to not fit
def test_text_the_layout_pushes_off_the_canvas_is_named_in_the_png(tmp_path: Path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from PIL import Image

    from memrepro.report.plots import CLIPPED_KEY, outside_canvas, save

    fig = Figure(figsize=(4.0, 3.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([1, 2], [0, 100])
    ax.set_title("fits")
    assert outside_canvas(fig) == []
    [png, _] = save(fig, tmp_path / "fits")
    with Image.open(png) as image:
        assert CLIPPED_KEY not in image.text
    ax.text(0.5, 0.5, "a note far too long to fit " * 4, transform=ax.transAxes)
    assert outside_canvas(fig) == ["a note far too long to fit a note far too long to fit a note"]
    [png, _] = save(fig, tmp_path / "cut")
    with Image.open(png) as image:
        assert image.text[CLIPPED_KEY].startswith("a note far too long")
