"""params.yaml, validated before the first job: the central schema (schemas/params.schema.yaml)
composed with each selected family's own fragment, plus the checks a schema cannot express
(zoo names that inference refers to). Every problem is one line naming the key."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Mapping

import jsonschema

from pipeline import families

SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "params.schema.yaml"


class ParamsError(ValueError):
    pass


def _where(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def validate(config: Mapping, schema_path: Path = SCHEMA) -> None:
    """Raise ParamsError naming the first offending key (the most specific error)."""
    try:
        schema = families.params_schema(schema_path, config)
    except (ValueError, TypeError) as exc:
        raise ParamsError(str(exc)) from None
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(config)))
    if error is not None:
        message = error.message if len(error.message) < 300 else error.message[:300] + " ..."
        raise ParamsError(f"params.yaml {_where(error.absolute_path)}: {message}")
    check_interpreter(config["python"]["require"])
    zoo = {e["name"] for e in config["models"]["zoo"]}
    unknown = [m for m in config["inference"]["models"] if m not in zoo]
    if unknown:
        raise ParamsError(f"params.yaml inference.models: {', '.join(map(repr, unknown))} not in models.zoo "
                          f"(the zoo has: {', '.join(sorted(zoo))}); add an entry to models.zoo or fix the name")


def check_interpreter(required: str, running: str | None = None) -> None:
    """Refuse to build on another interpreter than params.yaml `python.require`: outputs depend on it
    (tokenization of f-strings, the stdlib source in the corpus, libraries' wheels)."""
    running = running or platform.python_version()
    if running != required:
        raise ParamsError(
            f"params.yaml python.require: this is Python {running}, but outputs are built with Python {required} "
            f"(another version changes them: CodeSyntax samples, the stdlib corpus). Run `make install` to create "
            f".venv on Python {required} and use .venv/bin/snakemake, or, to build on {running} knowingly "
            f"(results not comparable with {required}'s), set python.require: \"{running}\" in params.yaml")
