# MemRL: MemAgent (then Mem-alpha) from public data to every table and figure.
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
    table1,
    figure1,
    training_curves,
    download_data,
    download_model,
    make_table1,
    plot_figure1,
    plot_training_curve,


rule all:
    default_target: True
    input:
        get_manifests(),
        get_table1(),
        get_figure1(),
        get_training_curves(),


rule table1:
    input:
        get_table1(),


rule figure1:
    input:
        get_figure1(),


rule training_curves:
    input:
        get_training_curves(),
