"""Embedding work done a batch at a time from an id cursor, so a long backfill never rescans,
reports progress as it goes and stops between batches when asked (`embed_pending`,
`embed_windows`)."""

from __future__ import annotations

from collections.abc import Callable

# (after id, batch size) -> (rows done, the last one's id); no rows done: nothing left
Step = Callable[[int, int], tuple[int, int]]


def run_batches(
    step: Step,
    batch: int,
    after_id: int,
    limit: int | None,
    progress: Callable[[int], None] | None,
    should_stop: Callable[[], bool] | None,
) -> tuple[int, int]:
    """Run `step` from `after_id`, `batch` rows at a time, until it finds nothing, `limit`
    rows are done or `should_stop` says so; (rows done, last id)."""
    done = 0
    while limit is None or done < limit:
        if should_stop is not None and should_stop():
            break
        count, after_id = step(after_id, batch if limit is None else min(batch, limit - done))
        if not count:
            break
        done += count
        if progress is not None:
            progress(count)
    return done, after_id
