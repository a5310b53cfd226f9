"""Ed25519 signing keys: generate, store (PEM PKCS#8, mode 0600), load.

The private key file is the standard unencrypted PEM PKCS#8 form, so ``openssl pkey`` and other
DSSE tools (e.g. securesystemslib's ``file2:`` signer) read it too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .._files import write_atomic
from .._optional import needs_extra
from ..errors import InvalidDocument, UsageError
from ..public_key import PREFIX, PublicKey, parse_public_key
from . import dsse

with needs_extra("sign", dsse.SIGNING):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        load_pem_private_key,
    )

MAX_KEY_FILE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class SigningKey:
    private: Ed25519PrivateKey
    public: PublicKey

    @classmethod
    def from_private(cls, private: Ed25519PrivateKey) -> SigningKey:
        return cls(private, PublicKey.from_raw(private.public_key().public_bytes_raw()))

    @classmethod
    def generate(cls) -> SigningKey:
        return cls.from_private(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: str) -> SigningKey:
        """A key derived from a fixed text (for reproducible test vectors; never for real use)."""
        return cls.from_private(Ed25519PrivateKey.from_private_bytes(_seed_bytes(seed)))

    def pem(self) -> bytes:
        return self.private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())

    def sign_envelope(self, payload_type: str, payload: bytes) -> dict[str, Any]:
        return dsse.sign(payload_type, payload, [self.private])


def _seed_bytes(seed: str) -> bytes:
    return hashlib.sha256(f"completion-claim test key: {seed}".encode()).digest()


def load_signing_key(path: str) -> SigningKey:
    """Read a private key file; every problem is one line naming the file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read key {path}: {exc.strerror or exc}") from None
    try:
        private = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise UsageError(
            f"{path} is not an unencrypted PEM private key (make one with `claim keygen`)"
        ) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise UsageError(f"{path} is not an Ed25519 private key")
    return SigningKey.from_private(private)


def write_private_key(path: str, key: SigningKey) -> None:
    """Write the key readable by its owner only, refusing to replace any existing file."""
    write_atomic(path, key.pem(), exclusive=True, mode=0o600)


def read_public_key(text: str) -> PublicKey:
    """A public key given on the command line: the ``ed25519:...`` text itself, or a file
    holding it on one line (as ``claim pubkey`` prints it)."""
    source = text
    if not text.startswith(PREFIX):
        try:
            with open(text, encoding="utf-8") as handle:
                source = handle.read(4096).strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"--public-key: {text[:60]!r} is neither 'ed25519:...' nor a readable file ({exc})"
            ) from None
    try:
        return parse_public_key(source, "")
    except InvalidDocument as error:
        raise UsageError(f"--public-key: {error.problem}") from None
