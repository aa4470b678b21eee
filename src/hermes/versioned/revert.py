"""Reverting a version, and finding the version behind an entry ("why does it think that?").

A revert is itself a recorded change. When the text moved on after the version being
reverted, its inverse is merged into the current text if it still applies cleanly (the
later changes touch other lines); otherwise the revert refuses and names the later version
that conflicts, so nothing written since is lost.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hermes.config.settings import Settings
from hermes.errors import HermesError
from hermes.memory.history import Actor, History, history_for
from hermes.memory.merge import merge3
from hermes.memory.notes import parse_entries, serialize
from hermes.store.base import NoteVersion, Store
from hermes.versioned.targets import TargetError, open_target


class RevertError(HermesError, ValueError):
    """The revert was refused; the message says why and what to do."""


class VersionNotFoundError(RevertError):
    """No such version in the caller's scope."""


def find_version(store: Store, settings: Settings, scope: str, version_id: int) -> NoteVersion:
    history = _history(store, settings, scope)
    version = history.versions.get_version(scope, version_id)
    if version is None:
        raise VersionNotFoundError(
            f"there is no version {version_id} in this scope (`hermes memory log` lists them)"
        )
    return version


def revert(
    settings: Settings, store: Store, scope: str, version_id: int, actor: Actor
) -> NoteVersion:
    """Undo version `version_id`; returns the new version that records the revert."""
    version = find_version(store, settings, scope, version_id)
    try:
        target = open_target(settings, store, scope, version.target)
    except TargetError as exc:
        raise RevertError(str(exc)) from None
    why = actor.reason or f"revert of version {version.id}"
    with target.locked() as current:
        wanted = _reverted(settings, store, scope, version, current)
        written = target.write(wanted, actor.because(why), reverts=version.id)
    if written is None:
        raise RevertError(f"version {version.id} is already undone: nothing changed")
    return written


def _reverted(
    settings: Settings, store: Store, scope: str, version: NoteVersion, current: str
) -> str:
    """The text with `version` undone, or RevertError naming the later version in the way."""
    if _same(version, current, version.before):
        raise RevertError(
            f"version {version.id} is already undone: {version.target} reads as it did before it"
        )
    if _same(version, current, version.after):
        return version.before
    merged = merge3(version.after, current, version.before)
    if merged is not None:
        return merged
    later = _conflicting(_history(store, settings, scope), version)
    if later is not None and later.reverts == version.id:
        raise RevertError(
            f"version {version.id} was already reverted by version {later.id}; revert "
            f"version {later.id} to bring it back"
        )
    which = (
        f"version {later.id} ({later.actor}, {_when(later.at)}) changed the same lines since"
        if later is not None
        else "a later change touched the same lines"
    )
    raise RevertError(
        f"cannot revert version {version.id} of {version.target}: {which}. Revert the later "
        "version first, or edit the text by hand; nothing was changed"
    )


def _same(version: NoteVersion, a: str, b: str) -> bool:
    if version.target in ("memory", "user"):  # notes compare as entries, not bytes
        return serialize(parse_entries(a)) == serialize(parse_entries(b))
    return a == b


def _conflicting(history: History, version: NoteVersion) -> NoteVersion | None:
    later = history.versions.list_versions(
        history.scope, target=version.target, after_id=version.id, limit=10_000
    )
    for newer in reversed(later):  # oldest first: the first one the inverse no longer fits
        if merge3(version.after, newer.after, version.before) is None:
            return newer
    return None


def why(
    store: Store, settings: Settings, scope: str, text: str, target: str | None = None
) -> list[NoteVersion]:
    """The versions that introduced `text` (a substring of an entry), newest first."""
    needle = text.strip()
    if not needle:
        raise RevertError("give part of an entry's text to look for")
    return _history(store, settings, scope).versions.introducing(scope, needle, target=target)


def _history(store: Store, settings: Settings, scope: str) -> History:
    history = history_for(store, scope, settings.memory.history_retention)
    if history is None:
        raise RevertError("this store keeps no memory history")
    return history


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
