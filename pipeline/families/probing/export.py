"""probing as a dataset (pipeline.export): one config per enabled task, a row per sample with what the model reads
(`text`, and the character spans `starts`/`ends` the probe pools), its label and `group` (the snippet: folds never split
one), all in `test` (the probe's folds are drawn by the fit stage, pipeline.fit)."""

from pipeline.export import ExportConfig


def configs(config: dict) -> list[ExportConfig]:
    out = []
    for task in config["probing"]["tasks"]:
        sql = (f"SELECT s.item_id, s.task, s.\"group\", s.text, s.kind, s.starts, s.ends, s.word, "
               f"l.* EXCLUDE (item_id, word), 'test' AS split FROM probing_samples s "
               f"JOIN probing_labels l ON l.item_id = s.item_id WHERE s.task = '{task}'")
        out.append(ExportConfig(name=task, key="item_id", sql=sql, text_columns=("text",),
                                description=f"probing task {task}: can a linear probe read the label from a layer's "
                                            f"pooled features of `text` at the spans?"))
    return out
