"""`[execution] engine = "ray"`: joining a Ray cluster and streaming batches through a pool of
Ray Data actors. Knows no stage; the extract and ground stages bring their worker classes.

Ray is imported here only, and only when a spec asks for it: the local engine, the trainers'
reward functions and `remark_data.rewards` never import it (install `remark-data[ray]`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remark_data.errors import RemarkError

if TYPE_CHECKING:
    import pyarrow as pa

    from remark_data.config import ExecutionSpec


def connect(execution: ExecutionSpec) -> None:
    """Join the spec's cluster (`address`, else RAY_ADDRESS), or start a local one; a session
    already open in this process (a test's, a notebook's) is used as it is. A cluster of other
    machines gets this package's code shipped with the job (`py_modules`), so its workers run
    the code the driver runs; its Python environment needs remark-data's dependencies."""
    try:
        import ray
    except ImportError as exc:
        raise RemarkError(
            "[execution] engine = 'ray' needs Ray Data: pip install 'remark-data[ray]'"
        ) from exc
    if not ray.is_initialized():
        address = execution.address or os.environ.get("RAY_ADDRESS") or None
        package = Path(__file__).resolve().parents[1]
        runtime_env = {"py_modules": [str(package)]} if address else None
        try:
            ray.init(
                address=address,
                runtime_env=runtime_env,
                include_dashboard=False,
                logging_level=logging.WARNING,
                log_to_driver=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or "a local cluster"
            raise RemarkError(f"Ray: cannot start or join {where}: {exc}") from exc
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # stage progress goes through the pipeline's events
    context.print_on_execution_start = False
    # Ray Data's own lines (bars disabled, each dataset finished) are noise on a stage's stderr.
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)


def map_batches(
    table: pa.Table,
    worker: type,
    *,
    kwargs: Mapping[str, Any],
    execution: ExecutionSpec,
    rows_per_batch: int,
    num_cpus: float,
) -> Generator[pa.Table, None, None]:
    """`worker(**kwargs)(batch)` over `table` cut into batches of `rows_per_batch` rows, on
    up to `execution.workers` Ray actors of `num_cpus` each; the result tables stream back as
    they are done, in no particular order (callers key what comes back)."""
    import ray

    if table.num_rows == 0:
        return
    connect(execution)
    # One block per batch: an actor takes whole blocks, so this is what spreads the work.
    blocks = [table.slice(i, rows_per_batch) for i in range(0, table.num_rows, rows_per_batch)]
    dataset = ray.data.from_arrow(blocks).map_batches(
        worker,
        fn_constructor_kwargs=dict(kwargs),
        batch_size=None,  # the whole block
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=min(execution.workers, len(blocks))),
        num_cpus=num_cpus,
    )
    yield from dataset.iter_batches(batch_size=None, batch_format="pyarrow")
