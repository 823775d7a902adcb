"""A lecture hall: replicas behind nginx (deploy/nginx.conf.template, tools/hall.py) and the class bench through it
(tools/bench_class.py). The configuration passes `nginx -t`; a short loopback run through nginx sees no errors, no
cross-talk and no affinity break, survives a killed replica, and the affinity check is shown able to fail (round-robin
is caught). Skipped with the reason when nginx is not installed (`.ci/run` installs it)."""
from __future__ import annotations

import argparse

import pytest

from tools import bench_class, hall

NO_NGINX = "nginx is not installed (`apt-get install -y nginx`; .ci/run installs it)"
needs_nginx = pytest.mark.skipif(hall.nginx_binary() is None, reason=NO_NGINX)


# ------------------------------------------------------------------------------------------ the configuration
def test_the_configuration_pins_by_cookie_and_forwards_websockets(tmp_path):
    text = hall.render_config(8500, [8601, 8602, 8603], tmp_path)
    assert "hash $k3lite_pin consistent;" in text and "ip_hash" not in text.replace("# ", "")
    assert text.count("server 127.0.0.1:86") == 3 and "max_fails=1 fail_timeout=10s" in text
    assert "proxy_set_header Upgrade $http_upgrade;" in text and "proxy_set_header Connection $connection_upgrade;" in text
    assert "listen 127.0.0.1:8500;" in text, "loopback only"
    assert str(tmp_path) in text and "/var/" not in text, "every file nginx writes stays in the hall's folder"
    assert "hash" not in hall.render_config(8500, [8601], tmp_path, affinity="none").split("upstream", 1)[1][:200]
    with pytest.raises(ValueError, match="affinity"):
        hall.render_config(8500, [8601], tmp_path, affinity="ip")
    with pytest.raises(ValueError, match="at least one replica"):
        hall.render_config(8500, [], tmp_path)


@needs_nginx
@pytest.mark.parametrize("affinity", ["cookie", "none"])
def test_nginx_accepts_the_rendered_configuration(tmp_path, affinity):
    conf = hall.write_config(tmp_path, hall.render_config(18500, [18601, 18602], tmp_path, affinity))
    ok, said = hall.nginx_test(conf, tmp_path)
    assert ok, said
    broken = hall.write_config(tmp_path, hall.render_config(18500, [18601], tmp_path).replace("hash $k3lite_pin",
                                                                                              "hash_by $k3lite_pin"),
                               "broken.conf")
    assert not hall.nginx_test(broken, tmp_path)[0], "nginx -t must be able to refuse"


# ------------------------------------------------------------------------------------------ the checks can fail
class _Hall:
    ports, killed = [8601, 8602], set()
    replica_of = hall.Hall.replica_of


def test_an_answer_from_another_replica_or_a_4xx_is_an_affinity_break():
    found = bench_class.HallFindings()
    s = bench_class.ProxiedSession("http://127.0.0.1:8500", 3, None, _Hall(), found)
    s.replica = 0
    s.check("the websocket", {hall.REPLICA_HEADER: "127.0.0.1:8601"})
    assert found.breaks == [] and found.requests == 1
    s.check("media /media/abc", {hall.REPLICA_HEADER: "127.0.0.1:8602"})
    s.check("a static file", {hall.REPLICA_HEADER: "127.0.0.1:8601"}, status=404)
    s.check("the websocket", {hall.REPLICA_HEADER: "127.0.0.1:8609, 127.0.0.1:8602"})  # nginx tried two: the last
    assert found.breaks == ["session 3: media /media/abc answered by replica 1, its pin is on replica 0",
                            "session 3: a static file answered 404 (replica 0)",
                            "session 3: the websocket answered by replica 1, its pin is on replica 0"]


def test_a_view_is_restored_only_if_every_parameter_comes_back():
    assert bench_class.restored("moe_experts=64&moe_top_k=8", "moe_top_k=8&moe_experts=64&moe_x=1")
    assert not bench_class.restored("moe_experts=64&moe_top_k=8", "moe_experts=64")
    assert not bench_class.restored("moe_experts=64", "moe_experts=65")


def test_the_ratio_sentence_names_the_worst_page_and_the_target():
    def rep(p95):
        return {"replicas": 3, "sessions": 60, "cpus": 2,
                "latency": [{"page": p, "kind": "rerun", "n": 10, "p95_s": v} for p, v in p95.items()]}
    assert bench_class.ratio_sentence(rep({"moe": 0.6, "kda": 0.3}), rep({"moe": 0.5, "kda": 0.1})) == (
        "rerun p95, 3 replicas vs 1 at 30 sessions per core: worst page kda 3.00x (0.30 s vs 0.10 s), beyond the "
        "1.5x target")
    assert "within the 1.5x target" in bench_class.ratio_sentence(rep({"moe": 0.5}), rep({"moe": 0.5}))


# ------------------------------------------------------------------------------------------ two replicas, live
def _args(sessions: int) -> argparse.Namespace:
    return bench_class.parse_args(["--replicas", "2", "--sessions", str(sessions), "--pages", "moe,kda",
                                   "--think", "0.5,1.5", "--ramp", "2"])


@needs_nginx
@pytest.mark.load
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_replicas_through_nginx_keep_every_session_pinned_and_survive_a_killed_replica():
    """One pair of replicas, two front doors. Round-robin first (2 sessions, 15 s): the check reports breaks, so it
    can fail. Then the cookie door (4 sessions, 45 s, a replica killed after 22 s): no errors, no cross-talk, no
    affinity break; the killed replica's sessions reconnect to the other one with their view restored from the URL,
    and the other sessions see nothing."""
    with hall.Hall(2) as h:
        round_robin = h.open_door("none")
        bad = bench_class.measure_hall(h, round_robin, "round-robin", _args(2), 0.25)
        assert bad["affinity_breaks"], "round-robin was not caught: the affinity check cannot fail"
        good = bench_class.measure_hall(h, h.url, "fault", _args(4), 0.75, fault=True, warmup=False)
    bench_class.print_reports([bad, good])  # shown with -s
    assert good["affinity_breaks"] == [], good["affinity_breaks"]
    assert good["errors_elsewhere"] == [], good["errors_elsewhere"]
    assert good["cross_talk"] == [] and good["own_echoes_verified"] >= 1
    assert good["reruns"] >= 4 and good["affinity_checked"] >= 8
    assert good["fault"] is not None and good["fault"]["sessions"] >= 1
    assert good["moves"] and all(m["restored"] for m in good["moves"]), good["moves"]
    assert {m["to_replica"] for m in good["moves"]} == {1 - good["fault"]["replica"]}
    assert bench_class.failed(good) == []
