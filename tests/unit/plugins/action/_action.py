"""One action plugin of the collection, built as a worker builds it, around a mock task and connection."""

from __future__ import annotations

from unittest import mock


def make_action(plugin, action, args, check_mode=False, diff=False):
    """``(plugin's ActionModule for a task of action ``action`` with ``args``, the task, the connection)``."""
    task = mock.MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = check_mode
    task.diff = diff
    task.action = action
    connection = mock.MagicMock()
    connection._shell.tmpdir = None
    built = plugin.ActionModule(task, connection, mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    return built, task, connection
