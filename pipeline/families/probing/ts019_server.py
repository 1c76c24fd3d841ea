"""The tree server of the release's runtime: py-tree-sitter 0.19.0 (the version probings4code pins) parsing with
tree-sitter-java ac14b4b. Run ONLY by `runtime019.py` with the interpreter of the pinned environment
(`.fidelity/ts019-venv`, made by `make fidelity-env`); it imports the standard library and that tree_sitter only,
never the pipeline (whose tree_sitter is 0.26.1).

    python ts019_server.py LANGUAGES_SO LANGUAGE_NAME FIELD ...

Protocol on stdin / stdout, one request after another: 4 bytes big-endian length + the source bytes in; 4 bytes
length + a JSON list out: every node of the tree in preorder as [type, flags (1 named, 2 missing, 4 has_error),
start_byte, end_byte, start_row, start_column, end_row, end_column, child count, {field: child index}] (the
first child with that field, what `child_by_field_name` returns).
The server ends when its stdin closes.
"""

import json
import struct
import sys

import tree_sitter


def serialise(root, fields):
    rows, stack = [], [root]
    while stack:
        n = stack.pop()
        children = n.children
        named = {}
        if children and n.is_named:
            for f in fields:
                c = n.child_by_field_name(f)
                if c is not None:
                    for i, d in enumerate(children):
                        if d == c:
                            named[f] = i
                            break
        flags = (1 if n.is_named else 0) | (2 if n.is_missing else 0) | (4 if n.has_error else 0)
        rows.append([n.type, flags, n.start_byte, n.end_byte, *n.start_point, *n.end_point, len(children), named])
        stack.extend(reversed(children))
    return rows


def main():
    so, name, fields = sys.argv[1], sys.argv[2], sys.argv[3:]
    parser = tree_sitter.Parser()
    parser.set_language(tree_sitter.Language(so, name))
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = inp.read(4)
        if len(head) < 4:
            return
        size = struct.unpack(">I", head)[0]
        source = inp.read(size)
        data = json.dumps(serialise(parser.parse(source).root_node, fields), separators=(",", ":")).encode()
        out.write(struct.pack(">I", len(data)) + data)
        out.flush()


if __name__ == "__main__":
    main()
