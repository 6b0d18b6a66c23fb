"""Click options made from settings fields, and the one way a command reports invalid settings.

Every setting a command exposes is an option named after its field, so the names cannot drift from
the settings (``--actors`` once set ``rollout.num_actors``). An option takes its help from the
field's description and shows the field's default (stated once, in the settings class). Its own
default is None and :func:`settings_kwargs` leaves unset options out, so environment variables and
``.env`` still apply unless the option is given.

Names: ``--num-actors`` for ``rollout.num_actors`` (the field's own name); fields listed as
``grouped`` keep their group, ``--checkpoint-every-steps`` for ``checkpoint.every_steps``, where the
field's name alone would be unclear or taken. The click parameter is the path with ``__`` for dots.
A list or tuple field is a repeatable option (``--allowed-hosts a --allowed-hosts b``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from navi_contracts.errors import format_validation_error

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S", bound=BaseModel)


class SettingsOption(click.Option):
    """An option made from the field at ``field_path`` (``rollout.num_actors``) of ``settings``."""

    def __init__(self, *args: Any, settings: type[BaseModel], field_path: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = settings
        self.field_path = field_path


def option_name(path: str, *, grouped: bool = False) -> str:
    """``--num-actors`` for ``rollout.num_actors``; ``--rollout-num-actors`` when ``grouped``."""
    group, _, field = path.rpartition(".")
    return "--" + (f"{group}_{field}" if grouped and group else field).replace("_", "-").replace(".", "-")


def settings_options(
    settings: type[BaseModel], fields: Sequence[str] = (), grouped: Sequence[str] = ()
) -> Callable[[F], F]:
    """A decorator adding one :class:`SettingsOption` per field path, in the order given.

    Args:
        settings: the settings class (or a group model) the paths start from.
        fields: paths whose option is the field's own name (``train.device`` -> ``--device``).
        grouped: paths whose option keeps the group (``telemetry.endpoint`` -> ``--telemetry-endpoint``).
    """
    options = [field_option(settings, path) for path in fields]
    options += [field_option(settings, path, grouped=True) for path in grouped]

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def field_option(settings: type[BaseModel], path: str, *, grouped: bool = False) -> Callable[[F], F]:
    """One option for the field at ``path`` (a ``--name/--no-name`` pair for a bool; repeatable for a
    list or tuple, whose values arrive as a list, or None when the option is not given)."""
    info = field_info(settings, path)
    repeated = is_sequence(info.annotation)
    kind = str if repeated else click_type(info.annotation)
    name = option_name(path, grouped=grouped)
    declaration = f"{name}/--no-{name[2:]}" if kind is bool else name
    return click.option(
        declaration,
        path.replace(".", "__"),
        cls=SettingsOption,
        settings=settings,
        field_path=path,
        type=None if kind is bool else kind,
        default=None,
        multiple=repeated,
        callback=_unset_if_empty if repeated else None,
        help=(info.description or "") + shown_default(info),  # click would show the None option default
    )


def shown_default(info: FieldInfo) -> str:
    """``"  [default: 4]"`` for the help text; empty for a field without a default (None, empty)."""
    default = info.get_default(call_default_factory=True)
    if default is None or default is PydanticUndefined or default in ((), []):
        return ""
    if isinstance(default, list | tuple):
        default = ", ".join(str(value) for value in default)
    return f"  [default: {default}]"


def is_sequence(annotation: Any) -> bool:
    """True for a ``list[...]`` or ``tuple[...]`` field (optionally ``| None``)."""
    members = [arg for arg in _members(annotation) if arg is not type(None)]
    return len(members) == 1 and typing.get_origin(members[0]) in (list, tuple)


def _unset_if_empty(context: click.Context, param: click.Parameter, values: Any) -> list[Any] | None:
    """A repeatable option never given is unset (None), so the environment keeps the field."""
    return list(values) or None


def field_info(settings: type[BaseModel], path: str) -> FieldInfo:
    """The pydantic field at a dotted ``path`` of ``settings`` (through nested group models)."""
    model: Any = settings
    *groups, name = path.split(".")
    for group in groups:
        model = next(arg for arg in _members(model.model_fields[group].annotation) if _is_model(arg))
    fields: dict[str, FieldInfo] = model.model_fields
    if name not in fields:
        raise KeyError(f"{settings.__name__} has no field {path!r}")
    return fields[name]


def click_type(annotation: Any) -> Any:
    """The click type of a field annotation: int, float, str, bool, a Path or a Choice (Literal)."""
    members = [arg for arg in _members(annotation) if arg is not type(None)]
    if len(members) != 1:
        return str
    kind = members[0]
    if typing.get_origin(kind) is typing.Literal:
        return click.Choice([str(value) for value in typing.get_args(kind)])
    if kind is Path:
        return click.Path(path_type=Path)
    return kind if kind in (int, float, bool) else str


def _members(annotation: Any) -> tuple[Any, ...]:
    """The members of a union annotation (``X | None``), or the annotation alone."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def settings_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    """click's values (``group__field`` params) as nested settings kwargs; unset (None) ones left out.

    Returns:
        e.g. ``{"port": 0, "stream": {"status_hz": 2.0}}`` for ``port=0, stream__status_hz=2.0``.
    """
    kwargs: dict[str, Any] = {}
    for param, value in options.items():
        if value is None:
            continue
        *groups, field = param.split("__")
        target = kwargs
        for group in groups:
            target = target.setdefault(group, {})
        target[field] = value
    return kwargs


def build_settings(settings: type[S], **kwargs: Any) -> S:
    """``settings(**kwargs)``; invalid values are one usage-error line naming each bad field."""
    try:
        return settings(**kwargs)
    except ValidationError as error:
        raise click.UsageError(f"invalid settings: {format_validation_error('', error)}") from error
