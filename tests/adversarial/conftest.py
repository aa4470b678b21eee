"""The adversarial suite drives the same API fixtures as the server tests."""

from tests.server.conftest import api, keyed_api, keyed_settings  # noqa: F401
