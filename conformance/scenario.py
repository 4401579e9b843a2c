"""Arming platform outcomes through the scenario URL.

The contract: `POST <scenario-url>` with JSON `{"organization_id": "<fixture org>", "outcome":
"slot_taken" | "rate_limited"}`; any 2xx answer means the outcome is armed and the platform's next
appointment create for that organization consumes it. The battery arms right before the approved retry,
the first call that reaches the platform's create.
"""

from __future__ import annotations

from typing import Literal

import httpx2

__all__ = ["Outcome", "arm"]

Outcome = Literal["slot_taken", "rate_limited"]


async def arm(url: str, organization_id: str, outcome: Outcome, *, call_timeout: float) -> str | None:
    """Arm `outcome`; None when armed, else why not."""
    # trust_env=False: the scenario surface is a test-only endpoint, normally on loopback, and a proxy
    # picked up from the environment must not intercept it.
    try:
        async with httpx2.AsyncClient(timeout=call_timeout, trust_env=False) as client:
            response = await client.post(url, json={"organization_id": organization_id, "outcome": outcome})
    except httpx2.HTTPError as exc:
        return f"could not reach the scenario URL: {type(exc).__name__}: {exc}"
    if not 200 <= response.status_code < 300:
        return f"the scenario URL answered HTTP {response.status_code} when arming {outcome}"
    return None
