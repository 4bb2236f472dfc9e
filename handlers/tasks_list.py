"""ListTasks: the caller's own tasks, newest first, one bounded page at a time.

Dialect-neutral: the 1.0 dialect's adapter (`synthorg/dialects/v1.py`, ListTasks) maps its
params to a TaskQuery and the page back; the 0.3 dialect has no such method."""

from __future__ import annotations

from handlers.context import RpcContext, TaskPage, TaskQuery


async def handle(query: TaskQuery, ctx: RpcContext) -> TaskPage:
    return await ctx.tasks.list(ctx.peer, query)
