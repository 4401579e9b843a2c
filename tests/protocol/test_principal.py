"""The principal of a remote call: its keyed subject hash."""

from __future__ import annotations

import hashlib
import hmac

from osbp.protocol.canonical import canonical_json, sha256_hex
from osbp.protocol.principal import Principal

KEY = b"k" * 32
JANE = Principal(issuer="https://issuer.example", subject="jane@example.com", organizations=None)


def test_a_keyed_subject_hash_is_the_hmac_of_issuer_and_subject_never_their_plain_sha256() -> None:
    """OSBP spec, Security and Privacy (audit events are redacted): a guessable subject such as an email
    address cannot be recovered from its hash by hashing guesses without the key."""
    keyed = JANE.keyed(KEY).subject_hash
    identity = {"iss": JANE.issuer, "sub": JANE.subject}
    assert keyed == hmac.new(KEY, canonical_json(identity), hashlib.sha256).hexdigest()
    assert keyed not in {sha256_hex(identity), hashlib.sha256(JANE.subject.encode()).hexdigest()}
    assert JANE.keyed(b"q" * 32).subject_hash != keyed  # another deployment: another hash


def test_the_key_is_neither_shown_nor_compared() -> None:
    """Platform choice: a secret never reaches a repr (logs, tracebacks); the principal is the same one."""
    keyed = JANE.keyed(KEY)
    assert "kkkk" not in repr(keyed)
    assert keyed == JANE
