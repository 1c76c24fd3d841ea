"""What a pipeline-trained model read (issue 23 item 1): the blocks its batches drew, mapped back to
line/column ranges of the files, so "seen" is exact per model."""

from pipeline.models.data import Selection, batch_order, blocks, read_ranges, token_stream


class CharTokenizer:
    """One token per character (offsets exact), the interface read_text and token_stream use."""

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False, verbose=True):
        out = {"input_ids": [ord(c) for c in text]}
        if return_offsets_mapping:
            out["offset_mapping"] = [(i, i + 1) for i in range(len(text))]
        return out


TEXTS = ["ab\ncd\n", "xyz", "é\nf"]
SEL = Selection("train", ("f1", "f2", "f3"), ("a", "b", "c"), ("utf-8",) * 3, 0)


def test_batch_order_is_seeded_full_batches():
    a = list(batch_order(5, 3, 4, seed=1))
    assert a == list(batch_order(5, 3, 4, seed=1)) and all(len(b) == 3 for b in a)
    assert sorted(a[0] + a[1][:2]) == [0, 1, 2, 3, 4]  # one permutation before the next starts


def test_read_text_maps_blocks_back_to_line_column_ranges():
    stream = token_stream(CharTokenizer(), iter(TEXTS), 0)  # 6+1, 3+1, 3+1 = 15 tokens
    assert blocks(stream, 4).shape == (3, 4)  # 12 tokens in blocks, 3 dropped
    got = read_ranges(CharTokenizer(), SEL, iter(TEXTS), 4, 0, {0, 2})
    assert got["blocks"] == 3 and got["blocks_read"] == 2
    # block 0: stream 0-3 = "ab\nc" of f1; block 2: stream 8-11 = "yz" of f2 (8, 9), sep, "é" of f3 (11)
    by_file = {f["file_id"]: f for f in got["text"]}
    assert by_file["f1"]["ranges"] == [[1, 0, 2, 1]]  # up to line 2 column 1 (exclusive): "ab\nc"
    assert by_file["f2"]["ranges"] == [[1, 1, 1, 3]]
    assert by_file["f3"]["ranges"] == [[1, 0, 1, 1]] and by_file["f3"]["bytes"] == 2  # "é" is two UTF-8 bytes
    assert got["files"] == 3 and got["bytes"] == 4 + 2 + 2


def test_a_file_never_in_a_drawn_block_is_not_read():
    got = read_ranges(CharTokenizer(), SEL, iter(TEXTS), 4, 0, {1})
    assert [f["file_id"] for f in got["text"]] == ["f1", "f2"]  # stream 4-7: "d\n" of f1, sep, "x" of f2
    assert got["text"][0]["ranges"] == [[2, 1, 3, 0]]


def test_a_stream_shorter_than_a_block_is_one_padded_block():
    got = read_ranges(CharTokenizer(), SEL, iter(TEXTS), 64, 0, {0})
    assert got["blocks"] == 1 and got["files"] == 3 and got["bytes"] == 6 + 3 + 4
