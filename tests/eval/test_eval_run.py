"""Playing scenarios through a memory: the naive baseline, restarts, and a perfect memory that
must score perfectly (which checks the simulator's truth and the metrics against each other)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from locimem import Detection
from locimem.eval.run import (
    NaiveTracker,
    evaluate,
    labels_of,
    naive_factory,
    play,
    truth_frames,
)
from locimem.sim.scenario import Scenario, ScenarioBuilder
from locimem.sim.scenarios import build
from locimem.sim.world import build_world


def det(label, x, y=0.0, z=0.9, conf=0.9):
    return Detection(label, conf, (x, y, z), (0.1, 0.1, 0.1))


# -- the naive baseline ---------------------------------------------------------------------------
def test_naive_gives_a_detection_to_the_nearest_track_within_its_radius():
    n = NaiveTracker()
    n.observe(0.0, [det("cup", 0.0), det("book", 1.0)])
    n.observe(1.0, [det("mug", 0.15), det("book", 1.25)])  # 0.15 m: same; 0.25 m: new
    assert [(o.id, o.label, o.center[0]) for o in n.tracked()] == [
        (1, "mug", 0.15), (2, "book", 1.0), (3, "book", 1.25)]


def test_naive_gives_each_track_at_most_one_detection_per_scan():
    n = NaiveTracker()
    n.observe(0.0, [det("cup", 0.0)])
    n.observe(1.0, [det("cup", 0.05), det("cup", -0.05)])
    assert [(o.id, o.center[0]) for o in n.tracked()] == [(1, 0.05), (2, -0.05)]


def test_naive_never_forgets_and_publishes_everything():
    n = NaiveTracker()
    n.observe(0.0, [det("cup", 0.0, conf=0.05)])  # even a 5 % false positive
    n.observe(1e6, [])
    assert [o.id for o in n.tracked()] == [1]
    assert n.objects(status="confirmed") == n.tracked() == n.objects()
    assert n.objects(status="lost") == []


def test_naive_recall_names_the_most_recently_seen_match():
    n = NaiveTracker()
    n.observe(0.0, [det("cup", 0.0), det("coffee cup", 2.0)])
    n.observe(5.0, [det("coffee cup", 2.0)])
    r = n.recall("the cup")
    assert (r.found, r.status, r.center) == (True, "confirmed", (2.0, 0.0, 0.9))
    assert not n.recall("vase").found
    n.observe(6.0, [det("cupboard", 5.0)])
    assert n.recall("cup").center == (2.0, 0.0, 0.9)


def test_naive_factory_keeps_one_tracker_per_path_across_restarts():
    make = naive_factory()
    a = make("x.loci")
    a.observe(0.0, [det("cup", 0.0)])
    a.close()
    assert make("x.loci") is a and [o.id for o in make("x.loci").tracked()] == [1]
    assert make("y.loci") is not a


# -- playing --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny() -> Scenario:
    b = ScenarioBuilder("tiny", build_world(4, rooms=("kitchen",)), seed=4)
    b.look("kitchen/table", 12)
    b.restart()
    b.look("kitchen/table", 4)
    b.look("kitchen/counter", 6)
    return b.build()


@dataclass
class Spy:
    inner: NaiveTracker
    log: list

    def observe(self, t, detections=(), camera=None):
        self.log.append(("observe", t, camera is not None))
        return self.inner.observe(t, detections, camera)

    def tracked(self):
        return self.inner.tracked()

    def objects(self, status=None):
        return self.inner.objects(status)

    def recall(self, name):
        return self.inner.recall(name)

    def close(self):
        self.log.append(("close",))


def test_play_reopens_the_same_file_at_a_restart(tiny):
    log, paths = [], []
    naive = NaiveTracker()

    def factory(path):
        paths.append(path)
        return Spy(naive, log)

    run = play(tiny, factory, tracker="spy")
    restart_at = next(f.index for f in tiny.frames if f.restart)
    assert len(paths) == 2 and paths[0] == paths[1] and paths[0].endswith("tiny.loci")
    assert log.index(("close",)) == restart_at  # closed right before the restart scan
    assert log[-1] == ("close",)
    assert [e[1] for e in log if e[0] == "observe"] == [f.t for f in tiny.frames]
    assert all(e[2] for e in log if e[0] == "observe")  # every scan came with its camera
    assert len(run.frames) == len(tiny.frames)
    assert run.tracker == "spy" and run.scenario == "tiny"


def test_play_without_restarts_stays_in_memory():
    b = ScenarioBuilder("plain", build_world(4, rooms=("kitchen",)), seed=4)
    b.look("kitchen/table", 3)
    paths = []
    naive = NaiveTracker()
    play(b.build(), lambda p: paths.append(p) or naive)
    assert paths == [":memory:"]


def test_locimem_keeps_its_identities_through_a_restart(tiny):
    run = play(tiny)
    restart_at = next(f.index for f in tiny.frames if f.restart)
    before = {h.id for h in run.frames[restart_at - 1].published}
    after = {h.id for h in run.frames[restart_at].published}
    assert before and before <= after | {h.id for h in run.frames[restart_at].held}
    assert run.observe_s > 0


# -- a perfect memory scores perfectly ------------------------------------------------------------
class Oracle:
    """Publishes exactly what a perfect memory could know, under the true ids and labels, and
    calls a thing lost once its place was seen empty."""

    def __init__(self, scenario: Scenario):
        self.s = scenario
        self.by_t = {f.t: f for f in scenario.frames}
        self.frame = None
        self.gone: dict[int, tuple] = {}

    def observe(self, t, detections=(), camera=None):
        previous = self.frame
        self.frame = self.by_t[t]
        if previous is not None:
            for o, p in previous.truth.known.items():
                if o not in self.frame.truth.known:
                    self.gone[o] = p
        for o in self.frame.truth.known:
            self.gone.pop(o, None)

    def _view(self, o, p, status):
        return type("V", (), {"id": o, "label": self.s.label_of(o), "center": p,
                              "status": status})()

    def tracked(self):
        return [self._view(o, p, "confirmed") for o, p in sorted(self.frame.truth.known.items())]

    def objects(self, status=None):
        lost = [self._view(o, p, "lost") for o, p in sorted(self.gone.items())]
        return self.tracked() + lost

    def recall(self, name):
        for v in self.objects():
            if v.label == name:
                return type("R", (), {"found": True, "status": v.status, "center": v.center})()
        return type("R", (), {"found": False, "status": None, "center": None})()

    def close(self):
        pass


@pytest.mark.parametrize("name", ["kitchen_day", "moves_across_rooms", "removals"])
def test_a_perfect_memory_scores_perfectly(name):
    s = build(name)
    oracle = Oracle(s)
    report = evaluate(s, play(s, lambda _path: oracle, tracker="oracle"))
    m = report.mot
    assert (m.idf1, m.mota, m.num_switches, m.num_false_positives, m.num_misses) == (
        1.0, 1.0, 0, 0, 0)
    assert all(not f.duplicates and not f.phantoms and f.coverage == 1.0 for f in report.frames)
    assert report.label_accuracy == 1.0
    assert report.recall and report.recall_accuracy == 1.0
    assert report.wrongful_losses == ()
    assert all(mv.latency_s == 0.0 and mv.kept_id for mv in report.moves)
    assert all(r.to_lost_s == 0.0 for r in report.removals)
    assert len(report.moves) == sum(e.kind == "move_far" for e in s.events)
    assert len(report.removals) == sum(e.kind == "remove" for e in s.events)


def test_truth_frames_and_labels_follow_the_scenario(tiny):
    truths = truth_frames(tiny)
    assert [t.t_s for t in truths] == [f.t for f in tiny.frames]
    for t, f in zip(truths, tiny.frames, strict=True):
        assert t.detected == {s for s in f.sources if s is not None}
        assert t.known == f.truth.known and t.visible == f.truth.visible
    assert labels_of(tiny) == {i: o.label for i, o in tiny.objects.items()}
