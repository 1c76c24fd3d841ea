"""idbench as a dataset (pipeline.export): one config per benchmark size (small, medium, large), a row per identifier
pair with the developers' gold ratings (relatedness, similarity, contextual similarity), all in `test`. The pairs
and ratings are IdBench's own (a pinned dataset, not this corpus): the license is the dataset's."""

from pipeline.export import ExportConfig


def configs(config: dict) -> list[ExportConfig]:
    out = []
    for size in ("small", "medium", "large"):
        sql = (f"SELECT pair_id, size, id1, id2, COLUMNS(lambda c: c IN ('relatedness', 'similarity', "
               f"'contextual_similarity')), comparable, 'test' AS split FROM idbench_pairs WHERE size = '{size}'")
        out.append(ExportConfig(name=size, key="pair_id", sql=sql,
                                description=f"IdBench {size}: identifier pairs with developers' similarity ratings; "
                                            f"how well do a model's embeddings' cosines rank them (Spearman)?"))
    return out
