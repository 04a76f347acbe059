# MemAgent on RULER-HQA for every (system, doc count) — reference/memagent_official.md §2


rule evaluate_memagent:
    input:
        data=f"{R}/data/ruler_hqa/eval_{{n_docs}}.jsonl",
        dev_raw=raw("hotpotqa_dev"),
        model=get_eval_model,
    output:
        predictions=f"{R}/eval/ruler_hqa/{{system}}/{{n_docs}}.predictions.jsonl",
        metrics=f"{R}/eval/ruler_hqa/{{system}}/{{n_docs}}.metrics.json",
    log:
        f"{R}/logs/evaluate_memagent/{{system}}/{{n_docs}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate_memagent/{{system}}/{{n_docs}}.tsv"
    conda:
        "../../envs/infer.yaml"
    container:
        CONTAINERS["infer"]
    resources:
        gpu=get_eval_gpus,
        runtime=720,
    params:
        job=job("evaluate_memagent"),
        settings=get_eval_settings,
    shell:
        "memrl --job {params.job:q} --log {log:q} evaluate --settings {params.settings:q} --data {input.data:q}"
        " --dev-raw {input.dev_raw:q} --model {input.model:q}"
        " --predictions {output.predictions:q} --metrics {output.metrics:q} 2> {log:q}"
