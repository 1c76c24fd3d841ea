"""bench/cost/schedule_sim.py (issue 34): the list scheduling of `--cores N` on a toy DAG and the parsers it reads."""

from bench.cost import schedule_sim as sim


def jobs(*specs):
    out = {}
    for jid, rule, cpu, threads, prio, deps in specs:
        out[jid] = sim.Job(jid, rule, (f"out/{jid}",), threads, prio, cpu, True, jid, set(deps))
    return out


def test_a_two_thread_job_waits_for_both_cores_and_priority_starts_it_first(monkeypatch):
    monkeypatch.setattr(sim, "JOB_OVERHEAD_S", 0.0)
    monkeypatch.setattr(sim, "SPEEDUP", {"train": 2.0})
    # a 2-thread job (100 CPU-s: 50 s on 2 cores) beside four 1-thread jobs of 30 s
    dag = [(1, "train", 100, 2, 0, []), *[(k, "predict", 30, 1, 0, []) for k in range(2, 6)]]
    plain = sim.simulate(jobs(*dag), cores=2, use_priority=True)
    assert plain["start"][1] == 0.0 and plain["wall_s"] == 110.0  # first by build order
    late = [(1, "train", 100, 2, 0, []), *[(k, "predict", 30, 1, 1, []) for k in range(2, 6)]]
    res = sim.simulate(jobs(*late), cores=2, use_priority=True)
    assert res["start"][1] == 60.0 and res["wall_s"] == 110.0  # waits until both cores are free
    # a dependant chain: the job that unlocks more work first
    chain = [(1, "train", 100, 1, 0, []), (2, "predict", 100, 1, 0, [1]), (3, "predict", 100, 1, 0, []),
             (4, "predict", 100, 1, 0, [])]
    assert sim.simulate(jobs(*chain), 2, True)["wall_s"] == 200.0
    assert sim.critical_path(jobs(*chain))[0] == 200.0


def test_split_parts_run_side_by_side():
    dag = jobs((1, "warehouse", 10, 1, 0, []), (2, "report", 100, 1, 0, [1]), (3, "all", 0, 1, 0, [2]))
    sim.split_jobs(dag, "report", 2)
    assert len(dag) == 4 and all(j.cpu_s == 50 for j in dag.values() if j.rule == "report")
    assert sim.simulate(dag, 2, True)["wall_s"] < 70


def test_parse_a_job_listing_and_a_dag():
    listing = """
[Sat Nov 28 03:28:38 2026]
rule train_model:
    input: data/manifest.parquet, data/tokenizer
    output: data/models/code-mlm, reports/figures/models/loss_code-mlm.png
    jobid: 71
    threads: 2
    priority: 90
    resources: tmpdir=/tmp
[Sat Nov 28 03:28:39 2026]
localrule fetch_source:
    output: data/corpus/jdk
    jobid: 5
"""
    got = sim.parse_jobs(listing)
    assert (got[71].rule, got[71].outputs, got[71].threads, got[71].priority) == (
        "train_model", ("data/models/code-mlm", "reports/figures/models/loss_code-mlm.png"), 2, 90.0)
    assert got[5].rule == "fetch_source" and got[5].threads == 1
    assert sim.parse_edges("digraph {\n\t5 -> 71\n\t71 -> 80\n}") == [(5, 71), (71, 80)]
