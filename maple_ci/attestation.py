"""The bot's signature on one verification request: "run `script` as committed at `commit`".

The bot signs a request only after its own checks let the script run (github/bot.py holds back
what a fork wrote and no maintainer approved); the center accepts a commit that is on none of its
trusted branches only with such a signature (center/gate.py). So the trust a `maple/port-*` branch
got by its name is bound to content instead: a commit id names its whole tree, and only the holder
of the bot's private key (the `maple` environment's secret MAPLE_SIGNING_KEY, which only the
bot's job on the default branch can read) can sign one. Ed25519 (RFC 8032), through
`cryptography`, which PyGithub already brings. Keys and signatures are base64 of the raw bytes.
"""

import base64
import binascii
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from maple_ci.errors import MapleError

# 64 bytes of signature as base64: what the center's `attestation` input admits (spec:inputs regex)
SIGNATURE = re.compile(r"[A-Za-z0-9+/]{86}==")


def statement(commit: str, script: str) -> bytes:
    """What is signed: one request, by commit id (40 hex digits) and the script's path in it."""
    return f"maple-ci verify v1\ncommit {commit}\nscript {script}\n".encode()


def sign(private_key: str, commit: str, script: str) -> str:
    """The base64 signature of the request with the bot's private key (base64 of the 32-byte seed)."""
    try:
        key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(private_key, validate=True))
    except (ValueError, binascii.Error) as exc:
        raise MapleError("MAPLE_SIGNING_KEY is not the base64 of a 32-byte Ed25519 private key "
                         "(workflows/gitlab/README.md says how to make one)") from exc
    return base64.b64encode(key.sign(statement(commit, script))).decode()


def public_key(private_key: str) -> str:
    """The base64 public key that goes with a private key, for the center's settings (bot_keys)."""
    key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(private_key, validate=True))
    return base64.b64encode(key.public_key().public_bytes_raw()).decode()


def signed_by(signature: str, commit: str, script: str, public_keys: tuple[str, ...]) -> bool:
    """Whether one of `public_keys` signed the request; a malformed key or signature is no signature."""
    if not SIGNATURE.fullmatch(signature):
        return False
    for text in public_keys:
        try:
            key = Ed25519PublicKey.from_public_bytes(base64.b64decode(text, validate=True))
            key.verify(base64.b64decode(signature), statement(commit, script))
            return True
        except (ValueError, binascii.Error, InvalidSignature):
            continue
    return False
