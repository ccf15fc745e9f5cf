"""Shared pytest configuration for the bytelens Python tests.

Hypothesis profiles: "default" (quick, local runs) and "ci" (more examples);
pick one with HYPOTHESIS_PROFILE=ci. Neither has a deadline: a cold import
of numpy or the first view of a dtype can take longer than any fixed limit.
"""

import gc
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    max_examples=100,
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def collect():
    """A function that runs a full garbage collection (frees any reference cycles)."""
    return gc.collect
