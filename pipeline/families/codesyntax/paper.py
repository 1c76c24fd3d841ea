"""The CodeSyntax paper's reference numbers (Table 3, top-1, first token of the dependent),
written once: the report and the README read them."""

TOP1_FIRST_TOKEN = {  # system: (python, java)
    "offset": (43.6, 52.7), "keyword": (15.7, 22.4), "combined": (49.4, 60.4),
    "CuBERT": (39.2, 39.7), "CodeBERT": (33.1, 36.3), "RoBERTa": (34.5, 34.7),
}
# the relations the report draws per-head heatmaps for
HEATMAP_RELATIONS = ("If:if->else", "Call:func->args", "Assign:target->value", "For:for->body")
