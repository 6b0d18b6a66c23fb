"""Repository-wide pytest setup: hypothesis profiles (``ci`` has no deadline on a noisy 2-core box)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
