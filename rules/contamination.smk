# Known contamination (docs/contamination.md): each source's older pinned releases (`history`), fetched and
# verified like the source itself, and every function and API of the current release marked with the first
# release it appears in; a JDK source's APIs with the release its own @since tags name. Sources without either:
# no rows (their items are dated by the release).

from pipeline.contamination.firstseen import version_of as _version_of

HISTORY = {
    (s["name"], _version_of(h["package"])): {
        "name": s["name"], "kind": s["kind"], **{k: v for k, v in h.items()},
        **{k: s[k] for k in ("include", "exclude", "repository") if k in s},
    }
    for s in config["corpus"]["sources"]
    for h in s.get("history", [])
}
if len(HISTORY) != sum(len(s.get("history", [])) for s in config["corpus"]["sources"]):
    raise ValueError("params.yaml: a corpus source's history names one version twice; each older release once")


rule fetch_history:
    output:
        tree=directory("data/history/{source}/{version}"),
        record="data/history/{source}/{version}.json",
        rejects="data/history/{source}/{version}.rejects.parquet",
        origins="data/history/{source}/{version}.origins.parquet",
    params:
        spec=lambda wildcards: json.dumps(HISTORY[(wildcards.source, wildcards.version)], sort_keys=True),
        limits=as_json(config["corpus"]["limits"]),
        cache=config["corpus"]["cache_dir"],
    conda:
        CONDA_ENV
    wildcard_constraints:
        version="|".join(re.escape(v) for _, v in HISTORY) or "(?!)",
    log:
        "logs/fetch/{source}@{version}.log",
    shell:
        "python -m pipeline.corpus.fetch --spec {params.spec:q} --limits {params.limits:q}"
        " --cache {params.cache:q} --dest {output.tree:q} --record {output.record:q}"
        " --rejects {output.rejects:q} --origins {output.origins:q} 2> {log:q}"


rule first_seen:
    input:
        manifest="data/manifest.parquet",
        trees=[f"data/history/{s}/{v}" for s, v in HISTORY],
        records=[f"data/history/{s}/{v}.json" for s, v in HISTORY],
    output:
        functions="data/contamination/first_seen_functions.parquet",
        apis="data/contamination/first_seen_apis.parquet",
        metrics="data/contamination/first_seen.json",
    params:
        sources=as_json([
            {"name": s["name"], "package": s["package"], "released": s.get("released"),
             "history": [{"package": h["package"], "released": h.get("released"),
                          "tree": f"data/history/{s['name']}/{_version_of(h['package'])}",
                          "record": f"data/history/{s['name']}/{_version_of(h['package'])}.json"}
                         for h in s["history"]]}
            for s in config["corpus"]["sources"] if s.get("history")
        ]),
        # the JDK sources: their APIs dated by the JDK's own @since tags (pipeline.contamination.since)
        since=as_json([s["name"] for s in config["corpus"]["sources"] if s.get("builtin") == "jdk"]),
    conda:
        CONDA_ENV
    log:
        "logs/first_seen.log",
    shell:
        "python -m pipeline.contamination.firstseen --manifest {input.manifest:q} --sources {params.sources:q}"
        " --since {params.since:q} --functions {output.functions:q} --apis {output.apis:q} --metrics {output.metrics:q} 2> {log:q}"


# A family's item dates before inference (pipeline.warehouse.dates: the warehouse's own dating SQL over the
# same Parquet files), for a zoo cap that draws by contamination label; only such a model's predict jobs ask for
# them (task_inputs), so no other build plans this job.
ITEM_DATED = [f for f in PREDICTED if f.inference.item_dates is not None]


rule item_dates:
    input:
        tables=lambda wildcards: sorted({f for files in item_dates_tables(wildcards).values() for f in files}),
        sql=item_dates_sql,
    output:
        item_dates_path("{family}"),
    wildcard_constraints:
        family=_names([f.name for f in ITEM_DATED]),
    params:
        tables=lambda wildcards: as_json(item_dates_tables(wildcards)),
    conda:
        CONDA_ENV
    log:
        "logs/contamination/item_dates/{family}.log",
    shell:
        "python -m pipeline.warehouse.dates --family {wildcards.family} --tables {params.tables:q}"
        " --out {output:q} 2> {log:q}"
