# MemRepro: MemAgent (then Mem-alpha) from public data to every table and figure.
# Run: snakemake --profile profiles/smoke | profiles/local | profiles/slurm  [target]
from snakemake.utils import min_version

min_version("9.0")


# The embedded default; a --configfile (or a profile's configfile) replaces it instead of merging into it.
if not workflow.overwrite_configfiles:

    configfile: "config/smoke.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"


localrules:
    all,
    evaluations,
    training_curves,
    download_data,
    download_model,
    download_official_hqa,
    merge_eval,
    make_table,
    plot_figure,
    plot_training_curve,
    case_study,
    case_studies,
    reproduction,


rule all:
    default_target: True
    input:
        get_manifests(),
        get_reports(),
        get_training_curves(),
        get_case_studies(),
        get_reproduction(),


rule case_studies:
    input:
        get_case_studies(),


rule evaluations:
    input:
        get_eval_metrics(),


rule training_curves:
    input:
        get_training_curves(),


# One named target per table and figure: `snakemake --profile ... table3`
for name in cfg.TABLES + cfg.FIGURES:

    rule:
        name:
            name
        input:
            report_outputs(name),
        localrule: True
