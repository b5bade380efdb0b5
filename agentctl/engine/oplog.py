"""The op-log types at their old path (`agentctl.engine.oplog`), for code that imports
them from here: re-exports of agentctl.storage.results, no logic. The op log itself is
agentctl/storage/agentos/oplog.py."""

from agentctl.storage.results import NOT_UNDOABLE as NOT_UNDOABLE
from agentctl.storage.results import OpRecord as OpRecord
from agentctl.storage.results import OpResult as OpResult
from agentctl.storage.results import PurgeResult as PurgeResult
