"""The one shard runner: `python -m pipeline.runtime.predict --family F --subset S --model M --shard I ...`.

One Snakemake job per (family, subset, model, shard) runs this. It loads the model once (with
attentions or hidden states when the family asks), hands the family's task a `ShardContext`
(inputs, params, the loaded model, shard selection, token budget), and writes the task's table
atomically in the family's predictions schema, with the family's name and version in the
Parquet metadata. Items are selected by `ctx.select(ids, max_items)`: a seeded subset, split
by a stable hash of each id, so 1 or 4 shards give the same rows in total.

Models a family does not apply to never reach this: they get no job (see
`pipeline.registry.not_applicable`), and the runner refuses them with a clear message.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pyarrow as pa

from pipeline import registry as families
from pipeline.core import logs
from pipeline.io import write_parquet
from pipeline.core.labels import LABELS
from pipeline.models.entries import cap_labels
from pipeline.runtime.batching import select_shard
from pipeline.runtime.cli import add_shard_arguments, device, dtype, zoo_entry

log = logging.getLogger("pipeline.runtime.predict")


@dataclass(frozen=True)
class ShardContext:
    family: families.Family
    subset: str
    inputs: dict[str, Path]  # the subset's input files, by the names the family declared
    params: dict  # the family's params block
    loaded: object  # pipeline.models.zoo.LoadedModel
    shard: int
    shards: int
    seed: int
    token_budget: int

    @property
    def description(self) -> str:
        return f"{self.family.name}/{self.subset} {self.loaded.entry.name} shard {self.shard}/{self.shards}"

    def select(self, ids: list[str], max_items: int = 0, keys: list[str] | None = None,
               strata: Sequence | None = None, floor: int = 0) -> pa.Array:
        """Which of these rows this shard scores (a boolean mask): `draw` with the model's caps. `keys`: each row's
        stratum value (the family's `Inference.strata`), drawn from per value when the model's cap names values
        (`stratum_caps`), and per contamination label when it names labels (`item_labels`, looked up here only
        then; matched by group when the entry's `matched_draw` names the family). `strata` and `floor`: the family's own stratified draw (at least `floor` of each stratum)."""
        caps = stratum_caps(self.params)
        labels = matched = None
        if cap_labels(caps):
            dates = self.item_dates()
            labels = item_labels(dates, ids, self.loaded.entry.training_cutoff)
            if self.family.name in getattr(self.loaded.entry, "matched_draw", ()):
                if self.family.inference.item_dates.group is None:
                    raise ValueError(f"{self.description}: {self.family.name}'s item dates have no group to match "
                                     "by; drop it from the zoo entry's matched_draw")
                matched = item_columns(dates, ids, "group", "date_basis")
        return pa.array(draw(ids, self.shard, self.shards, max_items, self.seed, caps, keys, labels, strata, floor,
                             matched), type=pa.bool_())

    def item_dates(self) -> pa.Table:
        """The family's item dates (`inputs["item_dates"]`: the warehouse's own dating SQL, pipeline.warehouse.dates),
        for a model with a training_cutoff: each item's label is its date against that cutoff (item_labels)."""
        from pipeline.io import read_parquet

        if not getattr(self.loaded.entry, "training_cutoff", None):
            raise ValueError(f"{self.description}: a draw by contamination label needs the model's training_cutoff")
        if "item_dates" not in self.inputs:
            raise ValueError(f"{self.description}: a draw by contamination label needs the family's item dates "
                             "(--inputs item_dates; rules/common.smk gives them to a model whose cap names labels)")
        return read_parquet(self.inputs["item_dates"], ITEM_DATES)


def run_shard(family: families.Family, subset: str, inputs: dict[str, Path], params: dict, loaded, shard: int,
              shards: int, seed: int, token_budget: int) -> pa.Table:
    """Run the family's task on one shard; the table comes back in the family's predictions schema."""
    if not family.applies_to(loaded.entry.model_family, subset):
        raise ValueError(f"{family.name}/{subset} does not apply to {loaded.entry.name} ({loaded.entry.model_family}): "
                         f"{family.inference.not_applicable if family.inference else 'the family runs no model'}")
    task = importlib.import_module(family.inference.task_for(subset))
    entry = loaded.entry
    params = cap_items(params, entry.items_cap(family.name) if hasattr(entry, "items_cap") else None)
    ctx = ShardContext(family, subset, inputs, params, loaded, shard, shards, seed, token_budget)
    table = task.predict(ctx)
    return table.select(family.inference.schema.names).cast(family.inference.schema)


def cap_items(params: dict, cap: int | dict | None) -> dict:
    """The family's params with every `max_items` / `*_max_items` key at most `cap` (a zoo entry's
    `max_items`: a big model scores a smaller seeded subset; 0, meaning all, becomes `cap`). A
    `min_per_stratum` beside a capped `max_items` shrinks by the same ratio (rounded down, at least 1
    where it was set): its floors win over the cap, so 15 strata x 40 would make SmolLM2's `max_items: 100`
    score 600 quizzes (measured: its apiquiz predictions took about 40 CPU-minutes per model).

    A cap per stratum value ({value: n}, e.g. settings {call: 100, import: 100}) caps as their sum and
    is kept beside every capped `max_items` as `stratum_caps`: the family's draw then takes n items of each
    named value and none of the others (`stratum_caps(params)`, `ShardContext.select(..., keys=)`). So does a
    cap per contamination label ({label: n}, or a value's {label: n}: `capped_keys`)."""
    if not cap:
        return params
    per = {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in sorted(cap.items())} \
        if isinstance(cap, dict) else None
    total = sum(sum(v.values()) if isinstance(v, dict) else v for v in per.values()) if per else cap

    def walk(value):
        if not isinstance(value, dict):
            return value
        out = {k: (min(v, total) if v else total) if k.endswith("max_items") and isinstance(v, int) else walk(v)
               for k, v in value.items()}
        old, new = value.get("max_items"), out.get("max_items")
        if isinstance(value.get("min_per_stratum"), int) and value["min_per_stratum"] and isinstance(new, int) \
                and old != new:
            out["min_per_stratum"] = max(1, value["min_per_stratum"] * new // old) if old else value["min_per_stratum"]
        if per and isinstance(new, int):
            out[STRATUM_CAPS] = per
        return out

    return walk(params)


# One row per item a family labels (pipeline.warehouse.dates writes them before inference): its date as the
# warehouse's labels read it. Here, not in pipeline.contamination: the runtime reads it, never that package.
ITEM_DATES = pa.schema([
    pa.field("item_id", pa.string(), nullable=False),  # the item's id in the family's items (quiz_id, point_id)
    pa.field("released", pa.date32(), nullable=True),  # its date (first pinned release of its code, else its file's)
    pa.field("date_basis", pa.string(), nullable=True),  # first_seen / since_tag / release / none
    # the unit a matched draw balances across the two sides (ItemDates.group, e.g. a library); null: none
    pa.field("group", pa.string(), nullable=True),
])
# the date bases a matched draw takes: an item dated by a first release (its code's or its API's), never by a
# release that may postdate it (`release`: an upper bound) or by nothing
MATCHED_BASES = ("first_seen", "since_tag")


def matched_keys(caps: dict, labels: Sequence[str | None], groups: Sequence[str | None],
                 bases: Sequence[str | None]) -> tuple[dict, list[str | None]]:
    """select_shard's caps and keys for a matched draw by label (docs/contamination.md, "A matched draw"): of the
    items dated by a first release (MATCHED_BASES) in a group (a library) that has such items on both sides, the
    same number per group on each side, n = the smaller label cap split over the groups in proportion to the
    smaller side's items in each (largest remainders, ties by group name; a group gives at most what it has).
    Keys are `label@group`; any other item is not drawn."""
    sides = sorted(caps)
    have: dict[str, dict[str, int]] = {label: {} for label in sides}
    for label, group, basis in zip(labels, groups, bases):
        if label in have and group is not None and basis in MATCHED_BASES:
            have[label][group] = have[label].get(group, 0) + 1
    shared = sorted(set.intersection(*(set(h) for h in have.values()))) if have else []
    weight = {g: min(have[label][g] for label in sides) for g in shared}
    n, total = min(caps.values()), sum(weight.values())
    if total <= n:
        alloc = dict(weight)
    else:
        quota = {g: n * w / total for g, w in weight.items()}
        alloc = {g: int(q) for g, q in quota.items()}
        for g in sorted(shared, key=lambda g: (-(quota[g] - alloc[g]), g))[:n - sum(alloc.values())]:
            alloc[g] += 1
    out = {f"{label}@{g}": k for label in sides for g, k in alloc.items() if k}
    keys = [f"{label}@{group}" if label in have and basis in MATCHED_BASES and f"{label}@{group}" in out else None
            for label, group, basis in zip(labels, groups, bases)]
    return out, keys


def cutoff_label(released: dt.date | None, cutoff: dt.date, date_basis: str | None = None) -> str:
    """A cutoff model's label of an item of this date, as the warehouse's `contamination_label` macro gives it for
    basis `cutoff` (pipeline/warehouse/sql/30_contamination.sql; tests/test_contamination.py checks the two agree
    on every item of a build): a `release` date (an upper bound on the code's age) after the cutoff is `unknown`."""
    if released is None:
        return "unknown"
    if released <= cutoff:
        return "released_before_cutoff"
    return "unknown" if date_basis == "release" else "released_after_cutoff"


def item_labels(dates: pa.Table, ids: Sequence[str], cutoff: dt.date | str) -> list[str | None]:
    """Each id's label for a model with this cutoff, from a family's item dates (ITEM_DATES); None for an id the
    warehouse gives no label (not in the dates: e.g. a context-leaking nl quiz), which no draw by label takes."""
    cutoff = dt.date.fromisoformat(cutoff) if isinstance(cutoff, str) else cutoff
    return [cutoff_label(released, cutoff, basis) if i is not None else None
            for i, released, basis in zip(*item_columns(dates, ids, "item_id", "released", "date_basis"))]


def item_columns(dates: pa.Table, ids: Sequence[str], *columns: str) -> list[list]:
    """The item dates' `columns` for each id, one list per column (None for an id not in the dates)."""
    by_id = dict(zip(dates.column("item_id").to_pylist(), zip(*(dates.column(c).to_pylist() for c in columns))))
    missing = (None,) * len(columns)
    return [list(col) for col in zip(*(by_id.get(i, missing) for i in ids))] if ids else [[] for _ in columns]


STRATUM_CAPS = "stratum_caps"  # the key cap_items adds beside a capped max_items: {stratum value or label: n}


def stratum_caps(params: dict) -> dict | None:
    """The per-stratum caps cap_items put into a family's params (its `inference` block, or the top level), if any:
    {value or label: n, or a value's {label: n}}."""
    for block in (params.get("inference"), params):
        if isinstance(block, dict) and block.get(STRATUM_CAPS):
            return dict(block[STRATUM_CAPS])
    return None


def draw(ids: Sequence[str], shard: int, shards: int, max_items: int, seed: int, caps: dict | None = None,
         values: Sequence[str | None] | None = None, labels: Sequence[str | None] | None = None,
         strata: Sequence | None = None, floor: int = 0,
         matched: tuple[Sequence[str | None], Sequence[str | None]] | None = None) -> list[bool]:
    """The one draw of every family's items: which rows shard `shard` of `shards` scores. `max_items` rows seeded
    by `seed` (stratified by `strata`, at least `floor` of each, when given); with a zoo cap per stratum value
    and/or contamination label (`caps`, `stratum_caps`) n of each named value (`values`, each row's) and/or label
    (`labels`, each row's) instead (`capped_keys`); with `matched` (each row's group and date basis) the label
    caps matched by group (`matched_keys`). The same rows whatever the shard count."""
    if matched is not None:
        mcaps, keys = matched_keys(caps, labels, *matched)
        if not mcaps:
            raise ValueError(f"a matched draw found no group (library) with items dated by a first release "
                             f"({', '.join(MATCHED_BASES)}) on both sides of the cutoff; a source's history gives "
                             "first releases (docs/contamination.md), or drop matched_draw")
        # within each group and side the family's strata proportionally but no per-stratum floor: a floor applies
        # per key, and a matched draw has a key per group and side (14 keys x 10 strata x 8 took 600, not 200)
        return select_shard(ids, shard, shards, max_items, seed, strata, 0, caps=mcaps, keys=keys)
    by_key = capped_keys(caps, values, labels) if caps and (values is not None or labels is not None) else {}
    return select_shard(ids, shard, shards, max_items, seed, strata, floor, **by_key)


def capped_keys(caps: dict, values: Sequence[str | None] | None,
                labels: Sequence[str | None] | None = None) -> dict:
    """select_shard's `caps` and `keys` for a zoo cap per stratum value and/or contamination label: a value's cap
    (`call: 100`) keys each row by its value, a label's (`released_after_cutoff: 100`, every value pooled) by its
    label, a value's caps per label (`call: {released_after_cutoff: 50}`) by both (`call/released_after_cutoff`).
    A row whose key no cap names is not drawn (its value or label unnamed, or None: an item without a label)."""
    flat = {}
    for k, v in caps.items():
        for label, n in (v.items() if isinstance(v, dict) else [(None, v)]):
            flat[f"{k}/{label}" if label else k] = n
    if labels is None and cap_labels(caps):
        raise ValueError("capped_keys: caps per contamination label need each row's label")
    if values is None and any(k not in LABELS for k in caps):
        raise ValueError("capped_keys: caps per stratum value need each row's value")
    n = len(values if values is not None else labels)
    keys = []
    for i in range(n):
        value = values[i] if values is not None else None
        label = labels[i] if labels is not None else None
        if value is not None and isinstance(caps.get(value), dict):
            keys.append(f"{value}/{label}" if label else None)
        elif value is not None and value in caps:
            keys.append(value)
        else:
            keys.append(label if label in caps else None)
    return {"caps": flat, "keys": keys}


def predictions_schema(family: families.Family) -> pa.Schema:
    """The family's predictions schema with its name and version in the file's metadata."""
    return family.inference.schema.with_metadata({"family": family.name, "family_version": family.version})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pipeline.runtime.predict",
        description="Run one benchmark family's inference task on one shard with one zoo model, and write "
        "the shard's predictions atomically (the family's predictions schema). Snakemake's `predict` rule "
        "runs one of these per (family, subset, model, shard).",
    )
    ap.add_argument("--family", required=True, help="benchmark family (params.yaml families)")
    ap.add_argument("--subset", required=True, help="the family's subset, e.g. a language")
    ap.add_argument("--inputs", required=True, help="the subset's input files as JSON {name: path}")
    ap.add_argument("--params", required=True, help="the family's params block as JSON")
    add_shard_arguments(ap, "items")
    args = ap.parse_args(argv)
    logs.setup()
    import torch

    from pipeline.models.zoo import load_model

    family = families.load(args.family)
    if family.inference is None:
        ap.error(f"{family.name} runs no model")
    torch.set_num_threads(args.threads)
    entry = zoo_entry(args)
    loaded = load_model(entry, attentions=family.inference.attentions, hidden_states=family.inference.hidden_states,
                        device=device(args), dtype=dtype(args, entry), models_dir=args.models_dir)
    inputs = {k: Path(v) for k, v in json.loads(args.inputs).items()}
    table = run_shard(family, args.subset, inputs, json.loads(args.params), loaded, args.shard, args.shards,
                      args.seed, args.token_budget)
    write_parquet(table, args.out, predictions_schema(family))
    log.info("%s/%s %s shard %d/%d: %d rows", family.name, args.subset, entry.name, args.shard, args.shards,
             table.num_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
