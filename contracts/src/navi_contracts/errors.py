"""The wire layer's one error type, and the one-line form of pydantic's errors.

A ``ContractError`` means *the bytes or values are wrong*: never retry the same message. Its
counterpart for *the peer did not answer or refused* (retrying may help) is
``navi_common.transport.errors.NaviTransportError``, kept apart so callers catch what they can handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class ContractError(ValueError):
    """Invalid wire model or undecodable bytes: the one error every decoder and model raises."""


def format_validation_error(owner: str, exc: ValidationError) -> str:
    """One readable line for a pydantic error: ``Owner.field.sub: message`` per problem, ``; ``-joined.

    The wire models (owner: the model's name) and every command's settings (owner ``""``) report
    problems this way, so a bad message and a bad option read alike.
    """
    lines = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in (owner, *error["loc"]) if part != "")
        message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(f"{location}: {message}" if location else message)
    return "; ".join(lines)
