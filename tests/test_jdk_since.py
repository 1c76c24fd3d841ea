"""The JDK's own @since tags date its APIs (pipeline.contamination.since): the Javadoc convention on tiny Java
snippets, the version forms, the release table, and the labels a since-tag date gives on each side of a cutoff."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline import schemas
from pipeline.contamination import firstseen, since
from pipeline.io import read_parquet, write_parquet

ROOT = Path(__file__).resolve().parents[1]

PACKAGE_INFO = b"""/*
 * a license header
 */

/**
 * Collections and such.
 *
 * @since 1.0
 */
package demo.util;
"""

LIST = b"""/*
 * Copyright (c) 1997, 2024, a license header that is not a doc comment.
 */
package demo.util;

import java.util.function.Function;

/**
 * A list.
 *
 * @param <E> the element type
 * @since 1.2
 */
public class Lists<E> implements Iterable<E> {
    /** @since 9 */
    public static <T> Lists<T> of() { return null; }

    /** Mid-text is no block tag: @since 1.0 */
    public int isEmpty() { return 0; }

    /**
     * An overload added later.
     * @since   10
     */
    public static <T> Lists<T> of(T one) { return null; }

    /** No tag: the class's. */
    public int size() { return 0; }

    // a line comment between the doc comment and the declaration is still a comment
    /**
     * @since 1.5
     */
    // it was generic from 5 on
    public void clear() {}

    private int helper() { return 1; }  // no tag, private: no since-date

    /**
     * Private but tagged.
     * @since 24
     */
    private int tagged() { return 2; }

    /** @since 16 (preview) */
    public int previewed() { return 3; }

    /** The size field. */
    protected int count, other;

    /**
     * A nested class without a tag: its class's.
     */
    public static class Entry {
        public Entry() {}

        /** @since JDK1.1 */
        public Object getKey() { return null; }
    }

    /**
     * @since 1.8
     */
    public interface View {
        int width();  // an interface member is public

        private int hidden() { return 0; }
    }

    static class Hidden {  // package-private, untagged: none, and nor its public members
        public void run() {}
    }

    enum Mode { ON, OFF }  // package-private
}
"""

UNTAGGED = b"""package demo.util;

/** A class without its own tag: its package's (package-info.java). */
public final class Untagged {
    /** @since 1.0.2 */
    public static int one() { return 1; }

    /** @since 1.10 */
    public static int ten() { return 10; }

    /** @since 1.7 * 14 */
    public static int sorted() { return 7; }

    /** @since TBD */
    public static int later() { return 0; }

    /** @since 27 */
    public static int future() { return 0; }

    /**
     * {@since} is no block tag.
     */
    public static int inline() { return 0; }

    public record Point(int x, int y) {}

    /** @since 25 */
    public enum Level { LOW, HIGH }
}
"""

OTHER_PACKAGE = b"""package demo.other;

public class NoPackageTag {  // no package-info.java for demo.other: no since-date
    public void go() {}
}
"""


def _dated(files):
    defs, tags = since.dated_definitions(files)
    by = {}
    for d in defs:
        by.setdefault(d.api, []).append(d)
    return defs, tags, by


@pytest.fixture(scope="module")
def dated():
    return _dated([("java.base/demo/util/package-info.java", PACKAGE_INFO), ("java.base/demo/util/Lists.java", LIST),
                   ("java.base/demo/util/Untagged.java", UNTAGGED),
                   ("java.base/demo/other/NoPackageTag.java", OTHER_PACKAGE)])


def release(by, api):
    return sorted({(d.release, d.by) for d in by[api]}, key=str)


def test_a_declaration_takes_its_own_tag_else_its_class_s(dated):
    _, _, by = dated
    assert release(by, "demo.util.Lists") == [("1.2", "own")]
    assert release(by, "demo.util.Lists.of") == [("10", "own"), ("9", "own")]  # two overloads, each its own
    assert release(by, "demo.util.Lists.size") == release(by, "demo.util.Lists.isEmpty") == [("1.2", "class")]
    assert release(by, "demo.util.Lists.clear") == [("5", "own")]  # only comments between tag and declaration
    assert release(by, "demo.util.Lists.count") == release(by, "demo.util.Lists.other") == [("1.2", "class")]
    # a nested class without a tag takes its class's, and its members the nested class's
    assert release(by, "demo.util.Lists.Entry") == [("1.2", "class")]
    assert release(by, "demo.util.Lists.Entry.<init>") == [("1.2", "class")]
    assert release(by, "demo.util.Lists.Entry.getKey") == [("1.1", "own")]
    assert release(by, "demo.util.Lists.View") == [("8", "own")]
    assert release(by, "demo.util.Lists.View.width") == [("8", "class")]  # an interface's members are public
    # the class's implicit constructor, as callers name it (`new Lists<>()`)
    assert release(by, "demo.util.Lists.<init>") == [("1.2", "class")]
    assert release(by, "demo.util.Lists.previewed") == [("16", "own")]


def test_what_is_not_public_api_inherits_nothing_but_keeps_its_own_tag(dated):
    _, _, by = dated
    assert release(by, "demo.util.Lists.helper") == [(None, "none")]
    assert release(by, "demo.util.Lists.tagged") == [("24", "own")]
    assert release(by, "demo.util.Lists.View.hidden") == [(None, "none")]
    assert release(by, "demo.util.Lists.Hidden") == release(by, "demo.util.Lists.Hidden.run") == [(None, "none")]
    assert release(by, "demo.util.Lists.Mode.ON") == [(None, "none")]


def test_a_class_without_a_tag_takes_its_package_s_else_has_none(dated):
    _, _, by = dated
    assert release(by, "demo.util.Untagged") == [("1.0", "package")]
    assert release(by, "demo.util.Untagged.inline") == [("1.0", "class")]  # {@since} is not a tag
    assert release(by, "demo.util.Untagged.Point") == release(by, "demo.util.Untagged.Point.x") == [("1.0", "class")]
    assert release(by, "demo.util.Untagged.Level.LOW") == [("25", "class")]  # an enum constant: its enum's
    assert release(by, "demo.other.NoPackageTag") == release(by, "demo.other.NoPackageTag.go") == [(None, "none")]


def test_odd_and_unparsable_tags_are_counted(dated):
    _, tags, by = dated
    assert release(by, "demo.util.Untagged.one") == [("1.0", "own")]
    assert release(by, "demo.util.Untagged.ten") == [("10", "own")]
    assert release(by, "demo.util.Untagged.sorted") == [("7", "own")]
    # unparsable: treated as untagged (the class's)
    assert release(by, "demo.util.Untagged.later") == release(by, "demo.util.Untagged.future") == [("1.0", "class")]
    assert dict(tags.unparsable) == {"TBD": 1, "27": 1}
    assert dict(tags.odd) == {"1.0.2": 1, "1.10": 1, "1.7 * 14": 1, "16 (preview)": 1, "JDK1.1": 1}


@pytest.mark.parametrize("text,release", [
    ("1.0", "1.0"), ("1.2", "1.2"), ("1.4", "1.4"), ("1.5", "5"), ("5", "5"), ("5.0", "5"), ("1.8", "8"), ("9", "9"),
    ("17", "17"), ("24", "24"), ("26", "26"), ("JDK1.0", "1.0"), ("JDK 1.1", "1.1"), ("1.0.2", "1.0"), ("1.1.4", "1.1"),
    ("16 (preview)", "16"), ("1.10", "10"), ("1.7 * 14", "7"), ("Java SE 11", "11"), ("  21", "21"),
    ("", None), ("1", None), ("2", None), ("TBD", None), ("27", None), ("1.9.", "9"),
])
def test_versions_normalise_to_feature_releases(text, release):
    assert since.feature_release(text) == release


def test_the_release_table_is_the_jdk_s_ga_dates():
    expected = {"1.0": "1996-01-23", "1.1": "1997-02-19", "1.2": "1998-12-08", "1.3": "2000-05-08",
                "1.4": "2002-02-06", "5": "2004-09-30", "6": "2006-12-11", "7": "2011-07-28", "8": "2014-03-18",
                "9": "2017-09-21", "10": "2018-03-20", "11": "2018-09-25", "12": "2019-03-19", "13": "2019-09-17",
                "14": "2020-03-17", "15": "2020-09-15", "16": "2021-03-16", "17": "2021-09-14", "18": "2022-03-22",
                "19": "2022-09-20", "20": "2023-03-21", "21": "2023-09-19", "22": "2024-03-19", "23": "2024-09-17",
                "24": "2025-03-18", "25": "2025-09-16", "26": "2026-03-17"}
    assert {v: d.isoformat() for v, d in since.RELEASES.items()} == expected
    dates = list(since.RELEASES.values())
    assert dates == sorted(dates)


def test_an_api_name_is_dated_by_its_earliest_overload_never_after_the_pinned_release(dated):
    defs, _, _ = dated
    rows = {r["api"]: r for r in since.api_rows("jdk", defs, dt.date(2025, 6, 1))}
    assert rows["demo.util.Lists.of"]["first_version"] == "9"
    assert rows["demo.util.Lists.of"]["first_released"] == dt.date(2017, 9, 21)
    assert rows["demo.util.Lists.of"]["date_basis"] == since.BASIS == "since_tag"
    assert rows["demo.util.Untagged.Level"]["first_released"] == dt.date(2025, 6, 1)  # 25's GA is after this build
    assert "demo.util.Lists.helper" not in rows and "demo.other.NoPackageTag" not in rows
    pa.Table.from_pylist(list(rows.values()), schema=firstseen.APIS)  # the first_seen_apis table's rows


def test_first_seen_dates_a_jdk_source_s_apis_by_its_tags(tmp_path, monkeypatch):
    """The rule first_seen (`--since`): a JDK source's APIs go into first_seen_apis with date_basis since_tag."""
    monkeypatch.chdir(tmp_path)
    files = {"java.base/demo/util/package-info.java": PACKAGE_INFO, "java.base/demo/util/Lists.java": LIST}
    rows = []
    for k, (path, data) in enumerate(files.items()):
        loc = Path(f"data/corpus/jdk/{k:08d}.java")
        loc.parent.mkdir(parents=True, exist_ok=True)
        loc.write_bytes(data)
        rows.append({"file_id": f"f{k}", "sha256": "0" * 64, "source": "jdk", "repository": "java.base/demo/util",
                     "path": path, "location": loc.as_posix(), "language": "java", "encoding": "utf-8",
                     "bytes": len(data), "lines": data.count(b"\n"), "split": "train", "duplicate": False,
                     "license": "GPL-2.0-only WITH Classpath-exception-2.0", "released": dt.date(2026, 4, 21)})
    write_parquet(pa.Table.from_pylist(rows, schema=schemas.MANIFEST), tmp_path / "manifest.parquet", schemas.MANIFEST)
    assert firstseen.main(["--manifest", "manifest.parquet", "--sources", "[]", "--since", '["jdk"]',
                           "--functions", "f.parquet", "--apis", "a.parquet", "--metrics", "m.json"]) == 0
    apis = {r["api"]: r for r in read_parquet(tmp_path / "a.parquet", firstseen.APIS).to_pylist()}
    assert apis["demo.util.Lists.size"] == {"source": "jdk", "api": "demo.util.Lists.size", "first_version": "1.2",
                                            "first_released": dt.date(1998, 12, 8), "date_basis": "since_tag"}
    metrics = json.loads((tmp_path / "m.json").read_text())["jdk"]["since_tags"]
    assert metrics["tags_odd_forms"] == {"16 (preview)": 1, "JDK1.1": 1}
    assert metrics["definitions_by_release"]["1.2"] > 0


def test_a_since_tag_date_labels_both_sides_of_a_cutoff():
    """Unlike a release date (an upper bound), a since-tag date after the cutoff says released_after_cutoff; the
    warehouse's macro and the predict job's label agree."""
    import duckdb

    from pipeline.runtime.predict import cutoff_label

    from tests.test_contamination import _core_macros

    con = duckdb.connect()
    con.execute("CREATE TABLE contamination_models (model VARCHAR, labelled_by VARCHAR, basis VARCHAR, "
                "training_cutoff DATE, cutoff_kind VARCHAR)")
    con.execute("CREATE TABLE contamination_read_ranges (model VARCHAR, file_id VARCHAR, start_line INT, end_line INT)")
    _core_macros(con)
    cutoff = dt.date(2024, 11, 1)
    for released, basis, label in [(dt.date(2025, 3, 18), "since_tag", "released_after_cutoff"),
                                   (dt.date(2017, 9, 21), "since_tag", "released_before_cutoff"),
                                   (dt.date(2026, 4, 21), "release", "unknown")]:
        assert cutoff_label(released, cutoff, basis) == label
        assert con.execute("SELECT contamination_label('cutoff', ?, ?, NULL, date_basis := ?)",
                           [cutoff, released, basis]).fetchone()[0] == label


def test_the_jdk_since_figures_in_the_docs_are_the_results_file():
    """docs/contamination.md quotes docs/results/jdk_since.json (python -m pipeline.report.jdk_since)."""
    from pipeline.report.jdk_since import sentence

    results = json.loads((ROOT / "docs/results/jdk_since.json").read_text())
    assert {"command", "configuration", "commit", "numbers"} <= set(results)
    assert results["command"].startswith("python -m pipeline.report.jdk_since")
    assert results["configuration"]["releases"] == {v: d.isoformat() for v, d in since.RELEASES.items()}
    assert sentence(results) in " ".join((ROOT / "docs/contamination.md").read_text().split())
