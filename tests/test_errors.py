"""Every exception Hermes defines derives from `HermesError`, and `retryable` follows one rule."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import hermes
from hermes.delivery import DeliveryError
from hermes.errors import HermesError
from hermes.gateway.base import AdapterError
from hermes.models.classify import AttemptFailed


def _import_every_module() -> None:
    """Import every file of src/hermes (namespace packages such as `hermes.server` included),
    so that every exception class it defines exists. A module whose optional third-party
    dependency is not installed is passed over; any other failure to import is reported."""
    root = Path(hermes.__file__).parent
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue  # importing it would run the CLI
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] == "hermes":
                raise


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_hermes_exception_derives_from_hermes_error() -> None:
    _import_every_module()
    ours = {c for c in _subclasses(BaseException) if c.__module__.split(".")[0] == "hermes"}
    assert len(ours) > 40  # the walk found the package's exceptions, not an empty set
    strays = sorted(
        f"{c.__module__}.{c.__qualname__}" for c in ours if not issubclass(c, HermesError)
    )
    assert strays == [], f"exception classes outside HermesError: {strays}"


def test_an_error_is_not_retryable_unless_it_says_so() -> None:
    assert HermesError("no").retryable is False
    assert AdapterError("the platform said no").retryable is False
    assert DeliveryError("no such chat").retryable is False
    assert AdapterError("unreachable", retryable=True).retryable is True
    assert DeliveryError("timed out", retryable=True).retryable is True
    # an instance's answer is its own: the class default stays False
    assert AdapterError.retryable is False
    assert DeliveryError.retryable is False


@pytest.mark.parametrize(
    ("failure", "retryable"),
    [
        (AttemptFailed("timeout"), True),
        (AttemptFailed("connect"), True),
        (AttemptFailed("status", status=503), True),
        (AttemptFailed("status", status=429), True),
        (AttemptFailed("status", status=400), False),
        (AttemptFailed("status", status=401), False),
        (AttemptFailed("stream"), False),
    ],
)
def test_the_model_client_reads_the_same_attribute(failure: AttemptFailed, retryable: bool) -> None:
    assert isinstance(failure, HermesError)
    assert failure.retryable is retryable


def test_other_bases_are_kept_for_callers_that_catch_them() -> None:
    from hermes.config.settings import ConfigError
    from hermes.cron.schedule import ScheduleError
    from hermes.fileio import LockTimeoutError

    assert issubclass(ScheduleError, ValueError)
    assert issubclass(LockTimeoutError, TimeoutError)
    assert issubclass(ConfigError, HermesError)
