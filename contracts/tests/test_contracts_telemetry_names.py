"""The shared telemetry name list: spellings, charts and the acting-event rule."""

from __future__ import annotations

from navi_contracts import telemetry_names as names


def test_trainer_spellings_map_onto_the_charted_names() -> None:
    assert names.canonical_metric_name("charts/sps") == names.SPS
    assert names.canonical_metric_name("losses/approx_kl") == names.KL
    assert names.canonical_metric_name("time/update_backward") == "timing/update_backward"
    assert names.canonical_metric_name("reward/env/progress") == "reward/env/progress"
    assert names.charted("timing/update_backward") and names.charted("reward/env/progress")
    assert not names.charted("steps") and names.understood("steps")
    assert not names.understood("steps_per_second")  # the brain's old spelling: gone for good


def test_inference_and_the_brain_are_acting_events_training_is_not() -> None:
    assert names.is_acting_event(names.acting_event(names.SERVICE_SOURCE, names.STATS))
    assert names.is_acting_event("actor.inference.stats")
    assert not names.is_acting_event(names.TRAINING_UPDATE)
    assert not names.is_acting_event("actor.servicex.stats")


def test_every_chart_series_is_a_known_name_and_appears_once() -> None:
    series = [name for _, group in names.CHARTS for name in group]
    assert len(series) == len(set(series))
    assert not set(series) & names.STATUS_ONLY
