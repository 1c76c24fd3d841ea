"""The INK paper's reference numbers (Table III), written once: the report and the README read them."""

# P@1 in percent (call / import settings)
P_AT_1_CALL_IMPORT = [
    ("CodeBERT-MLM", 23.90, 26.33),
    ("CodeBERT-MLM-Python", 29.35, 29.67),
    ("GraphCodeBERT-MLM", 25.89, 30.76),
    ("PLBART-base", 1.65, 2.64),
]
# P@1 of CodeBERT-MLM-Python on the alias settings
P_AT_1_ALIAS = {"alias": 24.17, "adversarial_alias": 20.35}
