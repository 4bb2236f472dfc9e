"""ListTasks: the caller's own tasks, newest first, one bounded page at a time (0.3 has no
such method)."""

from __future__ import annotations

from handlers.context import RpcContext, TaskQuery
from synthorg.dialects.objects import state_v03, task_v1
from synthorg.generated.models import V1ListTasksParams, V1ListTasksResult

DEFAULT_PAGE_SIZE = 50


async def handle(params: V1ListTasksParams, ctx: RpcContext) -> V1ListTasksResult:
    query = TaskQuery(
        context_id=params.contextId,
        state=state_v03(params.status) if params.status is not None else None,
        status_since=params.statusTimestampAfter,
        page_size=params.pageSize or DEFAULT_PAGE_SIZE,
        page_token=params.pageToken or "",
        history_length=params.historyLength,
        include_artifacts=bool(params.includeArtifacts),
    )
    page = await ctx.tasks.list(ctx.peer, query)
    return V1ListTasksResult(
        tasks=[task_v1(task) for task in page.tasks],
        nextPageToken=page.next_page_token,
        pageSize=page.page_size,
        totalSize=page.total_size,
    )
