"""`python -m hermes.memory.providers.mem0_worker HERMES_HOME`: the Mem0 engine in its own
process, so its vector store, embeddings and extraction never compete with turns for the
server's interpreter (see `remote.ProcessBackend`)."""

from __future__ import annotations

import sys

from hermes.memory.providers.mem0_local import Mem0Local
from hermes.memory.providers.sdk import quiet
from hermes.memory.providers.serve import serve

if __name__ == "__main__":
    quiet()  # telemetry off before anything imports the library
    sys.exit(serve(Mem0Local, sys.argv[1:]))
