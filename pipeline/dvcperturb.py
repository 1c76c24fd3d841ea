"""The perturbation table: for each params leaf, the jobs Snakemake reruns against those DVC reruns.

`python -m pipeline.dvcperturb --params .test/params.yaml [--leaf KEY ...] [--before OLD_DVC_YAML]`
changes one leaf at a time (every key, every field of every list entry such as a zoo model, the
lists themselves), plans both tools and prints a Markdown table (docs/dvc.md holds the one for
`.test`). A leaf is changed the way `pipeline.dvcgen` perturbs keys (a number grows, a flag flips,
a list loses or gains an entry, a string changes); a leaf with no valid change is listed as such.

Both plans are computed from `snakemake -n --forceall` traces of the base and the changed params
(`pipeline.dvctrace`), with no build:
- Snakemake: the jobs whose params, input list or output list changed, and new jobs (its `params`
  and `input` rerun triggers), plus everything downstream of them (what `snakemake -n` lists on a
  built workspace);
- DVC: the stages whose `params:` values changed, plus every stage downstream of them (what
  `dvc repro --dry` lists), each counted as all of its jobs, since `dvc repro` deletes a stage's
  outs and reruns all of it.
"Missed" (must be 0) are jobs Snakemake reruns that no rerun DVC stage holds, and jobs whose own
params changed (or that are new) in a stage whose params did not change: DVC reaches those only if an
upstream out changes, and it may come out byte-identical (a family's generated items did: the
predictions that read its `inference` params never ran). "Over" are jobs DVC reruns that Snakemake would skip.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from pipeline.dvcgen import (
    REPO, collapse_outs, closure, job_fingerprint, job_key, perturbations, run_trace, stage_targets, targets_for,
    under, valid,
)


STALE = ("dvc.yaml stale",)  # the change alters which stages exist: regenerate (python -m pipeline.dvcgen)


@dataclass(frozen=True)
class Outcome:
    leaf: str
    value: str  # the changed value, shortened
    snakemake: int  # jobs Snakemake reruns
    dvc: dict  # label -> (stages rerun, jobs rerun, missed, over)


def leaves(config, path: str = "") -> list[str]:
    """Every leaf key: dict keys recursively, each field of each entry of a list of dicts (`models.zoo.2.batch_size`),
    and every other list as one leaf."""
    out = []
    if isinstance(config, dict):
        for key, value in config.items():
            out += leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(config, list) and config and all(isinstance(e, dict) for e in config):
        for i, entry in enumerate(config):
            out += leaves(entry, f"{path}.{i}")
    else:
        out.append(path)
    return out


def get(config, path: str):
    value = config
    for part in path.split("."):
        if isinstance(value, list):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return None
    return value


def put(config, path: str, new) -> None:
    parts = path.split(".")
    target = get(config, ".".join(parts[:-1])) if len(parts) > 1 else config
    if isinstance(target, list):
        target[int(parts[-1])] = new
    else:
        target[parts[-1]] = new


def expand_stages(dvc_yaml: dict, params: dict) -> dict[str, dict]:
    """dvc.yaml's stages with `foreach` expanded as DVC does (`family@<name>`, ...)."""
    stages = {}
    for name, stage in dvc_yaml["stages"].items():
        if "foreach" not in stage:
            stages[name] = stage
            continue
        for item in params[stage["foreach"].strip("${}")]:
            stages[f"{name}@{item}"] = yaml.safe_load(yaml.safe_dump(stage["do"]).replace("${item}", item))
    return stages


def stage_params(stage: dict) -> list[str]:
    """The dotted keys a stage depends on ("" for a whole params file)."""
    keys = []
    for entry in stage.get("params", []):
        if isinstance(entry, dict):
            for _file, ks in entry.items():
                keys += ks or [""]
        else:
            keys.append(entry)
    return keys


def paths_of(stage: dict, kind: str) -> list[str]:
    if kind == "deps":
        return list(stage.get("deps", []))
    return [next(iter(o)) if isinstance(o, dict) else o for k in ("outs", "metrics", "plots") for o in stage.get(k, [])]


class Plan:
    """A dvc.yaml's stages over a traced DAG: each stage's jobs, and which stages are downstream of which."""

    def __init__(self, stages: dict[str, dict], base: dict) -> None:
        self.stages = stages
        self.jobs = {job_key(j): j for j in base["jobs"]}
        producer = {f: k for k, j in self.jobs.items() for f in j.get("output", [])}
        claimed: set[str] = set()
        self.members: dict[str, set[str]] = {}
        for name, stage in stages.items():
            targets = stage["cmd"].split()[1:-2]  # snakemake <targets> --cores all
            own = set().union(*(closure(t, self.jobs, producer) for t in targets)) - claimed
            self.members[name] = own
            claimed |= own
        self.down: dict[str, set[str]] = {}
        for name in stages:
            outs = paths_of(stages[name], "outs")
            self.down[name] = {other for other in stages if other != name and any(
                under(d, o) or under(o, d) for d in paths_of(stages[other], "deps") for o in outs)}

    def invalidated(self, base_cfg: dict, new_cfg: dict) -> set[str]:
        """The stages whose own params changed (`dvc status` lists them)."""
        return {s for s, st in self.stages.items()
                if any(k == "" or get(base_cfg, k) != get(new_cfg, k) for k in stage_params(st))}

    def rerun(self, base_cfg: dict, new_cfg: dict) -> set[str]:
        """The stages `dvc repro --dry` lists after params.yaml changes (downstream ones included)."""
        todo = list(self.invalidated(base_cfg, new_cfg))
        seen: set[str] = set()
        while todo:
            s = todo.pop()
            if s not in seen:
                seen.add(s)
                todo += self.down[s]
        return seen


def direct_jobs(base: dict, new: dict) -> set[str]:
    """The jobs Snakemake reruns for their own sake: new ones and those whose params changed. A DVC stage
    holding one must itself be invalidated by the change (its upstream outs may come out byte-identical)."""
    old = {job_key(j): j for j in base["jobs"]}
    return {job_key(j) for j in new["jobs"] if j.get("output") and (
        job_key(j) not in old or old[job_key(j)].get("params") != j.get("params"))}


def snakemake_rerun(base: dict, new: dict) -> set[str]:
    """The jobs `snakemake -n` plans on a workspace built with the base params (keys in the new plan)."""
    old = {job_key(j): j for j in base["jobs"]}
    jobs = {job_key(j): j for j in new["jobs"]}
    producer = {f: k for k, j in jobs.items() for f in j.get("output", [])}
    todo = [k for k, j in jobs.items() if k not in old or job_fingerprint(old[k]) != job_fingerprint(j)]
    consumers: dict[str, set[str]] = {}
    for k, j in jobs.items():
        for f in j.get("input", []):
            if f in producer:
                consumers.setdefault(producer[f], set()).add(k)
    seen: set[str] = set()
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo += consumers.get(k, ())
    # target rules with no output (`all`, `corpus`, ...) are no work
    return {k for k in seen if jobs[k].get("output")}


def shares(config: dict, leaf: str) -> list[tuple]:
    """(value, changed config) for a number among sibling numbers that sum to 1 (the split's fractions): 0.05
    moved to it from its largest sibling, the only valid change of one such leaf. Nothing for other leaves."""
    parts = leaf.rsplit(".", 1)
    parent = get(config, parts[0]) if len(parts) == 2 else None
    value = get(config, leaf)
    if not isinstance(parent, dict) or isinstance(value, bool) or not isinstance(value, (int, float)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in parent.values()) \
            or abs(sum(parent.values()) - 1) > 1e-9 or len(parent) < 2:
        return []
    donor = max((k for k in parent if k != parts[1]), key=lambda k: (parent[k], k))
    if parent[donor] < 0.05:
        return []
    changed = copy.deepcopy(config)
    new = round(value + 0.05, 6)
    put(changed, leaf, new)
    put(changed, f"{parts[0]}.{donor}", round(parent[donor] - 0.05, 6))
    return [(f"{new} ({donor} {round(parent[donor] - 0.05, 6)})", changed)]


def sweep(params: Path, dvc_yamls: dict[str, dict], leaves_wanted: list[str] | None = None,
          workers: int = 2) -> list[Outcome]:
    config = yaml.safe_load(params.read_text())
    targets = [t for _, t in stage_targets(config)]
    for d in dvc_yamls.values():
        for st in expand_stages(d, config).values():
            targets += [t for t in st["cmd"].split()[1:-2] if t not in targets]
    targets = targets_for(config, targets)  # an older dvc.yaml may name targets this config lacks (a family off)
    base = run_trace(params, targets)
    plans = {label: Plan(expand_stages(d, config), base) for label, d in dvc_yamls.items()}

    def one(leaf: str):
        for value, changed in shares(config, leaf):  # a fraction among fractions summing to 1 (manifest.split)
            if not valid(changed):
                continue
            try:
                return leaf, value, changed, traced(changed)
            except RuntimeError:
                pass
        for value in perturbations(leaf, get(config, leaf), config):
            changed = copy.deepcopy(config)
            put(changed, leaf, value)
            if not valid(changed):  # refused by the checks every plan starts with: no trace needed
                continue
            try:
                return leaf, value, changed, traced(changed)
            except RuntimeError:
                continue
        return leaf, None, None, None

    def traced(changed: dict) -> dict:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
            yaml.safe_dump(changed, fh, sort_keys=False)
        try:
            return run_trace(Path(fh.name), targets_for(changed, targets), params.parent)
        finally:
            Path(fh.name).unlink()

    outcomes = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for leaf, value, changed, new in pool.map(one, leaves_wanted or leaves(config)):
            if new is None:
                outcomes.append(Outcome(leaf, "(no valid change)", -1, {}))
                continue
            sm = snakemake_rerun(base, new)
            direct = direct_jobs(base, new)
            text = yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("...").strip()
            shown = text if len(text) <= 30 else text[:27] + "..."
            # a renamed, added or removed model (or family): the generated stages are others, `dvcgen --check`
            # fails and `dvc repro` stops at the first target rule that is gone: regenerate dvc.yaml
            stale = [n for n, _ in stage_targets(changed)] != [n for n, _ in stage_targets(config)]
            dvc = {}
            for label, plan in plans.items():
                stages = plan.rerun(config, changed)
                # DVC's jobs: every job the rerun stages hold in the new plan
                new_plan = Plan(plan.stages, new)
                jobs = {k for s in stages for k in new_plan.members[s] if new_plan.jobs[k].get("output")}
                covered = {k for s in plan.invalidated(config, changed) for k in new_plan.members[s]}
                missed = (sm - jobs) | (direct - covered)
                dvc[label] = (len(stages), len(jobs), len(missed), len(jobs - sm))
            if stale and "after" in dvc:
                dvc["after"] = STALE
            outcomes.append(Outcome(leaf, shown, len(sm), dvc))
    return outcomes


def table(outcomes: list[Outcome], labels: list[str]) -> str:
    head = "| params leaf | changed to | Snakemake jobs | " + " | ".join(
        f"{label}: stages / jobs / missed / over" for label in labels) + " |"
    lines = [head, "|" + "---|" * (3 + len(labels))]
    for o in outcomes:
        cells = [" / ".join(str(x) for x in o.dvc[label]) if label in o.dvc else "" for label in labels]
        lines.append(f"| `{o.leaf}` | `{o.value}` | {o.snakemake if o.snakemake >= 0 else ''} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def totals(outcomes: list[Outcome], labels: list[str]) -> str:
    stale = [o for o in outcomes if o.snakemake >= 0 and o.dvc.get("after") == STALE]
    done = [o for o in outcomes if o.snakemake >= 0 and o.dvc.get("after") != STALE]
    out = [f"{len(done)} leaves changed ({len(outcomes) - len(done) - len(stale)} with no valid change, "
           f"{len(stale)} that change which stages exist: dvc.yaml stale, regenerated by `python -m pipeline.dvcgen`); "
           f"Snakemake reruns {sum(o.snakemake for o in done)} jobs in all."]
    for label in labels:
        missed = sum(o.dvc[label][2] for o in done)
        over = sum(o.dvc[label][3] for o in done)
        out.append(f"{label}: {sum(o.dvc[label][1] for o in done)} jobs rerun, {missed} missed in "
                   f"{sum(1 for o in done if o.dvc[label][2])} leaves, {over} over-recomputed in "
                   f"{sum(1 for o in done if o.dvc[label][3])} leaves.")
    return "\n".join(out)


def generated(params: Path) -> dict:
    from pipeline.dvcgen import generate

    return yaml.safe_load(generate(params))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.dvcperturb", description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", type=Path, default=REPO / ".test" / "params.yaml",
                        help="the params file to perturb (default: the .test configuration)")
    parser.add_argument("--leaf", action="append", help="only these leaves (default: every leaf)")
    parser.add_argument("--before", type=Path, help="an older dvc.yaml to compare with (e.g. from git show)")
    parser.add_argument("--after", type=Path, help="the dvc.yaml generated for --params, when already written "
                        "(default: generate it, `python -m pipeline.dvcgen --params ... --out ...`)")
    args = parser.parse_args(argv)
    yamls = {}
    if args.before:
        yamls["before"] = yaml.safe_load(args.before.read_text())
    yamls["after"] = yaml.safe_load(args.after.read_text()) if args.after else generated(args.params)
    outcomes = sweep(args.params, yamls, args.leaf)
    print(table(outcomes, list(yamls)))
    print()
    print(totals(outcomes, list(yamls)))
    return 1 if any(o.dvc.get("after", (0, 0, 0, 0)) != STALE and o.dvc.get("after", (0, 0, 0, 0))[2]
                    for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
