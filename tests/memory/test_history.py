"""Memory you can audit (issue 36): every change to notes, SOUL.md and skills is a version
with its actor; hand edits are found at the next read; reverts merge or refuse, never lose;
old versions fold into a baseline; scopes never see each other. On both store backends."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.config.settings import Settings, load_settings
from hermes.memory.history import CLI, Actor, forget_history, tool_actor
from hermes.memory.notes import NotesStore, open_notes
from hermes.memory.tool import Operation, change_notes, memory_tool
from hermes.runtime import open_store
from hermes.scopes import scope_for_user
from hermes.services import Services
from hermes.skills import manage
from hermes.skills.store import library_for
from hermes.store.base import NoteVersion, Store
from hermes.tools.registry import ToolContext, Toolset
from hermes.versioned.revert import RevertError, revert, why
from hermes.versioned.targets import audit
from tests.conftest import run_cli

pytestmark = pytest.mark.usefixtures("on_each_backend")

SKILL = "---\nname: deploy\ndescription: Deploy the app\n---\n# Procedure\n1. build\n2. ship\n"


@pytest.fixture
def cfg(home: Path) -> Settings:
    settings = load_settings()
    settings.skills.starters = False
    return settings


@pytest.fixture
def store(cfg: Settings) -> Iterator[Store]:
    opened = open_store(cfg)
    try:
        yield opened
    finally:
        opened.close()


def notes(cfg: Settings, store: Store, scope: str = "default") -> NotesStore:
    return open_notes(cfg, scope, store)


def versions(store: Store, scope: str = "default", target: str | None = None) -> list[NoteVersion]:
    assert store.note_history is not None
    return store.note_history.list_versions(scope, target=target)


def add(n: NotesStore, target: str, *entries: str, actor: Actor = CLI) -> None:
    change_notes(n, target, [Operation("add", e) for e in entries], actor)


def hand_edit(n: NotesStore, target: str, text: str) -> None:
    """What a person's editor does: the text changes outside Hermes (file or document)."""
    if n.history is not None and n.where.startswith("the database"):
        documents = n._documents  # type: ignore[attr-defined]
        with documents.edit_document(n.scope, str(n.path(target))) as edit:
            edit.new_text = text
    else:
        n.path(target).write_text(text)


async def test_the_memory_tool_records_session_message_and_reason(
    cfg: Settings, store: Store
) -> None:
    services = Services(cfg)
    services.provide(store, Store)  # type: ignore[type-abstract]
    ctx = ToolContext(scope="default", session_id="chat-1", services=services, turn=7)
    args = {"target": "user", "action": "add", "content": "Lives in Berlin"}
    outcome = await Toolset([memory_tool]).call("memory", json.dumps(args), ctx)
    assert outcome.ok, outcome.text
    [v] = versions(store)
    assert (v.actor, v.session_id, v.turn, v.target) == ("tool", "chat-1", 7, "user")
    assert v.reason == "add: Lives in Berlin" and v.before == "" and v.after == "Lives in Berlin\n"


async def test_the_review_records_after_which_session_with_its_summary(
    cfg: Settings, store: Store
) -> None:
    services = Services(cfg)
    services.provide(store, Store)  # type: ignore[type-abstract]
    ctx = ToolContext(
        scope="default",
        session_id="chat-2",
        services=services,
        platform="memory-review",
        reason="The user moved.",
    )
    args = {"target": "user", "action": "add", "content": "Home city: Lisbon"}
    assert (await Toolset([memory_tool]).call("memory", json.dumps(args), ctx)).ok
    [v] = versions(store)
    assert (v.actor, v.session_id, v.turn) == ("review", "chat-2", None)
    assert v.reason == "The user moved. — add: Home city: Lisbon"


def test_a_hand_edit_is_recorded_as_editor_at_the_next_read(cfg: Settings, store: Store) -> None:
    n = notes(cfg, store)
    add(n, "memory", "Uses Go")
    hand_edit(n, "memory", "Uses Go\n§\nWritten by hand\n")
    assert n.read("memory").entries == ["Uses Go", "Written by hand"]
    latest, first = versions(store)
    assert latest.actor == "editor" and latest.before == first.after
    assert latest.after == "Uses Go\n§\nWritten by hand\n"
    add(n, "memory", "CI on Fridays")  # the next write starts from the hand-edited text
    assert versions(store)[0].before == latest.after and len(versions(store)) == 3


def test_text_there_before_history_began_is_a_baseline(cfg: Settings, store: Store) -> None:
    n = notes(cfg, store)
    n.history = None
    add(n, "memory", "Older fact")  # written before history was kept
    add(notes(cfg, store), "memory", "New fact")
    latest, baseline = versions(store)
    assert baseline.actor == "baseline" and baseline.after == "Older fact\n"
    assert latest.before == "Older fact\n" and latest.actor == "cli"


def test_revert_and_revert_of_the_revert(cfg: Settings, store: Store) -> None:
    n = notes(cfg, store)
    add(n, "user", "Lives in Berlin")
    add(n, "user", "Likes tea")
    second = versions(store)[0]
    undo = revert(cfg, store, "default", second.id, CLI)
    assert n.read("user").entries == ["Lives in Berlin"]
    assert (undo.actor, undo.reverts) == ("cli", second.id)
    redo = revert(cfg, store, "default", undo.id, Actor("api", key_name="dash"))
    assert n.read("user").entries == ["Lives in Berlin", "Likes tea"]
    assert (redo.actor, redo.key_name, redo.reverts) == ("api", "dash", undo.id)
    with pytest.raises(RevertError, match="already undone"):
        revert(cfg, store, "default", undo.id, CLI)
    add(n, "user", "Plays chess")
    revert(cfg, store, "default", second.id, CLI)  # undone again, on top of the later add
    assert n.read("user").entries == ["Lives in Berlin", "Plays chess"]
    with pytest.raises(RevertError, match="already reverted by version"):
        revert(cfg, store, "default", second.id, CLI)


def test_a_revert_under_later_changes_merges_or_names_the_conflict(
    cfg: Settings, store: Store
) -> None:
    n = notes(cfg, store)
    add(n, "user", "Lives in Berlin")
    add(n, "user", "Likes tea")
    tea = versions(store)[0]
    add(n, "user", "Plays chess")  # a later change on other lines
    revert(cfg, store, "default", tea.id, CLI)
    assert n.read("user").entries == ["Lives in Berlin", "Plays chess"]

    change_notes(n, "user", [Operation("replace", "Berlin is home", "Berlin")], CLI)
    berlin = versions(store, target="user")[0]
    change_notes(n, "user", [Operation("replace", "Berlin is home, since 2020", "Berlin")], CLI)
    later = versions(store, target="user")[0]
    before = n.read("user").entries
    with pytest.raises(RevertError, match=f"version {later.id} .* changed the same lines"):
        revert(cfg, store, "default", berlin.id, CLI)
    assert n.read("user").entries == before  # refused: nothing changed


def test_a_revert_waits_for_the_agent_and_keeps_its_write(cfg: Settings, store: Store) -> None:
    """The agent holds the note's lock mid-write when a revert arrives: the revert waits,
    then applies its inverse on top of the agent's write. Neither change is lost."""
    n = notes(cfg, store)
    add(n, "memory", "Fact A")
    add(n, "memory", "Fact B")
    b = versions(store)[0]
    holding, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def agent() -> None:
        agent_notes = notes(cfg, store)
        with agent_notes.locked("memory") as state:
            holding.set()
            release.wait(10)
            agent_notes.save(state, [*state.entries, "Fact C"], tool_actor("api", "s", 3))

    def reverting() -> None:
        try:
            revert(cfg, store, "default", b.id, CLI)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writer = threading.Thread(target=agent)
    writer.start()
    assert holding.wait(10)
    undo = threading.Thread(target=reverting)
    undo.start()
    undo.join(0.2)
    assert undo.is_alive()  # waiting on the lock, not racing
    release.set()
    writer.join(10)
    undo.join(10)
    assert not errors
    assert n.read("memory").entries == ["Fact A", "Fact C"]
    assert [v.actor for v in versions(store)][:2] == ["cli", "tool"]


def test_the_tool_reapplies_its_operations_on_text_reverted_meanwhile(
    cfg: Settings, store: Store
) -> None:
    """A turn started with an older snapshot; its write lands on the current text."""
    n = notes(cfg, store)
    add(n, "memory", "Fact A")
    add(n, "memory", "Wrong fact")
    wrong = versions(store)[0]
    snapshot = n.read("memory").entries  # the turn's frozen prompt
    revert(cfg, store, "default", wrong.id, CLI)
    add(n, "memory", "Fact C", actor=tool_actor("cli", "s", 1))
    assert "Wrong fact" in snapshot
    assert n.read("memory").entries == ["Fact A", "Fact C"]


def test_old_versions_fold_into_one_baseline(cfg: Settings, store: Store) -> None:
    cfg.memory.history_retention = 3
    n = notes(cfg, store)
    for i in range(6):
        add(n, "memory", f"Fact {i}")
    kept = versions(store)
    assert len(kept) == 3
    assert kept[-1].actor == "baseline" and kept[-1].before == ""
    assert kept[-1].after == kept[-2].before  # the chain of texts is unbroken
    assert kept[0].after.count("Fact") == 6


def test_why_finds_the_version_session_and_message(cfg: Settings, store: Store) -> None:
    n = notes(cfg, store)
    add(n, "user", "Likes tea", actor=tool_actor("cli", "chat-9", 2))
    add(n, "user", "Lives in Berlin", actor=tool_actor("cli", "chat-9", 12))
    change_notes(n, "user", [Operation("replace", "Lives in Berlin, Mitte", "Berlin")], CLI)
    [found, *_] = why(store, cfg, "default", "berlin")
    assert (found.session_id, found.turn) == ("chat-9", 12)
    assert why(store, cfg, "default", "Mitte")[0].actor == "cli"  # superseded text keeps history
    assert why(store, cfg, "default", "Lisbon") == []


def test_scopes_never_see_each_others_history(cfg: Settings, store: Store) -> None:
    ann, bob = scope_for_user("ann"), scope_for_user("bob")
    add(notes(cfg, store, ann), "user", "Ann lives in Berlin")
    add(notes(cfg, store, bob), "user", "Bob lives in Rome")
    [mine] = versions(store, ann)
    assert store.note_history is not None
    assert store.note_history.get_version(bob, mine.id) is None
    assert why(store, cfg, bob, "Berlin") == []
    with pytest.raises(RevertError, match="no version"):
        revert(cfg, store, bob, mine.id, CLI)
    assert forget_history(store, ann) == 1
    assert versions(store, ann) == [] and len(versions(store, bob)) == 1


def test_skill_writes_are_versions_and_revertable(cfg: Settings, store: Store) -> None:
    library = library_for(cfg)
    history = notes(cfg, store).history
    actor = tool_actor("cli", "s", 4, "create deploy")
    manage.create(library, "deploy", SKILL, history=history, actor=actor)
    manage.patch(library, "deploy", "2. ship", "2. test\n3. ship", history=history, actor=CLI)
    patched = versions(store, target="skill:deploy")[0]
    assert patched.before == SKILL and "3. ship" in patched.after
    revert(cfg, store, "default", patched.id, CLI)
    skill = library.find("deploy")
    assert skill is not None and skill.path.read_text() == SKILL
    manage.delete(library, "deploy", history=history, actor=CLI)
    gone = versions(store, target="skill:deploy")[0]
    revert(cfg, store, "default", gone.id, CLI)  # a deleted skill comes back
    assert library.find("deploy") is not None


def test_soul_hand_edits_are_found_and_revertable(cfg: Settings, store: Store) -> None:
    soul = cfg.home / "SOUL.md"
    soul.write_text("You are Hermes.\n")
    audit(cfg, store, "default", "soul")
    soul.write_text("You are a pirate.\n")
    audit(cfg, store, "default")
    edit = versions(store, target="soul")[0]
    assert edit.actor == "editor" and edit.before == "You are Hermes.\n"
    revert(cfg, store, "default", edit.id, CLI)
    assert soul.read_text() == "You are Hermes.\n"


def test_cli_log_diff_revert_why(cfg: Settings, store: Store) -> None:
    n = notes(cfg, store, scope_for_user("ann"))
    add(n, "user", "Lives in Berlin", actor=tool_actor("cli", "chat-1", 5))
    log = run_cli("memory", "log", "--user", "ann")
    assert log.returncode == 0, log.stderr
    assert "user" in log.stdout and "tool session chat-1 message 5" in log.stdout
    data = json.loads(run_cli("memory", "log", "--user", "ann", "--json").stdout)
    [v] = data["versions"]
    assert (v["actor"], v["session_id"], v["turn"]) == ("tool", "chat-1", 5)
    diff = run_cli("memory", "diff", str(v["id"]), "--user", "ann")
    assert diff.returncode == 0 and "+Lives in Berlin" in diff.stdout
    why_out = run_cli("memory", "why", "berlin", "--user", "ann")
    assert why_out.returncode == 0 and f"version {v['id']}" in why_out.stdout
    undo = run_cli("memory", "revert", str(v["id"]), "--user", "ann")
    assert undo.returncode == 0, undo.stderr
    assert n.read("user").entries == []
    again = run_cli("memory", "revert", str(v["id"]), "--user", "ann")
    assert again.returncode == 1 and "already" in again.stderr and "Traceback" not in again.stderr
    owner = run_cli("memory", "diff", str(v["id"]))  # another scope: no such version
    assert owner.returncode == 1 and "no version" in owner.stderr
    bad = run_cli("memory", "log", "--target", "nope")
    assert bad.returncode == 2 and "--target" in bad.stderr
    assert run_cli("memory", "diff", "abc").returncode == 2


def test_cli_edit_is_recorded_as_cli(
    cfg: Settings, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex
    import sys

    script = tmp_path / "editor.py"
    script.write_text("import sys\nopen(sys.argv[1], 'w').write('Edited in the CLI\\n')\n")
    monkeypatch.setenv("EDITOR", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    r = run_cli("memory", "edit", "--target", "memory")
    assert r.returncode == 0, r.stderr
    [v] = versions(store)
    assert (v.actor, v.after) == ("cli", "Edited in the CLI\n")
