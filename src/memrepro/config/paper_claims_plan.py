"""The `paper_claims` table's plan: its settings (the papers' sentences, each number placed in
the score table of ours that holds it) and its inputs (both paper files, the claim checks of
the tables and figures that judge a sentence themselves, the score tables' cells the others
rest on). It reads every plan's `rows_at`, so it imports memrepro.config.report_plans when called:
that module declares the table with these two functions."""

from __future__ import annotations

from typing import Any

from memrepro.config.prose_claims import PAPERS, our_cells, prose_claims
from memrepro.config.reports import PAPER_CLAIMS_TABLE
from memrepro.config.yaml_file import load_yaml
from memrepro.layout import results_dir


def paper_claims_inputs(config: dict[str, Any]) -> list[str]:
    """Both paper files; the claim checks of the tables and figures this config makes that check
    one of their sentences on our numbers; the cells (CSV) of the score tables it makes that
    hold a number another sentence rests on."""
    from memrepro.config.report_plans import REPORTS, report_inputs  # it declares this plan

    claims = paper_claims_settings(config)["prose_claims"]
    named = {claim["ours"][0] for claim in claims if "ours" in claim}
    made = [name for name in named if name != PAPER_CLAIMS_TABLE and report_inputs(config, name)]
    folder = {name: "figures" if REPORTS[name].figure else "tables" for name in made}
    checks = [f"{results_dir(config)}/{folder[n]}/{n}.claims.json" for n in sorted(made)]
    held = {
        at["table"]
        for claim in claims
        for case in claim["cases"]
        for at in case.get("ours_at", [])
        if at is not None
    }
    made_cells = [name for name in sorted(held) if report_inputs(config, name)]
    cells = [f"{results_dir(config)}/tables/{name}.csv" for name in made_cells]
    return [*(config["report"][key] for key in PAPERS), *checks, *cells]


def paper_claims_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The papers' sentences, each number of theirs placed in the score table of ours that holds
    it (memrepro.config.prose_claims.our_cells)."""
    from memrepro.config.report_plans import REPORTS  # it declares this plan

    tables = {}
    for name, plan in REPORTS.items():
        if plan.rows_at is not None:
            paper = load_yaml(config["report"][plan.paper])
            tables[name] = (plan.paper, plan.rows_at, _row_aliases(paper, plan.row_aliases))
    return {"prose_claims": our_cells(prose_claims(config), tables)}


def _row_aliases(paper: dict[str, Any], path: tuple[str, ...] | None) -> dict[str, str]:
    """The {other name: printed row} mapping at `path` in the paper file (none without one)."""
    node: Any = paper
    for step in path or ():
        node = node.get(step, {})
    return dict(node) if path else {}
