"""Redaction (values.redact_url, url_secrets, scrub): a URL shows what its store's parser reads,
never a secret; anything a parser could misread shows the scheme only."""

from __future__ import annotations

import pytest

from completion_claim.errors import UsageError
from completion_claim.observe.values import (
    ambiguous_url,
    is_secret_name,
    redact_url,
    refuse_ambiguous_url,
    scrub,
    url_secrets,
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # libpq reads '#' and '?' before the '@' as part of the password.
        ("postgresql://u:pa#ss?x@127.0.0.1/test", "postgresql://u:***@127.0.0.1/test"),
        ("postgres://u:pa?ss@h:5432/db", "postgres://u:***@h:5432/db"),
        (
            "postgresql://u:pw@h/db?sslmode=require&sslpassword=k&application_name=a",
            "postgresql://u:***@h/db?application_name=a&sslmode=require&sslpassword=***",
        ),
        ("postgresql://u:pw@[::1]:5432/db", "postgresql://u:***@[::1]:5432/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        # What libpq cannot read, or reads as a host or path holding part of the password.
        ("postgresql://u:pw@[::1/db", "postgresql://***"),
        ("postgresql://u:p%zzw@h/db", "postgresql://***"),
        ("postgresql://u:pw@h/db?api_key=k", "postgresql://***"),
        ("postgresql://u:p@ss@h/db", "postgresql://***"),
        ("postgresql://u:p/w@h/db", "postgresql://***"),
        # urlsplit's stores: the password up to the last '@' of the authority.
        ("mysql://u:p@ss@h/db", "mysql://u:***@h/db"),
        ("mysql://u:pa#ss@h/db", "mysql://***"),
        ("redis://u:12/34@h/0", "redis://***"),
        (
            "https://h/x?api_key=k3y&Access_Token=t0k&page=2",
            "https://h/x?api_key=***&Access_Token=***&page=2",
        ),
        (
            "https://h/x?client_secret=s3c&auth=a0a&credentials=c4c",
            "https://h/x?client_secret=***&auth=***&credentials=***",
        ),
        ("https://mastodon.example/@someone", "https://mastodon.example/@someone"),
        ("https://u:pa#ss@h/x", "https://***"),
        ("https://u:12/34@h/x", "https://***"),  # a digit password read as a port: hidden
        ("sqlite:////tmp/a.db", "sqlite:////tmp/a.db"),
        # A secret that also spells part of what would be shown: the scheme only.
        ("https://h/x?token=h", "https://***"),
    ],
)
def test_a_url_shows_what_its_parser_reads_without_secrets(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    ("argument", "shown"),
    [
        ("--db=postgresql://u:s3cret@h/db", "--db=postgresql://u:***@h/db"),
        ("--api-key=s3cret", "--api-key=***"),
        ("PGPASSWORD=s3cret", "PGPASSWORD=***"),
        ("host=h password='s3 cret' dbname=d", "host=h password=*** dbname=d"),
        ("--token=s3cret --verbose", "--token=*** --verbose"),
        ("-k", "-k"),
        ("tests/test_calc.py::test_add", "tests/test_calc.py::test_add"),
        ("--maxfail=1", "--maxfail=1"),
    ],
)
def test_an_argv_item_is_redacted_the_same_way(argument: str, shown: str) -> None:
    """The test-run observer redacts each argv item with redact_url."""
    assert redact_url(argument) == shown


@pytest.mark.parametrize(
    "name", ["password", "sslpassword", "api_key", "X-Auth", "access_token", "passwd", "CREDENTIAL"]
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["sslmode", "page", "user", "host", "application_name"])
def test_names_that_carry_no_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_url_secrets_hold_every_reading_and_its_pieces() -> None:
    secrets = url_secrets("http://ops:pw-one#pw-two@h/x")
    for secret in ("pw-one#pw-two", "pw-one", "pw-two"):
        assert secret in secrets
    assert (
        scrub("Invalid port: 'pw-one'\nat pw-one#pw-two", secrets) == "Invalid port: '***' at ***"
    )
    decoded = url_secrets("mysql://u:p%23w@h/db")
    assert "p%23w" in decoded
    assert "p#w" in decoded


@pytest.mark.parametrize(
    ("url", "ambiguous"),
    [
        ("postgresql://u:pa#ss@h/db", False),  # libpq: one '@' before the first '/'
        ("postgresql://u@h/db?application_name=a@b", True),
        ("mysql://u:pa#ss@h/db", True),
        ("mysql://u:p@ss@h/db", False),  # urlsplit ends the password at the last '@'
        ("redis://u:pw@h/0#a@b", True),
        ("https://h/x?email=a@b", False),  # '@' in an HTTP path or query is an '@'
        ("http://h?email=a@b", True),
    ],
)
def test_ambiguous_urls(url: str, ambiguous: bool) -> None:
    assert ambiguous_url(url) is ambiguous


def test_an_ambiguous_url_is_refused_showing_the_scheme_only() -> None:
    with pytest.raises(UsageError, match=r"^URL 'mysql://\*\*\*': percent-encode") as refused:
        refuse_ambiguous_url("mysql://u:pw-one#pw-two@h/db")
    assert "pw-" not in str(refused.value)
