"""Every table's schema, declared once; writers, readers and tests import them from here."""

import pyarrow as pa

MANIFEST = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),  # stable id: hash of (source, location)
        pa.field("sha256", pa.string(), nullable=False),  # content hash
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),  # relative to the source root (package root)
        pa.field("location", pa.string(), nullable=False),  # where the bytes are, relative to the project
        pa.field("language", pa.string(), nullable=False),
        pa.field("encoding", pa.string(), nullable=False),  # how the text decodes (PEP 263 cookie for Python)
        pa.field("bytes", pa.int64(), nullable=False),
        pa.field("lines", pa.int64(), nullable=False),
        pa.field("split", pa.string(), nullable=False),  # train / valid / test, by repository
        pa.field("duplicate", pa.bool_(), nullable=False),  # same sha256 seen earlier in (source, repository, path) order
        pa.field("license", pa.string(), nullable=True),  # the source's SPDX license, `unknown` when none says (null: a manifest made by hand)
        pa.field("released", pa.date32(), nullable=True),  # the source's pinned release date (null: unknown)
    ]
)

REJECTS = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=True),
        pa.field("path", pa.string(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),  # fetch / manifest / extract / ...
        pa.field("reason", pa.string(), nullable=False),  # a short code, see REJECT_REASONS
        pa.field("detail", pa.string(), nullable=True),
        pa.field("bytes", pa.int64(), nullable=True),
    ]
)

# Files the scan of a source sees, before splits and duplicates are decided.
SCANNED = pa.schema([f for f in MANIFEST if f.name not in ("split", "duplicate", "license", "released")])

# Where the files of a `jsonl` source came from: the dump's repo and path per materialised file.
ORIGINS = pa.schema(
    [
        pa.field("location", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
    ]
)

REJECT_REASONS = {
    # fetch: archive and folder extraction
    "absolute_path": "member path is absolute",
    "parent_traversal": "member path contains '..'",
    "link_escapes_tree": "symbolic or hard link pointing outside the tree",
    "link_internal": "link inside the tree; its target is kept, the link is not materialised",
    "special_file": "device, FIFO or other non-regular member",
    "member_limit": "more files than limits.max_members (or entries of any kind than twice that): the rest not read",
    "size_limit": "archive would exceed limits.max_total_bytes",
    "too_large": "file (or jsonl line) is larger than limits.max_file_bytes (a jsonl line: 6x that + 64 KiB)",
    "bad_name": "the path is not UTF-8, has control characters, or cannot be a file name here",
    "path_collision": "a file and a folder of the same path in one source (the first is kept)",
    "duplicate_member": "a second member with the same path (the first is kept)",
    "reserved_name": "a top-level .snakemake_timestamp, the name Snakemake writes into every folder output",
    "corrupt_member": "the member's bytes fail their CRC, decompression or end early",
    "corrupt_archive": "the archive (or gzipped dump) breaks off here; members before it are kept",
    "bad_record": "jsonl line is not a UTF-8 JSON object with string repo, path, code, language (or nests too deep)",
    # fetch: a whole source (status `failed` in its record, the run goes on without it; skipped for a builtin)
    "source_unavailable": "the source cannot be reached or found: an index, url, path or git commit",
    "pin_mismatch": "the download's hash is not the one params.yaml pins (nothing cached or extracted)",
    "unpinned": "a local zip or tar without a sha256 pin (and without `unpinned: true`): not read",
    "bad_archive": "the pinned file is not a readable zip or tar archive",
    # manifest: a source whose license corpus.licenses.allow does not list (every file of it, detail: the license)
    "license": "the source's license is not in corpus.licenses.allow",
    # manifest
    "not_source": "not a source file of a known language",
    "language_not_selected": "source file of a language not in manifest.languages",
    "binary": "contains NUL bytes",
    "undecodable": "bytes do not decode in the declared or default encoding",
    "excluded": "matches a manifest.exclude pattern: not code of the project (vendored copy, test data, cache)",
    # extract and the syntax labellers (per file or per function; too_large is reused with each stage's cap)
    "syntax_error": "CPython's, libcst's or tokenize's parser rejects the file or the cut function (e.g. Python 2 syntax)",
    "too_deep": "nesting too deep to parse or label safely (RecursionError, too many nested parentheses)",
    "timeout": "analysis ran past extract.timeout_s (not cached: depends on machine load)",
    "worker_crash": "the analysing process died on this file (not cached)",
    "parse_error": "tree-sitter found ERROR or MISSING nodes inside the method",
    "too_many_tokens": "the function has more tokens than its family's max_tokens",
    "too_complex": "the file has more tokens than its stage's max_file_tokens: not parsed (a parse's memory grows per "
                   "token; pipeline.core.budget)",
}

# Stage 3, static API extraction (pipeline.extract). One row per (manifest row, usage): files
# with the same content share one analysis but each keeps its own rows, module and split.
USAGES = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("sha256", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),  # the file's dotted module name inside its repository
        pa.field("line", pa.int32(), nullable=False),  # 1-based
        pa.field("col", pa.int32(), nullable=False),  # 0-based, in characters
        pa.field("kind", pa.string(), nullable=False),  # call (name()), method (a.b()), reference (a.b), decorator (@name)
        pa.field("chain", pa.string(), nullable=True),  # the name chain as written; null when the callee is no chain
        pa.field("attr", pa.string(), nullable=True),  # called attribute of a non-chain callee (`a.b().c()` -> c)
        pa.field("fqn", pa.string(), nullable=True),  # fully qualified name; null when unresolved
        pa.field("category", pa.string(), nullable=False),  # stdlib / user_defined / third_party / unknown
        pa.field("via", pa.string(), nullable=True),  # import / def / builtin: what resolved the chain's head
        pa.field("import_target", pa.string(), nullable=True),  # what the imported head name denotes (via import)
        pa.field("alias", pa.string(), nullable=True),  # the head name when it comes from `import ... as alias`
        pa.field("import_statement", pa.string(), nullable=True),  # that aliasing import, normalised
        pa.field("enclosing_class", pa.string(), nullable=True),  # qualname of the innermost class
        pa.field("enclosing_function", pa.string(), nullable=True),  # qualname of the innermost function
    ]
)

IMPORTS = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),  # the importing file's module
        pa.field("line", pa.int32(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # import / from
        pa.field("imported", pa.string(), nullable=False),  # module as written, leading dots included
        pa.field("level", pa.int32(), nullable=False),  # number of leading dots
        pa.field("name", pa.string(), nullable=True),  # from-imports: the name ("*" for star imports)
        pa.field("asname", pa.string(), nullable=True),
        pa.field("bound", pa.string(), nullable=True),  # the local name bound; null for star imports
        pa.field("target", pa.string(), nullable=True),  # absolute dotted name `bound` denotes; null if unresolvable
        pa.field("scope", pa.string(), nullable=False),  # qualname of the enclosing function/class, "" at module level
        pa.field("fallback", pa.bool_(), nullable=False),  # inside an except handler (try/except ImportError)
        pa.field("star", pa.bool_(), nullable=False),
        pa.field("resolvable", pa.bool_(), nullable=False),  # false: star import, or relative beyond the top package
    ]
)

INVENTORY = pa.schema(
    [
        pa.field("library", pa.string(), nullable=False),  # top-level module
        pa.field("source", pa.string(), nullable=False),
        pa.field("repository", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("module", pa.string(), nullable=False),
        pa.field("qualname", pa.string(), nullable=False),  # "" for the module itself
        pa.field("fqn", pa.string(), nullable=False),  # unique per (source, repository)
        pa.field("kind", pa.string(), nullable=False),  # module / class / function / method
        pa.field("signature", pa.string(), nullable=False),  # "(a, b=1) -> int"; bases for classes; "" for modules
        pa.field("doc", pa.string(), nullable=True),  # first sentence of the docstring
        pa.field("private", pa.bool_(), nullable=False),  # a part starts with "_" (dunders aside)
        # pipeline.extract.library: the distribution (sdist/package) the file ships in, whatever the
        # `repository:` grouping; the category of a call to it from its own distribution (stdlib / user_defined);
        # importable library code (not a test, example, docs, tools or scripts file). Null: not recorded.
        pa.field("distribution", pa.string(), nullable=True),
        pa.field("category", pa.string(), nullable=True),
        pa.field("library_code", pa.bool_(), nullable=True),
        # platform-specific names (pipeline.extract.platforms): a definition every module-level binding of whose
        # top name is under a guard for another platform ("windows", "other") or `if __name__ == "__main__":`
        # ("main"), or in a module that imports a Windows-only module at top level; null: exists on import here.
        # The module row lists all such module-level names, assignments included, as "name:platform" (null: none)
        pa.field("platform", pa.string(), nullable=True),
        pa.field("platform_names", pa.list_(pa.string()), nullable=True),
        # module rows: the absolute modules its top-level statements (not under `if`/`try`) import, the stdlib's and
        # the declared required dependencies' left out (a module importing an absent distribution fails: its names
        # are `optional_dependency`, pipeline.extract.availability); null: none or not recorded (stdlib files)
        pa.field("requires", pa.list_(pa.string()), nullable=True),
        # module rows: its top-level aliases `name = other` as "name=fqn" (one object, several names)
        pa.field("aliases", pa.list_(pa.string()), nullable=True),
        # module rows: the top-level import names of its distribution's declared required dependencies
        # (pipeline.extract.requirements: `requests` needs urllib3, idna, ...); null: none declared
        pa.field("dependencies", pa.list_(pa.string()), nullable=True),
        # module rows: every name the module binds once it has run, star imports aside, `del`eted ones left out, what
        # a readable module `__getattr__` serves added (pipeline.extract.stdlib.module_namespace); null: it makes
        # names at run time, or not recorded
        pa.field("namespace", pa.list_(pa.string()), nullable=True),
        # module rows: its literal `__all__` (what `from module import *` binds); null: none, or not literal
        pa.field("exports", pa.list_(pa.string()), nullable=True),
    ]
)


# Provenance in the warehouse (pipeline.warehouse): what every prediction row joins to.
def _described(name: str, type_: pa.DataType, description: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": description})


FAMILIES = pa.schema(
    [
        _described("name", pa.string(), "the family's name (= params key, table prefix)", False),
        _described("title", pa.string(), "the report section's title"),
        _described("paper", pa.string(), "the paper the family rebuilds"),
        _described("version", pa.string(), "bumped when the family's outputs change meaning; in its predictions' metadata"),
        _described("subsets", pa.list_(pa.string()), "subsets with their own inference jobs (e.g. languages)"),
        _described("model_families", pa.list_(pa.string()), "model families the family's inference applies to"),
    ]
)

MODEL_CARDS = pa.schema(
    [
        _described("name", pa.string(), "zoo name; predictions' `model` column", False),
        _described("source", pa.string(), "package: / trained: / random: / hub: / path:"),
        _described("model_family", pa.string(), "masked-lm / causal-lm / encoder-decoder / encoder-only"),
        _described("parameters", pa.int64(), "number of weights"),
        _described("random", pa.bool_(), "a randomly initialised twin"),
        _described("card", pa.string(), "the whole card.json (training data, seed, tokenizer, origin)"),
    ]
)

SOURCE_PINS = pa.schema(
    [
        _described("name", pa.string(), "the source's name in params.yaml corpus.sources", False),
        _described("kind", pa.string(), "pypi / npm / git / url / jsonl / local"),
        _described("status", pa.string(), "ok, or why the source is missing"),
        _described("files", pa.int64(), "files materialised"),
        _described("bytes", pa.int64(), "bytes materialised"),
        _described("pin", pa.string(), "what was verified: sha256, commit, interpreter version, ... (JSON)"),
        _described("license", pa.string(), "SPDX license (PKG-INFO, package.json, params `license:`); unknown when none says"),
        _described("released", pa.date32(), "the pinned release's date (params `released:`; the JDK's JAVA_VERSION_DATE)"),
        _described("caps", pa.string(), "the corpus.limits caps that left members out: each with its reason, path, "
                   "members kept and seen (JSON list; [] when none did)"),
    ]
)

DATASET_PINS = pa.schema(
    [
        _described("name", pa.string(), "the dataset's name in params.yaml datasets", False),
        _described("kind", pa.string(), "local / url"),
        _described("files", pa.int64(), "pinned files copied"),
        _described("bytes", pa.int64(), "bytes copied"),
        _described("pin", pa.string(), "every file with its verified sha256 (JSON)"),
    ]
)

RUN_PARAMS = pa.schema(
    [
        _described("key", pa.string(), "dotted path in params.yaml", False),
        _described("value", pa.string(), "the value as JSON", False),
    ]
)

NOT_APPLICABLE = pa.schema(
    [
        _described("family", pa.string(), "benchmark family", False),
        _described("model", pa.string(), "zoo name", False),
        _described("model_family", pa.string(), "the model's family", False),
        _described("reason", pa.string(), "why the family does not apply", False),
    ]
)

# Items per inference subset of each family (rows of its input tables; an empty subset scores nothing
# and the report says why).
SUBSET_ITEMS = pa.schema(
    [
        _described("family", pa.string(), "benchmark family", False),
        _described("subset", pa.string(), "the family's inference subset (a language, a task set, ...)", False),
        _described("items", pa.int64(), "rows of the subset's smallest input table (0: no inference items); "
                   "null when an input file is missing", True),
    ]
)

# Pooled features (the shared features runtime): one vector per (item, model, layer, pooling).
FEATURES = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),  # the family's stable id of a sample/word/pair
        pa.field("model", pa.string(), nullable=False),
        pa.field("layer", pa.int16(), nullable=False),  # 0 = embedding output, 1..L = layers
        pa.field("pooling", pa.string(), nullable=False),  # mean / first / concat ...
        pa.field("vector", pa.list_(pa.float16()), nullable=False),
    ]
)

# What a probe is fitted to (pipeline.fit): classification tasks fill `label`, regression tasks
# `target`; `group` keeps the samples of one snippet in one cross-validation fold. Families may
# add columns (e.g. a scalar for the regression baseline); the fit reads only those it needs.
PROBE_LABELS = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("label", pa.string(), nullable=True),  # classification
        pa.field("target", pa.float64(), nullable=True),  # regression
        pa.field("group", pa.string(), nullable=False),  # e.g. the snippet id
    ]
)

# The fit stage's item record (pipeline.fit.items): per model, every labelled item of a family's fit
# tasks (and every item it has features for), kept when that model has its features in every layer:
# each model is fitted and scored on its own kept items (a capped model never shrinks another's), a
# comparison of two models is paired on the items both kept; an item a model lacks says why in one line.
FIT_ITEMS = pa.schema(
    [
        pa.field("subset", pa.string(), nullable=False),  # the predictions subset holding its features
        pa.field("model", pa.string(), nullable=False),  # each model is fitted on its own items
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("kept", pa.bool_(), nullable=False),  # this model's fit uses it (a label, features in every layer)
        pa.field("reason", pa.string(), nullable=True),  # why this model's fit lacks it (null when kept)
    ]
)

# Fit results (pipeline.fit): one row per (task, model, pooling, layer, fold, probe). Baselines have
# a null layer and probe = the baseline's name; model = the baseline's name on the full item set (the
# family's baselines job), or the model whose items it is scored on (a model's fit, `--majority`). `selected` marks every fold of the layer
# chosen on fold 0; the headline is the mean of the other folds' `error` at that layer.
FIT_RESULTS = pa.schema(
    [
        pa.field("task", pa.string(), nullable=False),
        pa.field("task_type", pa.string(), nullable=False),  # classification / regression
        pa.field("model", pa.string(), nullable=False),
        pa.field("pooling", pa.string(), nullable=False),
        pa.field("probe", pa.string(), nullable=False),  # ridge / lbfgs / sgd / majority / linreg
        pa.field("layer", pa.int16(), nullable=True),
        pa.field("fold", pa.int16(), nullable=False),  # 0 chooses the layer; 1..K-1 give the headline
        pa.field("metric", pa.string(), nullable=False),  # error (1 - accuracy) / mae
        pa.field("error", pa.float64(), nullable=False),
        pa.field("n_train", pa.int64(), nullable=False),
        pa.field("n_test", pa.int64(), nullable=False),
        pa.field("alpha", pa.float64(), nullable=True),  # regularisation chosen on the train folds
        pa.field("selected", pa.bool_(), nullable=False),
        pa.field("n_dropped", pa.int64(), nullable=False),  # items left out: no label or not in every layer's features
        # the selected layer's rows of a probe (null elsewhere and for baselines): paired bootstraps read them
        pa.field("test_items", pa.list_(pa.string()), nullable=True),  # the test fold's item ids, sorted
        pa.field("test_errors", pa.list_(pa.float64()), nullable=True),  # each one's error: 0/1, or |pred - target|
        # the headline (pipeline.fit.probe.headline_columns) on the selected layer's rows (a baseline's every row), null
        # elsewhere: over the test samples of folds 1..K-1, 10,000 bootstrap replicates seeded per cell; and a probe
        # paired with the baseline on the same model's items and test samples (majority; linreg for regression)
        pa.field("headline_error", pa.float64(), nullable=True),  # mean error over the test samples of folds 1..K-1
        pa.field("headline_lo", pa.float64(), nullable=True),  # low end of its 95% percentile bootstrap interval over those samples
        pa.field("headline_hi", pa.float64(), nullable=True),  # high end of that interval (never clipped: inside the metric's range by construction)
        pa.field("baseline_name", pa.string(), nullable=True),  # the baseline a probe is paired against on its items
        pa.field("baseline_score", pa.float64(), nullable=True),  # that baseline's mean error on the same test samples
        pa.field("vs_baseline", pa.float64(), nullable=True),  # probe - baseline error, paired (negative: the probe errs less)
        pa.field("vs_baseline_lo", pa.float64(), nullable=True),  # its 95% percentile bootstrap interval, low end
        pa.field("vs_baseline_hi", pa.float64(), nullable=True),  # its 95% percentile bootstrap interval, high end
        pa.field("vs_baseline_p", pa.float64(), nullable=True),  # two-sided bootstrap p of the paired difference
    ]
)
