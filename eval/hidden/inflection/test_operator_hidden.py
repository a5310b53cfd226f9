"""The operator's tests (make eval's strongest set-up): inputs the own tests do not use."""

import inflection


def test_hidden_dasherize_replaces_every_underscore() -> None:
    assert inflection.dasherize("one_two_three_four") == "one-two-three-four"


def test_hidden_camelize_upper_cases_the_first_letter() -> None:
    assert inflection.camelize("device_type_id") == "DeviceTypeId"
