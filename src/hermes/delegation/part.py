"""The delegation part: the `delegate_task` tool (group "delegate") and the per-runtime slots
that bound how many sub-agents run at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.plugins import Registry

if TYPE_CHECKING:
    from hermes.runtime import Runtime


def _delegations(runtime: Runtime) -> object:
    from hermes.delegation.tool import Delegations

    return Delegations(runtime.settings)


def register(hermes: Registry) -> None:
    from hermes.delegation.tool import delegate_task

    hermes.tool(delegate_task, group="delegate")
    hermes.component(_delegations)
