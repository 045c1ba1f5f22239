"""Build rocpd databases the way rocprofv3 does, for tests.

No database from a real GPU run is public, so (as ../shared/fixtures/rocm/SOURCES.md says) tests
execute the official DDL (rocpd_tables, rocpd_indexes, rocpd_views, data_views, summary_views,
marker_views, in that order) with `{{uuid}}` replaced by a per-run suffix (underscore + UUIDv7
with '-' -> '_') and `{{guid}}` by the run's GUID, then insert rows the way
rocprofiler-sdk's generateRocpd.cpp fills them: strings, node, process, thread, agent, queue,
stream, code object, kernel symbols, one event per dispatch, and the dispatches (and, for counters,
pmc descriptions and one pmc event per dispatch and counter).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

DDL_ORDER = ("rocpd_tables.sql", "rocpd_indexes.sql", "rocpd_views.sql", "data_views.sql", "summary_views.sql", "marker_views.sql")


def build(
    path: Path,
    schema_dir: Path,
    dispatches: list[dict],
    counters: list[dict] | None = None,
    pid: int = 4242,
    agent: str = "gfx950",
    product: str = "AMD Instinct MI350X",
    agent_fields: dict | None = None,
    wal_writer: list | None = None,
) -> Path:
    suffix = "_" + str(uuid.uuid4()).replace("-", "_")
    guid = str(uuid.uuid4())
    con = sqlite3.connect(path)
    if wal_writer is not None:
        # SQLite's own WAL state: every commit goes to `<db>-wal` and stays there (no automatic checkpoint) while
        # the writer is open, as with a profiler still running or killed before it closed the database
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
    for name in DDL_ORDER:
        sql = (schema_dir / name).read_text().replace("{{uuid}}", suffix).replace("{{guid}}", guid)
        con.executescript(sql)
    t = lambda name: f"`{name}{suffix}`"  # noqa: E731
    con.execute(f"INSERT INTO {t('rocpd_info_node')} (id, guid, hash, machine_id, hostname) VALUES (1, ?, 77, 'machine-1', 'node-a')", (guid,))
    con.execute(f"INSERT INTO {t('rocpd_info_process')} (id, guid, nid, pid, command) VALUES (1, ?, 1, ?, 'python bench.py')", (guid, pid))
    con.execute(f"INSERT INTO {t('rocpd_info_thread')} (id, guid, nid, pid, tid) VALUES (1, ?, 1, 1, ?)", (guid, pid))
    con.execute(
        f"INSERT INTO {t('rocpd_info_agent')} (id, guid, nid, pid, type, absolute_index, logical_index, type_index, name, product_name, extdata) VALUES (1, ?, 1, 1, 'GPU', 2, 2, 0, ?, ?, ?)",
        # extdata: the whole agent as generateRocpd.cpp saves it (cereal JSON of rocprofiler_agent_v0_t, its fields by name)
        (guid, agent, product, json.dumps(agent_fields or {})),
    )
    con.execute(f"INSERT INTO {t('rocpd_info_queue')} (id, guid, nid, pid, name) VALUES (1, ?, 1, 1, 'queue 0')", (guid,))
    con.execute(f"INSERT INTO {t('rocpd_info_stream')} (id, guid, nid, pid, name) VALUES (1, ?, 1, 1, 'stream 0')", (guid,))
    con.execute(f"INSERT INTO {t('rocpd_info_code_object')} (id, guid, nid, pid, agent_id, uri) VALUES (1, ?, 1, 1, 1, 'file://bench.so')", (guid,))
    con.execute(f"INSERT INTO {t('rocpd_string')} (id, guid, string) VALUES (1, ?, 'KERNEL_DISPATCH')", (guid,))
    con.execute(f"INSERT INTO {t('rocpd_string')} (id, guid, string) VALUES (2, ?, 'hipLaunchKernel')", (guid,))
    symbols: dict[str, int] = {}
    for d in dispatches:
        if d["name"] not in symbols:
            sid = len(symbols) + 1
            symbols[d["name"]] = sid
            con.execute(
                f"INSERT INTO {t('rocpd_info_kernel_symbol')} (id, guid, nid, pid, code_object_id, kernel_name, display_name, group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count) VALUES (?, ?, 1, 1, 1, ?, ?, ?, ?, ?, ?, ?)",
                (sid, guid, d["name"] + ".kd", d["name"], d.get("lds", 0), d.get("scratch", 0), d.get("sgprs", 16), d.get("vgprs", 8), d.get("agprs", 0)),
            )
    event_rows = [(i + 1, guid, 1, i + 1) for i in range(len(dispatches))]
    con.executemany(f"INSERT INTO {t('rocpd_event')} (id, guid, category_id, correlation_id) VALUES (?, ?, ?, ?)", event_rows)
    con.executemany(
        f"INSERT INTO {t('rocpd_kernel_dispatch')} (guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, end, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id) VALUES (?, 1, 1, 1, 1, ?, ?, 1, 1, ?, ?, ?, ?, ?, 1, 1, ?, ?, 1, 2, ?)",
        [
            (
                guid,
                symbols[d["name"]],
                i + 1,
                d["start"],
                d["end"],
                d.get("scratch", 0),
                d.get("lds", 0),
                d.get("wg", 64),
                d.get("grid", 1024),
                d.get("grid_y", 1),
                i + 1,
            )
            for i, d in enumerate(dispatches)
        ],
    )
    if counters:
        names = sorted({c["counter"] for c in counters})
        for index, name in enumerate(names, start=1):
            con.execute(
                f"INSERT INTO {t('rocpd_info_pmc')} (id, guid, nid, pid, agent_id, target_arch, name, symbol, description, block, value_type, is_constant, is_derived) VALUES (?, ?, 1, 1, 1, 'GPU', ?, ?, '', 'SQ', 'ABS', 0, 0)",
                (index, guid, name, name),
            )
        con.executemany(
            f"INSERT INTO {t('rocpd_pmc_event')} (guid, event_id, pmc_id, value) VALUES (?, ?, ?, ?)",
            [(guid, c["dispatch"], names.index(c["counter"]) + 1, c["value"]) for c in counters],
        )
    con.commit()
    if wal_writer is not None:
        wal_writer.append(con)  # the caller closes it (closing checkpoints the log into the file)
    else:
        con.close()
    return path
