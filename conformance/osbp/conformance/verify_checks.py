"""verification.verify: driven after verification.send, graded against the fixtures' `pre_verification`.

The spec lets a platform without an independent pre-verification step refuse the tool with an
adapter-specific Problem; one that has the step verifies the code. Either way a wrong code is never
verified, so a server that always answers `verified: true` fails.
"""

from __future__ import annotations

from typing import Any

from osbp.conformance.grading import expect
from osbp.conformance.probe import Probe
from osbp.conformance.wire import Exchange

__all__ = ["VERIFY", "grade_verify", "wrong_code"]

#: The MCP name of verification.verify.
VERIFY = "osbp_verification_verify"


def wrong_code(code: str) -> str:
    """A code of the same shape that differs from `code` in every character."""
    return "".join(
        str((int(char) + 1) % 10) if char.isdigit() else ("b" if char.lower() == "a" else "a")
        for char in code
    )


def _verified(exchange: Exchange) -> bool:
    value = exchange.value
    return isinstance(value, dict) and value.get("verified") is True


async def grade_verify(probe: Probe, contact: dict[str, Any], purpose: str) -> None:
    """Grade verify with a wrong code, then with the fixture code (call right after verification.send)."""
    grader, service = probe.grader, probe.fixtures.services.verification
    supported = service.pre_verification
    with grader.check("verification.verify_wrong_code_refused"):
        wrong = wrong_code(service.code)
        refused = await probe.wire.call(VERIFY, {"customer": contact, "purpose": purpose, "code": wrong})
        expect(
            refused.ok is False and not _verified(refused),
            f"verification.verify answered a wrong code {wrong!r} as verified",
            expected="a failure (verification_failed, or the tool refused)",
            observed=refused.describe() + (f" {refused.value!r}" if refused.ok else ""),
        )
        if supported:
            expect(
                refused.code == "verification_failed",
                "a platform that pre-verifies must refuse a wrong code with verification_failed",
                expected="verification_failed",
                observed=refused.describe(),
            )
    if supported is None:
        grader.skipped(
            "verification.verify_code",
            "the fixtures do not say whether the platform pre-verifies "
            "(services.verification.pre_verification)",
        )
        return
    with grader.check("verification.verify_code"):
        arguments = {"customer": contact, "purpose": purpose, "code": service.code}
        answer = await probe.wire.call(VERIFY, arguments)
        if supported:
            value = answer.value
            expect(isinstance(value, dict), f"verification.verify of the right code: {answer.describe()}")
            wanted = {"verified": True, "method": service.method, "purpose": purpose}
            got = {key: value.get(key) for key in wanted}
            expect(got == wanted, f"verify answered {got!r}", expected=str(wanted), observed=str(got))
        else:
            expect(
                answer.ok is False and not _verified(answer),
                "the platform has no pre-verification step, yet verification.verify answered the code as "
                "verified (the spec: reject the tool rather than simulate it)",
                expected="the tool refused with a Problem",
                observed=answer.describe() + (f" {answer.value!r}" if answer.ok else ""),
            )
            expect(
                answer.code != "verification_failed",
                "the refusal says the customer's right code was wrong",
                expected="an adapter-specific Problem (the tool is not offered)",
                observed=answer.describe(),
            )
