"""Table 1 of the paper: CodeT5-base encoder (the best encoder-side representation), test error
(MAE for AST depth). Our task names on the left."""

TABLE1_CODET5_BASE_ENCODER = {
    "path_type": 0.013,
    "depth": 0.867,
    "declared": 0.014,
    "dataflow": 0.161,
    "variable_name": 0.162,
    "misuse": 0.046,
    "algorithm": 0.228,
}

# the decoder side of the same model (Table 1, CodeT5-base decoder), beside an encoder-decoder's decoder layers
TABLE1_CODET5_BASE_DECODER = {
    "path_type": 0.036,
    "depth": 0.864,
    "declared": 0.061,
    "dataflow": 0.230,
    "variable_name": 0.211,
    "misuse": 0.176,
    "algorithm": 0.268,
}
