# download -> synthesize -> filter -> eval sets (as MemAgent's official code builds RULER-HQA)


rule download_data:
    output:
        data=f"{R}/raw/{{source}}.{{ext}}",
        manifest=f"{R}/raw/{{source}}.{{ext}}.manifest.json",
    log:
        f"{R}/logs/download_data/{{source}}.{{ext}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("download_data"),
        settings=get_source_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} download-data --settings {params.settings:q}"
        " --out {output.data:q} --manifest {output.manifest:q} 2> {log:q}"


rule download_model:
    output:
        model=directory(f"{R}/models/{{model}}"),
        manifest=f"{R}/models/{{model}}.manifest.json",
    log:
        f"{R}/logs/download_model/{{model}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        runtime=240,
    params:
        job=job("download_model"),
        settings=get_model_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} download-model --settings {params.settings:q}"
        " --out {output.model:q} --manifest {output.manifest:q} 2> {log:q}"


# MemAgent's released RULER-HQA files (ruler_hqa.questions / eval_sets: official)
use rule download_data as download_official_hqa with:
    output:
        data=f"{R}/raw/{cfg.OFFICIAL_HQA_DIR}/{{file}}",
        manifest=f"{R}/raw/{cfg.OFFICIAL_HQA_DIR}/{{file}}.manifest.json",
    log:
        f"{R}/logs/download_official_hqa/{{file}}.log",
    wildcard_constraints:
        file=r"hotpotqa_(train|dev)\.parquet|eval_\d+\.json",
    params:
        job=job("download_official_hqa"),
        settings=get_official_hqa_source,


rule dataset_stats:  # Mem-α Tables 6-8 in the QA model's (Qwen3-32B's) tokens
    input:
        data=get_memalpha_split,
        tokenizer=get_qa_tokenizer_dir,
    output:
        f"{R}/stats/{{memalpha_split}}.json",
    log:
        f"{R}/logs/dataset_stats/{{memalpha_split}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
        runtime=60,
    params:
        job=job("dataset_stats"),
        settings=lambda wildcards: settings_ref({"split": wildcards.memalpha_split}),
    shell:
        "memrepro --job {params.job:q} --log {log:q} dataset-stats --settings {params.settings:q}"
        " --data {input.data:q} --tokenizer {input.tokenizer:q} --out {output:q} 2> {log:q}"


# Mem-α Table 5: the instance holding the paper's example, wherever it lives (memalpha.example)
rule memalpha_example:
    input:
        splits=lambda wildcards: [
            str(cfg.memalpha_data(config, split)) for split in cfg.memalpha_splits(config)
        ],
    output:
        data=f"{R}/data/memalpha/example.parquet",
        found=f"{R}/data/memalpha/example.json",
    log:
        f"{R}/logs/memalpha_example.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("memalpha_example"),
        settings=lambda wildcards: settings_ref(cfg.example_settings(config)),
    shell:
        "memrepro --job {params.job:q} --log {log:q} memalpha-example --settings {params.settings:q}"
        " --splits {input.splits:q} --data {output.data:q} --found {output.found:q} 2> {log:q}"


rule synthesize_ruler_hqa:
    input:
        train=raw("hotpotqa_train"),
        dev=raw("hotpotqa_dev"),
        tokenizer=get_tokenizer_dir,
    output:
        train=f"{R}/data/ruler_hqa/train_unfiltered.jsonl",
        dev=f"{R}/data/ruler_hqa/dev_unfiltered.jsonl",
    log:
        f"{R}/logs/synthesize_ruler_hqa/all.log",
    benchmark:
        f"{R}/benchmarks/synthesize_ruler_hqa/all.tsv"
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=32000,
        runtime=240,
    params:
        job=job("synthesize_ruler_hqa"),
        settings=get_synthesize_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} synthesize --settings {params.settings:q}"
        " --train {input.train:q} --dev {input.dev:q} --tokenizer {input.tokenizer:q}"
        " --out-train {output.train:q} --out-dev {output.dev:q} 2> {log:q}"


rule filter_questions:
    input:
        unpack(get_filter_models),
        train=f"{R}/data/ruler_hqa/train_unfiltered.jsonl",
        dev=f"{R}/data/ruler_hqa/dev_unfiltered.jsonl",
    output:
        train=f"{R}/data/ruler_hqa/train.jsonl",
        dev=f"{R}/data/ruler_hqa/dev.jsonl",
        report=report(
            f"{R}/data/ruler_hqa/filter_report.json",
            caption="../report/filter.rst",
            category="Data",
        ),
    log:
        f"{R}/logs/filter_questions/all.log",
    benchmark:
        f"{R}/benchmarks/filter_questions/all.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_filter_gpus,
        runtime=720,
    params:
        memrepro=INFER_MEMREPRO,
        job=job("filter_questions"),
        settings=get_filter_settings,
        models=get_filter_model_args,
    shell:
        "{params.memrepro} --job {params.job:q} --log {log:q} filter --settings {params.settings:q}"
        " {params.models}"
        " --train {input.train:q} --dev {input.dev:q} --out-train {output.train:q}"
        " --out-dev {output.dev:q} --report {output.report:q} 2> {log:q}"


rule official_questions:
    input:
        questions=f"{R}/raw/{cfg.OFFICIAL_HQA_DIR}/hotpotqa_{{split}}.parquet",
    output:
        f"{R}/data/ruler_hqa/{{split}}.jsonl",
    log:
        f"{R}/logs/official_questions/{{split}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
    params:
        job=job("official_questions"),
        settings=lambda wildcards: settings_ref(
            cfg.official_questions_settings(config, wildcards.split)
        ),
    shell:
        "memrepro --job {params.job:q} --log {log:q} official-questions"
        " --settings {params.settings:q} --questions {input.questions:q} --out {output:q} 2> {log:q}"


# ruler_hqa.questions picks who writes train/dev.jsonl: the released files or the filter
if cfg.hqa_questions(config) == cfg.OFFICIAL_HQA:

    ruleorder: official_questions > filter_questions

else:

    ruleorder: filter_questions > official_questions


rule ruler_hqa_pool:
    input:
        dev_raw=raw("hotpotqa_dev"),
        tokenizer=get_tokenizer_dir,
    output:
        docs=f"{R}/data/ruler_hqa/pool_docs.parquet",
        questions=f"{R}/data/ruler_hqa/pool_questions.parquet",
    log:
        f"{R}/logs/ruler_hqa_pool/all.log",
    benchmark:
        f"{R}/benchmarks/ruler_hqa_pool/all.tsv"
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
    params:
        job=job("ruler_hqa_pool"),
        settings=settings_ref(cfg.hqa_pool_settings()),
    shell:
        "memrepro --job {params.job:q} --log {log:q} hqa-pool --settings {params.settings:q}"
        " --dev-raw {input.dev_raw:q}"
        " --tokenizer {input.tokenizer:q} --out-docs {output.docs:q}"
        " --out-questions {output.questions:q} 2> {log:q}"


rule synthesize_eval:
    input:
        pool_docs=f"{R}/data/ruler_hqa/pool_docs.parquet",
        pool_questions=f"{R}/data/ruler_hqa/pool_questions.parquet",
        dev=f"{R}/data/ruler_hqa/dev.jsonl",
        tokenizer=get_tokenizer_dir,
    output:
        f"{R}/data/ruler_hqa/eval_{{n_docs}}.jsonl",
    log:
        f"{R}/logs/synthesize_eval/{{n_docs}}.log",
    benchmark:
        f"{R}/benchmarks/synthesize_eval/{{n_docs}}.tsv"
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
    params:
        job=job("synthesize_eval"),
        settings=get_eval_set_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} eval-set --settings {params.settings:q}"
        " --pool-docs {input.pool_docs:q} --pool-questions {input.pool_questions:q}"
        " --dev {input.dev:q} --tokenizer {input.tokenizer:q} --out {output:q} 2> {log:q}"


rule official_eval_set:
    input:
        released=f"{R}/raw/{cfg.OFFICIAL_HQA_DIR}/eval_{{n_docs}}.json",
        pool_docs=f"{R}/data/ruler_hqa/pool_docs.parquet",
        pool_questions=f"{R}/data/ruler_hqa/pool_questions.parquet",
        tokenizer=get_tokenizer_dir,
    output:
        f"{R}/data/ruler_hqa/eval_{{n_docs}}.jsonl",
    log:
        f"{R}/logs/official_eval_set/{{n_docs}}.log",
    benchmark:
        f"{R}/benchmarks/official_eval_set/{{n_docs}}.tsv"
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
    params:
        job=job("official_eval_set"),
        settings=lambda wildcards: settings_ref(
            cfg.official_eval_set_settings(config, int(wildcards.n_docs))
        ),
    shell:
        "memrepro --job {params.job:q} --log {log:q} official-eval-set --settings {params.settings:q}"
        " --released {input.released:q} --pool-docs {input.pool_docs:q}"
        " --pool-questions {input.pool_questions:q} --tokenizer {input.tokenizer:q}"
        " --out {output:q} 2> {log:q}"


# ruler_hqa.eval_sets picks who writes eval_<N>.jsonl: the released sets or our synthesis
if cfg.hqa_eval_sets(config) == cfg.OFFICIAL_HQA:

    ruleorder: official_eval_set > synthesize_eval

else:

    ruleorder: synthesize_eval > official_eval_set


# Table 4's probe: the rows of eval_<N>.jsonl (released or synthesized) with the question's two
# key-information groups at fixed depths: the same documents, so every difference is paired
rule probe_set:
    input:
        rows=f"{R}/data/ruler_hqa/eval_{{n_docs}}.jsonl",
        pool_docs=f"{R}/data/ruler_hqa/pool_docs.parquet",
        pool_questions=f"{R}/data/ruler_hqa/pool_questions.parquet",
        tokenizer=get_tokenizer_dir,
    output:
        f"{R}/data/ruler_hqa/probe/{{placement}}/eval_{{n_docs}}.jsonl",
    log:
        f"{R}/logs/probe_set/{{placement}}/{{n_docs}}.log",
    benchmark:
        f"{R}/benchmarks/probe_set/{{placement}}/{{n_docs}}.tsv"
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
    params:
        job=job("probe_set"),
        settings=get_probe_set_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} probe-set --settings {params.settings:q}"
        " --rows {input.rows:q} --pool-docs {input.pool_docs:q}"
        " --pool-questions {input.pool_questions:q} --tokenizer {input.tokenizer:q}"
        " --out {output:q} 2> {log:q}"


# One's own datasets (custom.datasets): each file checked row by row, as the evaluation's rows
rule custom_set:
    input:
        data=lambda wildcards: str(custom.source_file(config, wildcards.dataset)),
    output:
        f"{R}/data/custom/{{dataset}}.jsonl",
    log:
        f"{R}/logs/custom_set/{{dataset}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("custom_set"),
        settings=lambda wildcards: settings_ref(custom.set_settings(config, wildcards.dataset)),
    shell:
        "memrepro --job {params.job:q} --log {log:q} custom-set --settings {params.settings:q}"
        " --data {input.data:q} --out {output:q} 2> {log:q}"


# Mem-α's Figure 4 (the optional `keywords` block): a data source's keyword golds extracted again
# from its original summaries by the configured model, beside the released ones
rule rebuild_keywords:
    input:
        unpack(get_keyword_inputs),
        model=get_keyword_model,
    output:
        f"{R}/keywords/{{keyword_set}}.jsonl",
    log:
        f"{R}/logs/rebuild_keywords/{{keyword_set}}.log",
    benchmark:
        f"{R}/benchmarks/rebuild_keywords/{{keyword_set}}.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_keyword_gpus,
        runtime=240,
    params:
        memrepro=INFER_MEMREPRO,
        job=job("rebuild_keywords"),
        settings=lambda wildcards: settings_ref(
            cfg.keywords_settings(config, wildcards.keyword_set)
        ),
    shell:
        "{params.memrepro} --job {params.job:q} --log {log:q} keywords --settings {params.settings:q}"
        " --summaries {input.summaries:q} --released {input.released:q} --model {input.model:q}"
        " --out {output:q} 2> {log:q}"


# Mem-α's training and validation sets built again from their sources (the optional
# memalpha.build block, Appendix A.1): each group's instances, its model filter, the merge
rule memalpha_source:
    input:
        unpack(get_build_source_inputs),
        tokenizer=get_qa_tokenizer_dir,
    output:
        f"{R}/data/memalpha_build/{{build_group}}.built.jsonl",
    log:
        f"{R}/logs/memalpha_source/{{build_group}}.log",
    benchmark:
        f"{R}/benchmarks/memalpha_source/{{build_group}}.tsv"
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
        runtime=120,
    params:
        job=job("memalpha_source"),
        settings=lambda wildcards: settings_ref(
            build_plan.source_settings(config, wildcards.build_group)
        ),
        files=get_build_source_args,
    shell:
        "memrepro --job {params.job:q} --log {log:q} memalpha-source --settings {params.settings:q}"
        " {params.files} --tokenizer {input.tokenizer:q} --out {output:q} 2> {log:q}"


rule memalpha_filter:
    input:
        unpack(get_build_filter_inputs),
    output:
        f"{R}/data/memalpha_build/{{build_group}}.kept.jsonl",
    log:
        f"{R}/logs/memalpha_filter/{{build_group}}.log",
    benchmark:
        f"{R}/benchmarks/memalpha_filter/{{build_group}}.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_build_filter_gpus,
        runtime=480,
    params:
        memrepro=INFER_MEMREPRO,
        job=job("memalpha_filter"),
        settings=lambda wildcards: settings_ref(
            build_plan.filter_settings(config, wildcards.build_group)
        ),
        model=get_build_filter_model_arg,
    shell:
        "{params.memrepro} --job {params.job:q} --log {log:q} memalpha-filter"
        " --settings {params.settings:q} --built {input.built:q} --tokenizer {input.tokenizer:q}"
        " {params.model} --out {output:q} 2> {log:q}"


rule memalpha_sets:
    input:
        kept=get_build_kept(),
    output:
        train=f"{R}/data/memalpha_build/train.parquet",
        validation=f"{R}/data/memalpha_build/validation.parquet",
    log:
        f"{R}/logs/memalpha_sets/all.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("memalpha_sets"),
        settings=lambda wildcards: settings_ref(build_plan.sets_settings(config)),
    shell:
        "memrepro --job {params.job:q} --log {log:q} memalpha-sets --settings {params.settings:q}"
        " --kept {input.kept:q} --train {output.train:q} --validation {output.validation:q}"
        " 2> {log:q}"


rule memalpha_compare:
    input:
        unpack(get_build_compare_inputs),
    output:
        f"{R}/data/memalpha_build/comparison.json",
    log:
        f"{R}/logs/memalpha_compare/all.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
    params:
        job=job("memalpha_compare"),
        settings=settings_ref({"splits": list(build_plan.BUILT_SPLITS)}),
    shell:
        "memrepro --job {params.job:q} --log {log:q} memalpha-compare --settings {params.settings:q}"
        " --rebuilt {input.rebuilt:q} --released {input.released:q} --mab {input.mab:q}"
        " --tokenizer {input.tokenizer:q} --out {output:q} 2> {log:q}"
