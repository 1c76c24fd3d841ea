"""Stage 4: CodeSyntax. Functions cut from the manifest's files, their token streams,
every AST relation edge (relation, head, dependent start, dependent end), and the
paper's offset/keyword baselines."""
