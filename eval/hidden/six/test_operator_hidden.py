"""The operator's tests (make eval's strongest set-up): inputs the own tests do not use."""

import six


class Meta(type):
    pass


class Outer:
    @six.add_metaclass(Meta)
    class Inner:
        pass


def test_hidden_add_metaclass_keeps_the_qualified_name() -> None:
    assert Outer.Inner.__qualname__ == "Outer.Inner"


def test_hidden_add_metaclass_takes_slots_as_one_string() -> None:
    @six.add_metaclass(Meta)
    class Slotted:
        __slots__ = "xy"  # noqa: PLC0205

    slotted = Slotted()
    slotted.xy = 1
    assert Slotted.__slots__ == "xy"
    assert slotted.xy == 1
