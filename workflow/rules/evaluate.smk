# Every evaluation: systems (memory agents, long-context, RAG) x benchmarks (RULER-HQA, RULER,
# LongBench; Memalpha validation and MemoryAgentBench) x lengths, each job covering the tasks at
# its length; long ones split into shards.


rule synthesize_ruler:
    input:
        essays=raw(config["ruler"]["essays"]),
        squad=raw(config["ruler"]["squad"]),
        hotpotqa=raw(config["ruler"]["hotpotqa"]),
        tokenizer=get_ruler_tokenizer_dir,
    output:
        f"{R}/data/ruler/{{task}}/{{length}}.jsonl",
    log:
        f"{R}/logs/synthesize_ruler/{{task}}/{{length}}.log",
    benchmark:
        f"{R}/benchmarks/synthesize_ruler/{{task}}/{{length}}.tsv"
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    resources:
        mem_mb=16000,
        runtime=240,
    params:
        job=job("synthesize_ruler"),
        settings=get_ruler_set_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} ruler-set --settings {params.settings:q}"
        " --essays {input.essays:q} --squad {input.squad:q} --hotpotqa {input.hotpotqa:q}"
        " --tokenizer {input.tokenizer:q} --out {output:q} 2> {log:q}"


# One evaluation job per (benchmark, system, length), covering every task there (one model load).
# A short one writes its predictions and metrics itself; a long one (`evaluation.shards`) runs
# `evaluate_shard` jobs (2 or more, round robin over each task's samples) that `merge_eval` joins.
# An unsharded evaluation has no shard files to merge (no rule makes `shard0of1`), so Snakemake
# falls back from merge_eval to evaluate.
ruleorder: merge_eval > evaluate


rule evaluate:
    input:
        unpack(get_eval_inputs),
    output:
        predictions=f"{R}/eval/{{benchmark}}/{{system}}/{{length}}.predictions.jsonl",
        metrics=f"{R}/eval/{{benchmark}}/{{system}}/{{length}}.metrics.json",
    log:
        f"{R}/logs/evaluate/{{benchmark}}/{{system}}/{{length}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate/{{benchmark}}/{{system}}/{{length}}.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_eval_gpus,
        runtime=720,
    params:
        memrepro=INFER_MEMREPRO,
        job=job("evaluate"),
        settings=get_eval_settings,
        pool=get_eval_pool_arg,
        evidence=get_eval_evidence_arg,
        memories=get_eval_memories_arg,
        metrics=get_eval_metrics_arg,
    shell:
        "{params.memrepro} --job {params.job:q} --log {log:q} evaluate --settings {params.settings:q}"
        " --data {input.data:q} {params.pool} {params.evidence} {params.memories}"
        " --model {input.model:q}"
        " --predictions {output.predictions:q} {params.metrics} 2> {log:q}"


use rule evaluate as evaluate_shard with:
    output:
        predictions=f"{R}/eval/{{benchmark}}/{{system}}/{{length}}.shard{{shard}}of{{shards}}.jsonl",
    log:
        f"{R}/logs/evaluate/{{benchmark}}/{{system}}/{{length}}.shard{{shard}}of{{shards}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate/{{benchmark}}/{{system}}/{{length}}.shard{{shard}}of{{shards}}.tsv"
    wildcard_constraints:
        shards=r"[2-9]|[1-9]\d+",
    params:
        memrepro=INFER_MEMREPRO,
        job=job("evaluate_shard"),
        settings=get_eval_settings,
        pool=get_eval_pool_arg,
        evidence=get_eval_evidence_arg,
        memories=get_eval_memories_arg,
        metrics=get_eval_metrics_arg,


# Mem-α: the policy memorises every instance (one job per benchmark and system); the evaluate
# rule then answers each question from those memories on the frozen QA model (memalpha.qa), so
# the two models never share a job's GPUs (as Mem-α's official evaluation runs them).
rule memorize:
    input:
        unpack(get_memorize_inputs),
    output:
        memories=f"{R}/eval/{{benchmark}}/{{system}}/{{length}}.memories.jsonl",
    log:
        f"{R}/logs/memorize/{{benchmark}}/{{system}}/{{length}}.log",
    benchmark:
        f"{R}/benchmarks/memorize/{{benchmark}}/{{system}}/{{length}}.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_memorize_gpus,
        runtime=720,
    params:
        memrepro=INFER_MEMREPRO,
        job=job("memorize"),
        settings=get_memorize_settings,
        tokenizer=get_memorize_tokenizer_arg,
        pool=get_eval_pool_arg,
    shell:
        "{params.memrepro} --job {params.job:q} --log {log:q} memorize --settings {params.settings:q}"
        " --data {input.data:q} --model {input.model:q} {params.tokenizer} {params.pool}"
        " --memories {output.memories:q} 2> {log:q}"


rule merge_eval:
    input:
        get_eval_shards,
    output:
        predictions=f"{R}/eval/{{benchmark}}/{{system}}/{{length}}.predictions.jsonl",
        metrics=f"{R}/eval/{{benchmark}}/{{system}}/{{length}}.metrics.json",
    log:
        f"{R}/logs/merge_eval/{{benchmark}}/{{system}}/{{length}}.log",
    conda:
        "../../envs/core.yaml"
    container:
        CONTAINERS["core"]
    params:
        job=job("merge_eval"),
        settings=get_merge_settings,
    shell:
        "memrepro --job {params.job:q} --log {log:q} merge-eval --settings {params.settings:q}"
        " --shards {input:q} --predictions {output.predictions:q} --metrics {output.metrics:q}"
        " 2> {log:q}"


# Scores without regenerating (the `rescore` block): a finished evaluation's predictions scored
# again by another scorer (a metric, another Mem-α protocol, a second judge) for the scorers table;
# and each LLM judge's leniency on a fixed probe of right and vague wrong answers.
rule rescore:
    input:
        unpack(get_rescore_inputs),
    output:
        predictions=f"{R}/rescore/{{scorer}}/{{benchmark}}/{{system}}/{{length}}.predictions.jsonl",
        metrics=f"{R}/rescore/{{scorer}}/{{benchmark}}/{{system}}/{{length}}.metrics.json",
    log:
        f"{R}/logs/rescore/{{scorer}}/{{benchmark}}/{{system}}/{{length}}.log",
    benchmark:
        f"{R}/benchmarks/rescore/{{scorer}}/{{benchmark}}/{{system}}/{{length}}.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_rescore_gpus,
        runtime=240,
    params:
        memrepro=INFER_MEMREPRO,
        job=job("rescore"),
        settings=get_rescore_settings,
        judge=get_rescore_judge_arg,
    shell:
        "{params.memrepro} --job {params.job:q} --log {log:q} rescore --settings {params.settings:q}"
        " --predictions {input.predictions:q} {params.judge}"
        " --out-predictions {output.predictions:q} --metrics {output.metrics:q} 2> {log:q}"


rule judge_probe:
    input:
        model=get_judge_model,
    output:
        f"{R}/judges/{{judge}}.json",
    log:
        f"{R}/logs/judge_probe/{{judge}}.log",
    benchmark:
        f"{R}/benchmarks/judge_probe/{{judge}}.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_judge_gpus,
        runtime=60,
    params:
        memrepro=INFER_MEMREPRO,
        job=job("judge_probe"),
        settings=get_judge_probe_settings,
    shell:
        "{params.memrepro} --job {params.job:q} --log {log:q} judge-probe --settings {params.settings:q}"
        " --model {input.model:q} --out {output:q} 2> {log:q}"
