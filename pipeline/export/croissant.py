"""croissant.json for an exported family: Croissant 1.0 metadata, made with mlcroissant's own classes (so it is the
JSON-LD mlcroissant validates and loads): one FileObject per Parquet file with its sha256, one RecordSet per config
and split, a Field per column with its type."""

from __future__ import annotations

import json
from pathlib import Path

import mlcroissant as mlc

# Arrow type (as str(pa.DataType)) -> Croissant data type; lists are repeated fields of the item type
TYPES = {"string": mlc.DataType.TEXT, "large_string": mlc.DataType.TEXT, "bool": mlc.DataType.BOOL,
         "int8": mlc.DataType.INTEGER, "int16": mlc.DataType.INTEGER, "int32": mlc.DataType.INTEGER,
         "int64": mlc.DataType.INTEGER, "float": mlc.DataType.FLOAT, "double": mlc.DataType.FLOAT,
         "date32[day]": mlc.DataType.DATE, "timestamp[us]": mlc.DataType.DATE}


def field_type(arrow: str) -> tuple[str, bool]:
    """(Croissant data type, repeated) of an Arrow type string: `list<element: string>` is a repeated Text."""
    if arrow.startswith(("list<", "large_list<")):
        inner = arrow.split(":", 1)[1].strip().rstrip(">").strip() if ":" in arrow else "string"
        return TYPES.get(inner, mlc.DataType.TEXT), True
    return TYPES.get(arrow, mlc.DataType.TEXT), False


def render(summary: dict, folder: Path) -> str:
    ctx = mlc.Context()
    files, record_sets = [], []
    for cfg in summary["configs"]:
        for split in cfg["splits"]:
            fid = split["file"]
            files.append(mlc.FileObject(ctx=ctx, id=fid, name=fid, content_url=fid,
                                        encoding_formats=[mlc.EncodingFormat.PARQUET],
                                        sha256=split["sha256"], content_size=f"{split['bytes']} B"))
            rs_id = f"{cfg['name']}/{split['split']}"
            fields = []
            for name, arrow in cfg["fields"]:
                dtype, repeated = field_type(arrow)
                fields.append(mlc.Field(ctx=ctx, id=f"{rs_id}/{name}", name=name, data_types=[dtype],
                                        repeated=repeated or None,
                                        source=mlc.Source(ctx=ctx, file_object=fid, extract=mlc.Extract(
                                            ctx=ctx, column=name))))
            record_sets.append(mlc.RecordSet(ctx=ctx, id=rs_id, name=rs_id, key=f"{rs_id}/{cfg['key']}",
                                             description=f"{cfg['description']} ({split['split']} split, "
                                                         f"{split['rows']:,} rows)", fields=fields))
    build = summary["build"]
    licenses = sorted({lic for cfg in summary["configs"] for _, lic in cfg["licenses"]})
    metadata = mlc.Metadata(
        ctx=ctx, name=f"{summary['family']}", description=(
            f"{summary['title']}: rebuilt from raw source code by the benchmark factory. Paper: {summary['paper']}. "
            f"Built by `{build['command']}` at commit {build['commit']} (params sha256 {build['params_sha256']})."),
        cite_as=summary.get("citation") or summary["paper"], license=licenses or None,
        url="https://huggingface.co/datasets/" + summary["family"], version="1.0.0",
        distribution=files, record_sets=record_sets)
    return json.dumps(metadata.to_json(), indent=2, ensure_ascii=False, sort_keys=False, default=str) + "\n"
