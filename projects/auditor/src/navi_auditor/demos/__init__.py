"""Demonstration files: schema, crash-safe writer, reader."""

from navi_auditor.demos.reader import find_demonstrations, load_demonstration
from navi_auditor.demos.writer import DemoWriter, merge_parts, parts_folder
from navi_common.demonstrations import (
    DEMO_SCHEMA_VERSION,
    FRAME_FIELDS,
    DemoFormatError,
    Demonstration,
    validate_demonstration,
)

__all__ = [
    "DEMO_SCHEMA_VERSION",
    "FRAME_FIELDS",
    "DemoFormatError",
    "DemoWriter",
    "Demonstration",
    "find_demonstrations",
    "load_demonstration",
    "merge_parts",
    "parts_folder",
    "validate_demonstration",
]
