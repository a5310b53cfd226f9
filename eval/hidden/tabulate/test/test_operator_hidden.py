"""The operator's tests (make eval's strongest set-up): inputs the own tests do not use."""

import tabulate as T


def test_hidden_centre_puts_the_smaller_half_on_top() -> None:
    assert T._align_cell_veritically(["x"], 6, 1, "center") == [" ", " ", "x", " ", " ", " "]


def test_hidden_bottom_puts_the_text_last() -> None:
    assert T._align_cell_veritically(["x", "y"], 5, 1, "bottom") == [" ", " ", " ", "x", "y"]
