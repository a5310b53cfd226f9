"""``claim keygen``, ``claim pubkey``, ``claim check-verdict`` and ``claim export``.

The trust modules are imported inside each command, so commands that never sign do not load
the crypto library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .._files import read_limited, source_name, write_atomic
from .._json import DEFAULT_MAX_BYTES, decode_bytes, dumps, loads
from ..errors import InvalidDocument, UsageError
from ..model import Claim, parse_claim
from ..trust import check_signatures
from ..verify import verify
from . import EXIT_UNVERIFIED, EXIT_VERIFIED, app
from ._output import emit_json, json_option, say
from .verify_cmd import EXIT_FOR_STATE, decision_time, read_policy

if TYPE_CHECKING:
    from ..public_key import PublicKey


@app.command("keygen")
@click.option(
    "--out",
    "out_path",
    required=True,
    metavar="FILE",
    help="Where to write the private key (mode 0600; an existing file is never replaced).",
)
@json_option("Print {path, public_key, keyid} as JSON.")
def keygen_command(out_path: str, as_json: bool) -> int:
    """Make an Ed25519 signing key; print its public key and key id.

    Put the public key in a policy's trust.observers (for an observer's key) or
    trust.agent_keys (for a key the agent holds).
    """
    from ..trust.keys import SigningKey, write_private_key  # noqa: PLC0415

    key = SigningKey.generate()
    write_private_key(out_path, key)
    if as_json:
        emit_json({"path": out_path, "public_key": key.public.text, "keyid": key.public.keyid})
        return EXIT_VERIFIED
    say(f"wrote private key {out_path} (mode 0600)")
    say(f"public key: {key.public.text}")
    say(f"key id: {key.public.keyid}")
    return EXIT_VERIFIED


@app.command("pubkey")
@click.argument("key_path", metavar="FILE")
@json_option("Print {public_key, keyid} as JSON.")
def pubkey_command(key_path: str, as_json: bool) -> int:
    """Print the public key of the private key in FILE, as a policy's public_key takes it."""
    from ..trust.keys import load_signing_key  # noqa: PLC0415

    public = load_signing_key(key_path).public
    if as_json:
        emit_json({"public_key": public.text, "keyid": public.keyid})
    else:
        click.echo(public.text)
    return EXIT_VERIFIED


@app.command("check-verdict")
@click.argument("path")
@click.option(
    "--public-key",
    "public_key",
    required=True,
    metavar="KEY",
    help="The gate's public key: 'ed25519:...' or a file holding it.",
)
@click.option(
    "--claim",
    "claim_path",
    metavar="FILE",
    help="With an in-toto export: also check that its subject is this claim.",
)
@json_option("Print {valid, accepted, reason, verdict, keyid} as JSON.")
def check_verdict_command(path: str, public_key: str, claim_path: str | None, as_json: bool) -> int:
    """Check a signed verdict (`claim verify --sign-key --out`) or an in-toto export (`claim
    export`) in PATH; exit with the verdict's state.

    \b
    Exit codes: 0 the signature is valid, what the file says is exactly what was signed,
    and the verdict is verified with independence proven; 1 the signature or the file
    does not hold (INVALID: reason), or the verdict is unverified, or verified with
    independence only declared; 2 the verdict is refuted; 3 not a claim (nor an export);
    4 usage.
    """
    from ..trust.keys import read_public_key  # noqa: PLC0415
    from ..trust.verdicts import VerdictRejected, check_verdict, is_envelope  # noqa: PLC0415

    key = read_public_key(public_key)
    document = _read_json(path)
    try:
        if is_envelope(document):
            verdict, about = _check_export(document, key, claim_path)
        else:
            if claim_path is not None:
                raise UsageError("--claim goes with an in-toto export (`claim export`)")
            _parse(document, path)
            assert isinstance(document, dict)
            verdict, about = check_verdict(document, key), "verdict"
    except VerdictRejected as rejected:
        if as_json:
            emit_json({"valid": False, "accepted": False, "reason": str(rejected)})
        else:
            click.echo(f"INVALID: {rejected}")
        return EXIT_UNVERIFIED
    state, independence = verdict.get("state"), verdict.get("independence")
    unproven = state == "verified" and independence != "proven"
    code = EXIT_UNVERIFIED if unproven else EXIT_FOR_STATE.get(str(state), EXIT_UNVERIFIED)
    if as_json:
        emit_json(
            {
                "valid": True,
                "accepted": code == EXIT_VERIFIED,
                "reason": "independence was not proven" if unproven else None,
                "verdict": {
                    name: verdict.get(name)
                    for name in ("state", "independence", "decided_at", "policy_id")
                },
                "keyid": key.keyid,
            }
        )
        return code
    click.echo(
        f"valid: {about} {state!s}, independence {independence!s}, decided at "
        f"{verdict.get('decided_at')!s} under policy {verdict.get('policy_id')!s}, "
        f"signed by key {key.keyid[:16]}"
    )
    if unproven:
        click.echo(
            "not accepted: independence was not proven (the policy that decided it was not "
            "the operator's, e.g. the claim's own)"
        )
    return code


def _check_export(
    document: object, key: PublicKey, claim_path: str | None
) -> tuple[dict[str, Any], str]:
    """The verdict an in-toto export attests, and the words that introduce it."""
    from ..trust.verdicts import check_statement  # noqa: PLC0415

    claim = None
    if claim_path is not None:
        claim, _ = _read_claim(claim_path)
    attested = check_statement(document, key, claim)
    return attested.verdict, (
        f"in-toto statement for task {attested.task} (claim sha256:{attested.claim_digest}), "
        "verdict"
    )


@app.command("export")
@click.argument("path")
@click.option(
    "--in-toto",
    "in_toto",
    is_flag=True,
    help="The format, and the default: an in-toto Statement v1 in a DSSE envelope.",
)
@click.option("--sign-key", "sign_key_path", required=True, metavar="FILE", help="The signing key.")
@click.option("--out", "out_path", metavar="FILE", help="Write here instead of stdout.")
@click.option("--policy", "policy_path", metavar="FILE", help="Operator policy for the verdict.")
@click.option(
    "--at", "at_text", metavar="TIME", help="Decision time (RFC 3339 with offset); default: now."
)
def export_command(
    path: str,
    in_toto: bool,
    sign_key_path: str,
    out_path: str | None,
    policy_path: str | None,
    at_text: str | None,
) -> int:
    """Export the claim in PATH, with a freshly computed verdict, as a signed attestation: a
    DSSE envelope (payload type application/vnd.in-toto+json) holding an in-toto Statement v1
    whose subject is the claim's digest and whose predicate is the claim with its verdict.

    With --out, prints one line naming the file and the claim's digest. `claim check-verdict`
    checks what it writes.
    """
    del in_toto  # the only format: the flag is kept for the scripts that give it
    from ..trust.keys import load_signing_key  # noqa: PLC0415
    from ..trust.verdicts import claim_digest, intoto_statement, sign_statement  # noqa: PLC0415

    key = load_signing_key(sign_key_path)
    at = decision_time(at_text)
    policy = read_policy(policy_path, DEFAULT_MAX_BYTES)
    document, claim = _read_claim(path)
    verdict = verify(claim, at, policy, signatures=check_signatures).to_json()
    envelope = sign_statement(intoto_statement(document, verdict, claim.task.id), key)
    text = dumps(envelope, indent=2) + "\n"
    if out_path is None:
        click.echo(text, nl=False)
        return EXIT_VERIFIED
    write_atomic(out_path, text.encode())
    click.echo(
        f"wrote {out_path}: in-toto statement for task {claim.task.id}, claim "
        f"sha256:{claim_digest(document)}, verdict {verdict['state']}, signed by key "
        f"{key.public.keyid[:16]}"
    )
    return EXIT_VERIFIED


def _read_claim(path: str) -> tuple[dict[str, object], Claim]:
    """A claim file's JSON object and its parsed form; invalid input names the file."""
    document = _read_json(path)
    claim = _parse(document, path)
    assert isinstance(document, dict)
    return document, claim


def _read_json(path: str) -> object:
    try:
        return loads(decode_bytes(read_limited(path, DEFAULT_MAX_BYTES)))
    except InvalidDocument as error:
        raise error.in_source(source_name(path)) from None


def _parse(document: object, path: str) -> Claim:
    try:
        return parse_claim(document)
    except InvalidDocument as error:
        raise error.in_source(source_name(path)) from None
