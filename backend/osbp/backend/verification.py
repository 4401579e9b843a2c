"""Customer verification: codes sent through the outbox, checked and consumed by appointment creates.

A send makes a random 6-digit code for (organization, purpose `booking:<organization id>`, contact),
stores only a salted SHA-256 of it, supersedes any open challenge for the same triple, and writes the
message to the outbox (the stand-in SMS/email gateway). A challenge expires after 10 minutes and locks
after 5 wrong attempts. Sends are limited per contact. The sandbox organization always issues `123456`
and is exempt from the send limit. Codes never appear in API responses or logs.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime

from sqlmodel import Session, col, func, select

from osbp.backend.contacts import check_email, check_phone, mask
from osbp.backend.dialects import serialise
from osbp.backend.models import Organization, OutboxMessage, VerificationChallenge
from osbp.backend.problems import ProblemError
from osbp.backend.tokens import TokenSource
from osbp.backend.wire import VerificationOut, VerificationSend

__all__ = ["CODE_TTL_SECONDS", "MAX_ATTEMPTS", "SANDBOX_CODE", "check_code", "purpose_for", "send_code"]

CODE_TTL_SECONDS = 600
MAX_ATTEMPTS = 5
SANDBOX_CODE = "123456"


def purpose_for(organization_id: str) -> str:
    """The booking purpose string of an organization."""
    return f"booking:{organization_id}"


def _hash(challenge_id: str, code: str) -> str:
    return hashlib.sha256(f"{challenge_id}:{code}".encode()).hexdigest()


def send_code(
    session: Session,
    *,
    organization: Organization,
    request: VerificationSend,
    now: datetime,
    tokens: TokenSource,
    send_limit: int,
    send_window_seconds: int,
) -> VerificationOut:
    """Issue a challenge and write its message to the outbox, or refuse before writing anything."""
    if request.purpose != purpose_for(organization.id):
        raise ProblemError("invalid_purpose", f"purpose must be {purpose_for(organization.id)!r}.")
    channel = request.channel or ("sms" if request.phone else "email")
    raw = request.phone if channel == "sms" else request.email
    if raw is None:
        raise ProblemError(
            "invalid_contact", f"{channel} verification needs {_field(channel)}.", {"field": _field(channel)}
        )
    contact = check_phone(raw, "phone") if channel == "sms" else check_email(raw, "email")
    # PostgreSQL: the send limit's count and the superseding of open codes see every earlier send.
    serialise(session, f"contact:{organization.id}:{contact}")
    epoch = int(now.timestamp())
    if not organization.verification_sandbox:
        recent = session.exec(
            select(func.count())
            .select_from(VerificationChallenge)
            .where(
                VerificationChallenge.organization_id == organization.id,
                VerificationChallenge.contact == contact,
                col(VerificationChallenge.created_utc) > epoch - send_window_seconds,
            )
        ).one()
        if recent >= send_limit:
            raise ProblemError(
                "verification_send_limited",
                "Too many verification messages to this contact; try again later.",
                headers={"Retry-After": str(send_window_seconds)},
            )
    for open_challenge in _challenges(session, organization.id, contact, states=("open", "locked")):
        open_challenge.state = "superseded"
        session.add(open_challenge)
    code = SANDBOX_CODE if organization.verification_sandbox else tokens.code6()
    challenge = VerificationChallenge(
        id=tokens.hex_id("ver"),
        organization_id=organization.id,
        purpose=request.purpose,
        channel=channel,
        contact=contact,
        code_hash="",
        created_utc=epoch,
        expires_utc=epoch + CODE_TTL_SECONDS,
    )
    challenge.code_hash = _hash(challenge.id, code)
    session.add(challenge)
    session.add(
        OutboxMessage(
            id=tokens.hex_id("msg"),
            organization_id=organization.id,
            channel=channel,
            to=contact,
            purpose=request.purpose,
            body=f"{organization.name}: your verification code is {code}. It expires in 10 minutes.",
            code=code,
            sent_utc=epoch,
        )
    )
    return VerificationOut(
        id=challenge.id,
        organization_id=organization.id,
        purpose=request.purpose,
        channel="sms" if channel == "sms" else "email",
        destination=mask(contact),
        expires_in_seconds=CODE_TTL_SECONDS,
    )


def check_code(
    session: Session, *, organization: Organization, contact: str, code: str, now: datetime
) -> VerificationChallenge:
    """The matching open challenge (for the caller to consume), or 400 `verification_failed` with a reason.

    A wrong code counts an attempt, and the fifth wrong attempt locks the challenge, before the refusal is
    raised: the caller's transaction must commit on that `ProblemError` (`Database.write(commit_on=...)`).
    """
    latest = next(iter(_challenges(session, organization.id, contact, states=("open", "locked"))), None)
    if latest is None:
        raise _failed("no_challenge", "No verification code was sent to this contact; send one first.")
    if latest.state == "locked":
        raise _failed("locked", "Too many wrong codes; send a new code.")
    if latest.expires_utc <= now.timestamp():
        raise _failed("expired", "The verification code expired; send a new code.")
    if not hmac.compare_digest(latest.code_hash, _hash(latest.id, code)):
        latest.attempts += 1
        if latest.attempts >= MAX_ATTEMPTS:
            latest.state = "locked"
        session.add(latest)
        raise _failed("mismatch", "The verification code is not correct.")
    return latest


def _failed(reason: str, detail: str) -> ProblemError:
    return ProblemError("verification_failed", detail, {"reason": reason})


def _field(channel: str) -> str:
    return "phone" if channel == "sms" else "email"


def _challenges(
    session: Session, organization_id: str, contact: str, *, states: tuple[str, ...]
) -> list[VerificationChallenge]:
    query = (
        select(VerificationChallenge)
        .where(
            VerificationChallenge.organization_id == organization_id,
            VerificationChallenge.purpose == purpose_for(organization_id),
            VerificationChallenge.contact == contact,
            col(VerificationChallenge.state).in_(states),
        )
        .order_by(col(VerificationChallenge.created_utc).desc(), col(VerificationChallenge.id).desc())
    )
    return list(session.exec(query))
