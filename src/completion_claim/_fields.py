"""One table per document type drives both the strict parser and the shipped JSON Schema.

Keeping a single description is what lets a test prove that the schema and the parser agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ._json import check_depth
from .errors import InvalidDocument
from .timefmt import parse_time, type_name

Schema = dict[str, Any]


class Kind:
    """How one JSON value is checked, converted and described."""

    def parse(self, value: object, path: str) -> Any:
        raise NotImplementedError

    def schema(self) -> Schema:
        raise NotImplementedError


@dataclass(frozen=True)
class Text(Kind):
    min_length: int = 1
    choices: tuple[str, ...] = ()

    def parse(self, value: object, path: str) -> str:
        if type(value) is not str:
            raise InvalidDocument(path, f"expected a string, got {type_name(value)}")
        if len(value) < self.min_length:
            raise InvalidDocument(path, "must not be empty")
        if self.choices and value not in self.choices:
            allowed = ", ".join(self.choices)
            raise InvalidDocument(path, f"unknown value {value[:40]!r} (allowed: {allowed})")
        return value

    def schema(self) -> Schema:
        out: Schema = {"type": "string"}
        if self.choices:
            out["enum"] = list(self.choices)
        elif self.min_length:
            out["minLength"] = self.min_length
        return out


@dataclass(frozen=True)
class Time(Kind):
    def parse(self, value: object, path: str) -> Any:
        return parse_time(value, path)

    def schema(self) -> Schema:
        # The pattern demands the offset that format "date-time" validators do not all enforce.
        return {
            "type": "string",
            "format": "date-time",
            "pattern": (
                r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
            ),
        }


@dataclass(frozen=True)
class PositiveNumber(Kind):
    """A number above 0 and at most ``maximum``: the verifier does arithmetic on it, so a value
    beyond its range is invalid input rather than an overflow later."""

    maximum: int
    maximum_text: str

    def parse(self, value: object, path: str) -> float | int:
        if type(value) not in (int, float):
            raise InvalidDocument(path, f"expected a number, got {type_name(value)}")
        assert isinstance(value, int | float)
        if not value > 0:  # written so that NaN (from a library caller) fails too
            raise InvalidDocument(path, f"must be greater than 0, got {_short(value)}")
        if not value <= self.maximum:
            raise InvalidDocument(
                path, f"must be at most {self.maximum} ({self.maximum_text}), got {_short(value)}"
            )
        return value

    def schema(self) -> Schema:
        return {"type": "number", "exclusiveMinimum": 0, "maximum": self.maximum}


@dataclass(frozen=True)
class Integer(Kind):
    """A whole number from ``minimum`` to ``maximum``. As in JSON Schema, ``5.0`` is the integer
    5 (JSON has one number type); ``true`` is not a number."""

    minimum: int
    maximum: int

    def parse(self, value: object, path: str) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if type(value) is not int:
            raise InvalidDocument(path, f"expected an integer, got {_describe(value)}")
        assert isinstance(value, int)
        if not self.minimum <= value <= self.maximum:
            raise InvalidDocument(
                path, f"must be from {self.minimum} to {self.maximum}, got {_short(value)}"
            )
        return value

    def schema(self) -> Schema:
        return {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}


@dataclass(frozen=True)
class Boolean(Kind):
    def parse(self, value: object, path: str) -> bool:
        if type(value) is not bool:
            raise InvalidDocument(path, f"expected true or false, got {type_name(value)}")
        assert isinstance(value, bool)
        return value

    def schema(self) -> Schema:
        return {"type": "boolean"}


def _short(value: float) -> str:
    """A number as the error shows it: a 400-digit integer is not worth printing whole."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:20]}..."


def _describe(value: object) -> str:
    return f"a fraction ({_short(value)})" if isinstance(value, float) else type_name(value)


@dataclass(frozen=True)
class ListOf(Kind):
    item: Kind

    def parse(self, value: object, path: str) -> tuple[Any, ...]:
        if type(value) is not list:
            raise InvalidDocument(path, f"expected an array, got {type_name(value)}")
        parse_item = self.item.parse
        return tuple([parse_item(element, f"{path}[{i}]") for i, element in enumerate(value)])

    def schema(self) -> Schema:
        return {"type": "array", "items": self.item.schema()}


@dataclass(frozen=True)
class MapOf(Kind):
    """An object used as a map: any non-empty member names, each value of one kind."""

    value: Kind

    def parse(self, value: object, path: str) -> Mapping[str, Any]:
        if type(value) is not dict:
            raise InvalidDocument(path, f"expected an object, got {type_name(value)}")
        assert isinstance(value, dict)
        parsed = {}
        for name, element in value.items():
            if not name:
                raise InvalidDocument(path, "a member name must not be empty")
            parsed[name] = self.value.parse(element, _join(path, name))
        return MappingProxyType(parsed)

    def schema(self) -> Schema:
        return {
            "type": "object",
            "propertyNames": {"minLength": 1},
            "additionalProperties": self.value.schema(),
        }


@dataclass(frozen=True)
class AnyJson(Kind):
    """A free-form JSON value, bounded in depth so later recursion over it is safe."""

    object_only: bool = False

    def parse(self, value: object, path: str) -> Any:
        if self.object_only and type(value) is not dict:
            raise InvalidDocument(path, f"expected an object, got {type_name(value)}")
        if type(value) in (dict, list):
            check_depth(value, path)
        return value

    def schema(self) -> Schema:
        return {"type": "object"} if self.object_only else {}


@dataclass(frozen=True)
class Ref(Kind):
    """A nested document type, by name; resolved through the registry at parse time."""

    name: str

    def parse(self, value: object, path: str) -> Any:
        return REGISTRY[self.name].parse(value, path)

    def schema(self) -> Schema:
        return {"$ref": f"#/$defs/{self.name}"}


class _Absent:
    """Marks a member that the document does not have (distinct from JSON null)."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    doc: str
    required: bool = True
    default: Any = ABSENT


class Table:
    """The members of one JSON object type and the Python type built from them."""

    def __init__(
        self,
        name: str,
        build: Callable[..., Any],
        fields: Sequence[Field],
        doc: str,
    ) -> None:
        self.name = name
        self.build = build
        self.fields = tuple(fields)
        self.doc = doc
        self._names = frozenset(f.name for f in fields)
        self._plan = tuple((f.name, f.kind.parse, f.required, f.default) for f in self.fields)
        REGISTRY[name] = self

    def parse(self, value: object, path: str) -> Any:
        if type(value) is not dict:
            raise InvalidDocument(path, f"expected an object, got {type_name(value)}")
        assert isinstance(value, dict)
        if not self._names.issuperset(value):
            unknown = sorted(set(value) - self._names)[0]
            raise InvalidDocument(_join(path, unknown), "unknown member")
        prefix = f"{path}." if path else ""  # as _join, once per object: this loop is hot
        args = []
        for name, parse, required, default in self._plan:
            raw = value.get(name, ABSENT)
            if raw is ABSENT:
                if required:
                    raise InvalidDocument(prefix + name, "required member is missing")
                args.append(default)
            else:
                args.append(parse(raw, prefix + name))
        return self.build(*args)

    def schema(self) -> Schema:
        return {
            "type": "object",
            "description": self.doc,
            "properties": {f.name: {**f.kind.schema(), "description": f.doc} for f in self.fields},
            "required": [f.name for f in self.fields if f.required],
            "additionalProperties": False,
        }


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


REGISTRY: dict[str, Table] = {}
