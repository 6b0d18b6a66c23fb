"""Topics, ports and endpoint strings."""

from __future__ import annotations

import pytest

from navi_contracts import MODELS, topics


def test_topic_names_and_ports_match_the_design() -> None:
    assert topics.ALL_TOPICS == (
        "distance_matrix_v2",
        "action_v2",
        "step_request_v2",
        "step_result_v2",
        "telemetry_event_v2",
    )
    assert (topics.ENV_PUB_PORT, topics.ENV_REP_PORT, topics.ACTOR_PUB_PORT) == (5559, 5560, 5557)
    assert topics.DASHBOARD_PORT == 8050
    # Servers bind loopback by default; clients connect to localhost (issue 19).
    assert topics.ENV_PUB_BIND == "tcp://127.0.0.1:5559"
    assert topics.ENV_REP_BIND == "tcp://127.0.0.1:5560"
    assert topics.ACTOR_PUB_BIND == "tcp://127.0.0.1:5557"
    assert topics.ENV_REP_CONNECT == "tcp://localhost:5560"
    assert topics.ACTOR_PUB_CONNECT == "tcp://localhost:5557"


def test_every_topic_has_one_model() -> None:
    assert set(topics.TOPIC_MODELS) == set(topics.ALL_TOPICS)
    assert set(topics.TOPIC_MODELS.values()) <= set(MODELS)
    for topic, model in topics.TOPIC_MODELS.items():
        assert topic == f"{model.WIRE_KIND}_v{model.SCHEMA_VERSION}"


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_bad_ports_are_rejected(port: int) -> None:
    with pytest.raises(ValueError, match=r"port must be in 1\.\.65535"):
        topics.bind_endpoint(port)
    with pytest.raises(ValueError, match=r"port must be in 1\.\.65535"):
        topics.connect_endpoint(port, host="example")
