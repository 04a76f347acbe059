# Multi-Conv DAPO: stage I (RULER-HQA, 8 chunks), stage II (DocQA-RL-1.6K + RULER-HQA, 12 chunks)
# seed 000 §2.2. `training.backend` picks the driver: cpu (reference trainer) or verl (the command
# after `--`, generated from the config by memrepro.verl.overrides, is what runs on the GPU nodes).


rule stage2_data:
    input:
        hqa=f"{R}/data/ruler_hqa/train.jsonl",
        docqa=raw(config["training"]["stage2_data"]["source"]),
        tokenizer=get_tokenizer_dir,
    output:
        f"{R}/data/stage2/train.jsonl",
    log:
        f"{R}/logs/stage2_data/all.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("stage2_data"),
        settings=get_stage2_data_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} stage2-data --settings {params.settings:q}"
        " --hqa {input.hqa:q} --docqa {input.docqa:q} --tokenizer {input.tokenizer:q} --out {output:q}"
        " 2> {log:q}"


rule train_stage1:
    input:
        data=f"{R}/data/ruler_hqa/train.jsonl",
        dev=f"{R}/data/ruler_hqa/dev.jsonl",
        model=get_base_model,
    output:
        directory(f"{R}/checkpoints/{{train_run}}/stage1"),
    log:
        f"{R}/logs/train_stage1/{{train_run}}.log",
    benchmark:
        f"{R}/benchmarks/train_stage1/{{train_run}}.tsv"
    conda:
        "../../envs/train.yaml"
    container:
        get_train_container("stage1")
    resources:
        gpu=get_train_gpus,
        nodes=get_train_nodes,
        runtime=5760,
    params:
        job=job("train_stage1"),
        settings=get_train_settings("stage1"),
        launch=get_train_launch("stage1"),
    shell:
        "memrepro --job {params.job:q} --log {log:q} train --settings {params.settings:q} --data {input.data:q}"
        " --dev {input.dev:q} --model {input.model:q} --out {output:q} {params.launch} 2> {log:q}"


rule train_stage2:
    input:
        data=f"{R}/data/stage2/train.jsonl",
        dev=f"{R}/data/ruler_hqa/dev.jsonl",
        model=f"{R}/checkpoints/{{train_run}}/stage1",
    output:
        directory(f"{R}/checkpoints/{{train_run}}/stage2"),
    log:
        f"{R}/logs/train_stage2/{{train_run}}.log",
    benchmark:
        f"{R}/benchmarks/train_stage2/{{train_run}}.tsv"
    conda:
        "../../envs/train.yaml"
    container:
        get_train_container("stage2")
    resources:
        gpu=get_train_gpus,
        nodes=get_train_nodes,
        runtime=2880,
    params:
        job=job("train_stage2"),
        settings=get_train_settings("stage2"),
        launch=get_train_launch("stage2"),
    shell:
        "memrepro --job {params.job:q} --log {log:q} train --settings {params.settings:q} --data {input.data:q}"
        " --dev {input.dev:q} --model {input.model:q} --out {output:q} {params.launch} 2> {log:q}"


rule plot_training_curve:
    input:
        stage1=f"{R}/checkpoints/{{train_run}}/stage1",
        stage2=f"{R}/checkpoints/{{train_run}}/stage2",
    output:
        png=report(
            f"{R}/figures/training_{{train_run}}.png",
            caption="../report/training_curve.rst",
            category="Figures",
        ),
        pdf=f"{R}/figures/training_{{train_run}}.pdf",
    log:
        f"{R}/logs/plot_training_curve/{{train_run}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("plot_training_curve"),
        settings=get_training_curve_settings,
        prefix=get_output_prefix,
    shell:
        "memrepro --job {params.job:q} --log {log:q} training-curve --settings {params.settings:q}"
        " --metrics {input.stage1:q} {input.stage2:q} --out-prefix {params.prefix:q} 2> {log:q}"


# Mem-α GRPO: one stage on the Memalpha train split, r1 + β·r3 + r2 + γ·r4 per chunk row,
# validated on Memalpha validation; the recipe sets the steps, the KL loss and the checkpoint kept
rule train_memalpha:
    input:
        unpack(get_train_memalpha_inputs),
    output:
        directory(f"{R}/checkpoints/{{memalpha_run}}/grpo"),
    log:
        f"{R}/logs/train_memalpha/{{memalpha_run}}.log",
    benchmark:
        f"{R}/benchmarks/train_memalpha/{{memalpha_run}}.tsv"
    conda:
        "../../envs/train.yaml"
    container:
        get_memalpha_container
    resources:
        gpu=lambda wildcards: train_gpu_claim(wildcards.memalpha_run),
        nodes=lambda wildcards: cfg.train_nodes(config, wildcards.memalpha_run),
        runtime=5760,
    params:
        job=job("train_memalpha"),
        settings=get_train_memalpha_settings,
        tokenizer=get_memorize_tokenizer_arg,
        launch=get_memalpha_launch,
    shell:
        "memrepro --job {params.job:q} --log {log:q} train-memalpha --settings {params.settings:q}"
        " --data {input.data:q} --validation {input.validation:q} --model {input.model:q}"
        " {params.tokenizer} --out {output:q}"
        " {params.launch} 2> {log:q}"


rule plot_memalpha_training_curve:
    input:
        f"{R}/checkpoints/{{memalpha_run}}/grpo",
    output:
        png=report(
            f"{R}/figures/training_{{memalpha_run}}.png",
            caption="../report/training_curve.rst",
            category="Figures",
        ),
        pdf=f"{R}/figures/training_{{memalpha_run}}.pdf",
    log:
        f"{R}/logs/plot_memalpha_training_curve/{{memalpha_run}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("plot_memalpha_training_curve"),
        settings=get_training_curve_settings,
        prefix=get_output_prefix,
    shell:
        "memrepro --job {params.job:q} --log {log:q} training-curve --settings {params.settings:q}"
        " --metrics {input:q} --out-prefix {params.prefix:q} 2> {log:q}"
