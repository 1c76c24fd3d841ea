"""codesyntax as a dataset (pipeline.export): one config per language and label variant (`python_plain`, ...), a row
per function with its tokens and its relation edges as parallel lists (`edge_relation`, `edge_head`,
`edge_dep_start`, `edge_dep_end`: token indices into `tokens`, head < dep_start <= dep_end), by `eval_split` (dev /
test: where the paper's baselines and heads are chosen, and where they are scored)."""

from pipeline.export import ExportConfig


def configs(config: dict) -> list[ExportConfig]:
    out = []
    for language in config["codesyntax"]["languages"]:
        for variant in config["codesyntax"]["variants"]:
            sql = (f"SELECT s.sample_id, s.file_id, s.source, s.repository, s.function, s.start_line, "
                   f"s.file_split, CASE s.eval_split WHEN 'dev' THEN 'validation' ELSE s.eval_split END AS split, "
                   f"s.code, s.tokens, s.token_kinds, s.n_tokens, "
                   f"coalesce(list(r.relation ORDER BY r.relation, r.head, r.dep_start, r.dep_end) "
                   f"FILTER (WHERE r.relation IS NOT NULL), []) AS edge_relation, "
                   f"coalesce(list(r.head ORDER BY r.relation, r.head, r.dep_start, r.dep_end) "
                   f"FILTER (WHERE r.relation IS NOT NULL), []) AS edge_head, "
                   f"coalesce(list(r.dep_start ORDER BY r.relation, r.head, r.dep_start, r.dep_end) "
                   f"FILTER (WHERE r.relation IS NOT NULL), []) AS edge_dep_start, "
                   f"coalesce(list(r.dep_end ORDER BY r.relation, r.head, r.dep_start, r.dep_end) "
                   f"FILTER (WHERE r.relation IS NOT NULL), []) AS edge_dep_end "
                   f"FROM codesyntax_samples s LEFT JOIN codesyntax_relations r ON r.sample_id = s.sample_id "
                   f"AND r.variant = s.variant "
                   f"WHERE s.language = '{language}' AND s.variant = '{variant}' GROUP BY ALL")
            out.append(ExportConfig(
                name=f"{language}_{variant}", key="sample_id", sql=sql, text_columns=("code", "tokens"),
                description=f"{language} functions ({variant} labels): tokens and their syntax relation edges; does "
                            f"an attention head point from an edge's head token to its dependent?"))
    return out
