# Table 1 and Figure 1 with the paper's numbers beside ours (config/paper/)


rule make_table1:
    input:
        metrics=get_eval_metrics(),
        paper=config["report"]["paper"],
    output:
        csv=report(
            f"{R}/tables/table1.csv",
            caption="../report/table1.rst",
            category="Tables",
        ),
        md=f"{R}/tables/table1.md",
        tex=f"{R}/tables/table1.tex",
    log:
        f"{R}/logs/make_table1/all.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("make_table1"),
        settings=get_report_settings,
        prefix=get_output_prefix,
    shell:
        "memrl --job {params.job:q} --log {log:q} table1 --settings {params.settings:q} --metrics {input.metrics:q}"
        " --paper {input.paper:q} --out-prefix {params.prefix:q} 2> {log:q}"


rule plot_figure1:
    input:
        metrics=get_eval_metrics(),
        paper=config["report"]["paper"],
    output:
        png=report(
            f"{R}/figures/figure1.png",
            caption="../report/figure1.rst",
            category="Figures",
        ),
        pdf=f"{R}/figures/figure1.pdf",
    log:
        f"{R}/logs/plot_figure1/all.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("plot_figure1"),
        settings=get_report_settings,
        prefix=get_output_prefix,
    shell:
        "memrl --job {params.job:q} --log {log:q} figure1 --settings {params.settings:q} --metrics {input.metrics:q}"
        " --paper {input.paper:q} --out-prefix {params.prefix:q} 2> {log:q}"
