"""The command line: the demo tells the kitchen story; inspect, events and recall read a store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from locimem.cli import main


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "locimem", *args], capture_output=True,
                          text=True, check=False)


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "kitchen.loci"
    proc = _run("demo", "--store", str(path))
    assert proc.returncode == 0, proc.stderr
    return path, proc.stdout


def test_demo_tells_the_story_in_order(demo_store):
    _, out = demo_store
    kinds = [kind for line in out.splitlines()
             for kind in ("APPEARED", "PROMOTED", "MOVED", "LOST") if f"{kind} " in line]
    assert kinds == ["APPEARED", "PROMOTED", "MOVED", "LOST"]
    assert "confidence 0.77 (confirmed)" in out and "confidence 0.39 (tentative)" in out
    assert "objects within 0.3 m of the old place: none" in out
    assert "The cup (#1) is lost: last seen" in out  # answered by a fresh process


def test_demo_refuses_to_overwrite(demo_store, capsys):
    path, _ = demo_store
    assert main(["demo", "--store", str(path)]) == 2
    assert "exists" in capsys.readouterr().err


def test_inspect_reports_counts(demo_store):
    path, _ = demo_store
    proc = _run("inspect", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    kitchen = report["scopes"]["kitchen"]
    assert list(report["scopes"]) == ["kitchen"]
    assert kitchen["objects"] == {"confirmed": 0, "tentative": 0, "doubted": 0, "lost": 1,
                                  "forgotten": 0}
    assert kitchen["events"] == 4 and kitchen["rejected"] == 0
    assert kitchen["observations"] == 6 + 1 + 17 + 30  # every detection of the timeline
    assert kitchen["published"] == []


def test_events_filters(demo_store):
    path, _ = demo_store
    proc = _run("events", str(path), "--scope", "kitchen", "--kind", "moved", "--json")
    assert proc.returncode == 0, proc.stderr
    (moved,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert moved["kind"] == "MOVED" and moved["t"] == 60.0 and moved["object_id"] == 1
    proc = _run("events", str(path), "--scope", "kitchen", "--since", "100")
    assert proc.stdout.count("\n") == 1 and "LOST" in proc.stdout


def test_recall_exit_codes(demo_store):
    path, _ = demo_store
    found = _run("recall", str(path), "cup", "--scope", "kitchen", "--json")
    assert found.returncode == 0
    answer = json.loads(found.stdout)
    assert answer["status"] == "lost" and answer["object_id"] == 1
    missing = _run("recall", str(path), "teapot", "--scope", "kitchen")
    assert missing.returncode == 1 and "no memory" in missing.stdout
    other_scope = _run("recall", str(path), "cup", "--scope", "garage")
    assert other_scope.returncode == 2  # a scope the store does not hold is an error
    assert other_scope.stderr == (f"error: {path} holds no scope 'garage'; its scopes: "
                                  "'kitchen'\n")
    assert other_scope.stdout == ""


def test_errors_are_one_line_not_tracebacks(tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_text("hello")
    proc = _run("inspect", str(junk))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    proc = _run("recall", str(tmp_path / "missing.loci"), "cup")
    assert proc.returncode == 2 and "no store" in proc.stderr


def test_bench_runs_small(capsys):
    assert main(["bench", "--objects", "60", "--scans", "5", "--open-observations", "0"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 60 |")]
    assert [row.split("|")[2].strip() for row in rows] == [
        "durable", "fast", "fast + camera", "fast + 128-d embeddings (18 seen, 2 new)"]
    days = [line.split("|") for line in out.splitlines()
            if line.startswith(("| clutter |", "| removals |", "| moves_across_rooms |"))]
    assert [d[1].strip() for d in days] == ["clutter", "removals", "moves_across_rooms"]
    # every scan of each day timed, with its coarse depth image
    assert [(d[2].strip(), d[5].strip()) for d in days] == [
        ("162", "24x32"), ("369", "24x32"), ("303", "24x32")]


def test_bench_queries_takes_the_sizes_asked_for(capsys):
    # 1000,10000 was the ingest default, and so was taken for "not given": 100k ran too
    assert main(["bench", "queries", "--objects", "150,300"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines()
                  if line.startswith("| query |"))
    assert header == "| query | 150 objects | 300 objects |"
    with pytest.raises(SystemExit) as bad:
        main(["bench", "queries", "--objects", "0"])
    assert bad.value.code == 2
    assert "expected store sizes such as 1000,10000, got '0'" in capsys.readouterr().err


def test_a_simulated_day_that_restarts_is_refused():
    from locimem.bench.ingest import bench_day

    with pytest.raises(ValueError, match="'kitchen_day' restarts the process"):
        bench_day("kitchen_day")


def test_describe_words_one_object_with_its_relations(tmp_path, capsys):
    from locimem import Detection, ObjectMemory

    path = tmp_path / "table.loci"
    with ObjectMemory.open(path) as mem:
        for t in range(8):
            mem.observe(float(t), [Detection("table", 0.9, (1.0, 1.0, 0.4), (1.2, 0.8, 0.8)),
                                   Detection("cup", 0.9, (1.1, 1.0, 0.85), (0.08, 0.08, 0.1)),
                                   Detection("book", 0.9, (4.0, 1.0, 0.1), (0.2, 0.15, 0.05))])
        cup = next(o.id for o in mem.objects() if o.label == "cup")
        table = next(o.id for o in mem.objects() if o.label == "table")
        said = mem.describe(cup)
    assert main(["describe", str(path), str(cup), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["text"] == said and f"on the table (#{table})" in said
    assert (doc["object"]["id"], doc["object"]["label"]) == (cup, "cup")
    on = [r for r in doc["relations"] if r["relation"] == "on"]
    assert [(r["subject"], r["object"]) for r in on] == [(cup, table)]
    assert all("book" not in json.dumps(r) for r in doc["relations"])  # the far book: absent
    assert main(["describe", str(path), str(cup)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == said and f"#{cup} cup on #{table} table" in "\n".join(lines)
    assert main(["describe", str(path), "99"]) == 2
    assert "no object 99" in capsys.readouterr().err
