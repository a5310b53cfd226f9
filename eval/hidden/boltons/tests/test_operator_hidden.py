"""The operator's tests (make eval's strongest set-up): inputs the own tests do not use."""

from boltons.strutils import bytes2human, ellipsize


def test_hidden_bytes2human_at_exact_powers() -> None:
    assert bytes2human(1024**3) == "1G"
    assert bytes2human(1024**4, 1) == "1.0T"


def test_hidden_ellipsize_hard_cut() -> None:
    assert len(ellipsize("abcdefghijklmnopqrstuvwxyz", 7)) <= 7
    assert ellipsize("abcdefghijklmnopqrstuvwxyz", 7).startswith("abcdef")
