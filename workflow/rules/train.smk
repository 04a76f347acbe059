# Multi-Conv DAPO: stage I (RULER-HQA, 8 chunks), stage II (longer contexts) — seed 000 §2.2


rule train_stage1:
    input:
        data=f"{R}/data/ruler_hqa/train.jsonl",
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
        CONTAINERS["train"]
    resources:
        gpu=get_train_gpus,
        nodes=get_train_nodes,
        runtime=5760,
    params:
        job=job("train_stage1"),
        settings=get_stage1_settings,
    shell:
        "memrl --job {params.job:q} --log {log:q} train --settings {params.settings:q} --data {input.data:q}"
        " --model {input.model:q} --out {output:q} 2> {log:q}"


rule train_stage2:
    input:
        data=f"{R}/data/ruler_hqa/train.jsonl",
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
        CONTAINERS["train"]
    resources:
        gpu=get_train_gpus,
        nodes=get_train_nodes,
        runtime=2880,
    params:
        job=job("train_stage2"),
        settings=get_stage2_settings,
    shell:
        "memrl --job {params.job:q} --log {log:q} train --settings {params.settings:q} --data {input.data:q}"
        " --model {input.model:q} --out {output:q} 2> {log:q}"
