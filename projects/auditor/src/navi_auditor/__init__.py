"""navi-auditor: explorer, demonstration recorder and stream record/replay."""

__version__ = "0.1.0"
