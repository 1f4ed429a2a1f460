"""On the bench's population of people who each type their own way (tests/support/bench/
population.py), `adaptive` meets its targets and beats every uniform quiet period, and
every fixed window, at the same median delay."""

from __future__ import annotations

import pytest

from infra.replay.simulate import replay
from tests.support.bench import population


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    fragments = population.population(population.SEED)
    return [replay(name, rules, fragments) for name, rules in population.policies()]


def test_adaptive_meets_its_targets(rows):
    [adaptive] = [r for r in rows if r["policy"] == "adaptive"]

    assert adaptive["ai_calls_per_burst"] <= population.TARGET_AI_CALLS
    assert adaptive["delay_median_s"] <= population.TARGET_DELAY_S


@pytest.mark.parametrize("family", ["quiet:", "fixed:"])
def test_no_uniform_policy_is_as_good_at_the_same_delay(rows, family):
    [adaptive] = [r for r in rows if r["policy"] == "adaptive"]
    uniform = sorted(
        (r["delay_median_s"], r["ai_calls_per_burst"]) for r in rows if r["policy"].startswith(family)
    )

    assert uniform[0][0] <= adaptive["delay_median_s"] <= uniform[-1][0]  # inside the frontier's span
    for (d0, c0), (d1, c1) in zip(uniform, uniform[1:], strict=False):
        if d0 <= adaptive["delay_median_s"] <= d1:
            at_same_delay = c0 + (c1 - c0) * (adaptive["delay_median_s"] - d0) / (d1 - d0)
            assert adaptive["ai_calls_per_burst"] < at_same_delay
    assert all(c > adaptive["ai_calls_per_burst"] for d, c in uniform if d <= adaptive["delay_median_s"])
