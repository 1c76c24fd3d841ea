"""Table 1 of the paper: CodeT5-base encoder (the best encoder-side representation), test error
(MAE for AST depth). Our task names on the left."""

TABLE1_CODET5_BASE_ENCODER = {
    "path_type": 0.013,
    "depth": 0.867,
    "declared": 0.014,
    "dfg_edge": 0.161,
    "variable_name": 0.162,
    "misuse": 0.046,
    "algorithm": 0.228,
}
