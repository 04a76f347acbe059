# Every table and figure of both papers with the paper's numbers beside ours (config/paper/)


rule make_table:
    input:
        metrics=get_report_metrics,
        paper=get_paper,
        controls=get_report_controls,  # memory cells' and closed-book's items: each cell's gain
    output:
        csv=f"{R}/tables/{{table}}.csv",
        md=f"{R}/tables/{{table}}.md",
        tex=f"{R}/tables/{{table}}.tex",
        html=report(  # the table with its footnotes, as the report shows it
            f"{R}/tables/{{table}}.html",
            caption="../report/tables.rst",
            category="Tables",
            labels={"table": "{table}"},
        ),
        claims=f"{R}/tables/{{table}}.claims.json",  # the paper claims it checks (Mem-α's)
    log:
        f"{R}/logs/make_table/{{table}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("make_table"),
        settings=get_report_settings,
        prefix=get_output_prefix,
        caption=get_report_caption,  # read by the Snakemake report's caption
    shell:
        "memrepro --job {params.job:q} --log {log:q} table --settings {params.settings:q}"
        " --metrics {input.metrics:q} --paper {input.paper:q} --controls {input.controls:q}"
        " --out-prefix {params.prefix:q} 2> {log:q}"


rule plot_figure:
    input:
        metrics=get_report_metrics,
        paper=get_paper,
        models=get_report_models,  # Figure 10 only: model shapes and measured wall time
        benchmarks=get_report_benchmarks,
    output:
        png=report(
            f"{R}/figures/{{figure}}.png",
            caption="../report/figures.rst",
            category="Figures",
            labels={"figure": "{figure}"},
        ),
        pdf=f"{R}/figures/{{figure}}.pdf",
        claims=f"{R}/figures/{{figure}}.claims.json",  # the paper's claims checked on ours
    log:
        f"{R}/logs/plot_figure/{{figure}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("plot_figure"),
        settings=get_report_settings,
        prefix=get_output_prefix,
        caption=get_report_caption,
    shell:
        "memrepro --job {params.job:q} --log {log:q} figure --settings {params.settings:q}"
        " --metrics {input.metrics:q} --paper {input.paper:q} --out-prefix {params.prefix:q}"
        " 2> {log:q}"


# Appendix C/F: the memory after every chunk of chosen samples (report.case_studies)
rule case_study:
    input:
        unpack(get_case_study_inputs),
    output:
        md=f"{R}/case_studies/{{benchmark}}/{{system}}/{{length}}.md",
        html=f"{R}/case_studies/{{benchmark}}/{{system}}/{{length}}.html",
    log:
        f"{R}/logs/case_study/{{benchmark}}/{{system}}/{{length}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("case_study"),
        settings=get_case_study_settings,
        pool=get_case_study_pool_args,
        prefix=get_output_prefix,
    shell:
        "memrepro --job {params.job:q} --log {log:q} trace --settings {params.settings:q}"
        " --predictions {input.predictions:q} --data {input.data:q} {params.pool}"
        " --tokenizer {input.tokenizer:q} --out-prefix {params.prefix:q} 2> {log:q}"


# Per paper and table: how many cells reproduced, the largest misses, notes, links, lineage
rule reproduction:
    input:
        tables=get_reproduction_tables,
        figures=get_reproduction_figures,
        claims=get_reproduction_claims,
        case_studies=get_reproduction_case_studies,
        evaluations=get_reproduction_evaluations,
        benchmarks=get_reproduction_benchmarks,
    output:
        md=f"{R}/reproduction.md",
        cells=f"{R}/reproduction.cells.csv",
        diagnoses=f"{R}/reproduction.diagnoses.csv",
        html=report(
            f"{R}/reproduction.html",
            caption="../report/reproduction.rst",
            category="Reproduction",
        ),
    log:
        f"{R}/logs/reproduction.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("reproduction"),
        settings=get_reproduction_settings(),
        prefix=get_output_prefix,
    shell:
        "memrepro --job {params.job:q} --log {log:q} reproduction --settings {params.settings:q}"
        " --tables {input.tables:q} --figures {input.figures:q} --claims {input.claims:q}"
        " --case-studies {input.case_studies:q} --evaluations {input.evaluations:q}"
        " --benchmarks {input.benchmarks:q} --out-prefix {params.prefix:q} 2> {log:q}"
