"""Whether agentctl was interrupted (Ctrl-C). The CLI's SIGINT handler sets it; the
storage layer's waits for another process's lock (agentctl.storage.sqlutil) look at it
between short waits and stop once it is set. A module of its own, the standard library
only, so that a Ctrl-C that comes before the storage layer is imported is not lost."""

from __future__ import annotations

import threading

#: set once agentctl is interrupted; never cleared (the process ends)
INTERRUPTED = threading.Event()
