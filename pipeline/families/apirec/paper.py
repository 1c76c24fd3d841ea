"""The APIBench paper's reference numbers, written once: the report and the README read them."""

# Table 7: code-based, Python, "General" domain of APIBench-C: Success Rate@1, @3, @5, @10.
CODE_SR = [
    ("TravTrans", 0.45, 0.57, 0.59, 0.62),
    ("PyART", 0.29, 0.38, 0.46, 0.60),
    ("Deep3", 0.21, 0.34, 0.37, 0.43),
]
# Table 6: query-based, Java, method level: BIKER (the best), Success Rate@1, @3, @5, @10.
QUERY_SR_METHOD = [("BIKER", 0.12, 0.23, 0.29, 0.37)]
