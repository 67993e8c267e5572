"""Systems under test: adapters that turn an example input into a ``Prediction``."""

from arbiter.systems.base import ResponseMapping, SystemUnderTest, lookup_path

__all__ = ["ResponseMapping", "SystemUnderTest", "lookup_path"]
