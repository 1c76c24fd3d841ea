"""The command-line arguments every inference shard job shares."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_shard_arguments(ap: argparse.ArgumentParser, items: str) -> None:
    ap.add_argument("--model", required=True, help="zoo entry name")
    ap.add_argument("--zoo", required=True, help="models.zoo entries as JSON (the model's own, and its twin's)")
    ap.add_argument("--models-dir", type=Path, default=Path("data/models"))
    ap.add_argument("--shard", required=True, type=int, help="this job's shard, 0-based")
    ap.add_argument("--shards", required=True, type=int, help="shards in all")
    ap.add_argument("--max-items", type=int, default=0, help=f"a seeded subset of this many {items} (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--token-budget", type=int, default=8192, help="padded tokens per batch (rows x longest row)")
    ap.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, cuda:N")
    ap.add_argument("--dtype", default="float32", choices=["auto", "float32", "bfloat16", "float16"],
                    help="weights' precision when the zoo entry sets none (params.yaml inference.dtype); "
                    "scores and pooled features are computed in float32 from the model's outputs")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--out", required=True, type=Path, help="the shard's Parquet file (written atomically)")


def zoo_entry(args: argparse.Namespace):
    from pipeline.models.entries import parse_zoo

    return parse_zoo(json.loads(args.zoo))[args.model]


def dtype(args: argparse.Namespace, entry) -> str:
    """The zoo entry's own dtype wins over the run-wide one (params.yaml inference.dtype)."""
    return entry.dtype or args.dtype


def device(args: argparse.Namespace) -> str | None:
    return None if args.device == "auto" else args.device
