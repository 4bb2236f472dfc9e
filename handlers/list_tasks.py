"""ListTasks: the caller's own tasks, newest first, one bounded page at a time (0.3 has no
such method)."""

from __future__ import annotations

from handlers.context import RpcContext, TaskQuery
from synthorg.generated.models import V1ListTasksParams, V1ListTasksResult

DEFAULT_PAGE_SIZE = 50


async def handle(params: V1ListTasksParams, ctx: RpcContext) -> V1ListTasksResult:
    query = TaskQuery(
        context_id=params.contextId,
        state=params.status,
        status_since=params.statusTimestampAfter,
        page_size=params.pageSize or DEFAULT_PAGE_SIZE,
        page_token=params.pageToken or "",
        history_length=params.historyLength,
        include_artifacts=bool(params.includeArtifacts),
    )
    page = await ctx.tasks.list(ctx.peer, query)
    return V1ListTasksResult(
        tasks=page.tasks,
        nextPageToken=page.next_page_token,
        pageSize=page.page_size,
        totalSize=page.total_size,
    )
