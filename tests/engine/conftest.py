"""The ``connected`` fixture (an engine behind a ServerConnection over in-memory streams) for the plug-in tests."""

from ..serving.test_server_connection import connected  # noqa: F401  (a fixture, registered by importing it)
