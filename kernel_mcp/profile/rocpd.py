"""rocpd: the SQLite databases rocprofv3 writes by default from ROCm 7.

Read only through the views rocprofv3 defines (`kernels`, `counters_collection`, `rocpd_metadata`,
`rocpd_info_agent`, `rocpd_info_process`), aggregated in SQLite: a million dispatches never pass
through Python one by one. Several databases (processes, nodes, runs) are attached to one
connection and read as one, each row keeping its source. A database whose schema lacks a view or
column this reader needs is refused with the names of what is missing.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

from pydantic import ValidationError

import kernel_mcp.profile.counters as ctr  # by its full name: the package imports this one (see test_architecture.py)
import kernel_mcp.profile.tables as tables
import kernel_mcp.profile.vendor_metrics as vendor_metrics
from kernel_mcp.errors import InvalidInput
from kernel_mcp.models.profile import CounterRow, KernelRow, ProfileSummary
from kernel_mcp.profile.summary import MAX_GROUP_SAMPLES, MAX_KERNELS, target_pattern

KNOWN_SCHEMA_VERSIONS = {"3"}
NEEDED = {
    "kernels": {
        "name",
        "duration",
        "start",
        "dispatch_id",
        "grid_x",
        "grid_y",
        "grid_z",
        "workgroup_x",
        "workgroup_y",
        "workgroup_z",
        "vgpr_count",
        "accum_vgpr_count",
        "sgpr_count",
        "lds_size",
        "scratch_size",
        "pid",
    },
    "rocpd_metadata": {"tag", "value"},
    "rocpd_info_agent": {"name", "product_name", "type"},
    "rocpd_info_process": {"pid", "command"},
}
COUNTER_VIEW = ("counters_collection", {"dispatch_id", "kernel_name", "counter_name", "value"})
MAX_ATTACHED = 9  # SQLite's default limit is 10 attached databases
MAX_COUNTER_ROWS = 2_000_000  # counter rows read one by one for the per-dispatch metrics; past it, per-kernel means
# counters_collection's per-dispatch columns, as the readers name them (tables.VENDOR_NAMES)
DISPATCH_COLUMNS = {
    "start": "start",
    "end": "end",
    "grid_size": "grid_total",
    "workgroup_size": "wg_total",
    "lds_block_size": "lds_bytes",
    "scratch_size": "scratch_bytes",
    "vgpr_count": "vgprs",
    "accum_vgpr_count": "agprs",
    "sgpr_count": "sgprs",
}
QUERY_BUDGET_S = 20.0  # all reads of one import: a view can be an endless recursive query


def write_ahead_log(path: Path) -> Path | None:
    """The database's write-ahead log (`<db>-wal`) when it holds anything: committed rows may be
    there and not yet in the database file (a writer still open, killed, or the files copied so)."""
    wal = path.with_name(path.name + "-wal")
    try:
        return wal if wal.is_file() and not wal.is_symlink() and wal.stat().st_size > 0 else None
    except OSError:
        return None


def private_copy(path: Path, folder: Path, index: int) -> Path:
    """A copy of the database and its write-ahead log in `folder` (the run's own), which SQLite then
    reads whole: opening the user's files read-only cannot do it (`immutable=1` ignores the log, and
    `mode=ro` needs to create or write the `-shm` index beside them, refused in a folder the server may
    not write). The log is copied first: a checkpoint between the two copies then leaves its rows in
    the database copy, never lost. The `-shm` index is not copied; SQLite rebuilds it from the log."""
    wal = write_ahead_log(path)
    target = folder / str(index)
    target.mkdir(parents=True, exist_ok=True)
    copy = target / path.name
    if wal is not None:
        with wal.open("rb") as src, (target / wal.name).open("xb") as dst:
            shutil.copyfileobj(src, dst, 2**20)
    with path.open("rb") as src, copy.open("xb") as dst:
        shutil.copyfileobj(src, dst, 2**20)
    return copy


def open_uri(path: Path) -> str:
    """How to open a database read-only: a database in WAL mode (file format bytes 18-19 = 2) with no
    log beside it holds everything in its file, and `immutable=1` reads it without the `-shm` index
    that `mode=ro` would have to create; any other with `mode=ro` (with a log: the private copy)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(20)
    except OSError:
        head = b""
    wal_mode = len(head) == 20 and head[18] == 2 and head[19] == 2
    return f"{path.resolve().as_uri()}?{'immutable=1' if wal_mode and write_ahead_log(path) is None else 'mode=ro'}"


def _bounded(con: sqlite3.Connection, budget_s: float) -> None:
    """Interrupt any statement once the import's time budget is spent (SQLite calls the handler every
    N virtual-machine steps; a non-zero answer aborts the statement with 'interrupted')."""
    deadline = time.monotonic() + budget_s
    con.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)


def _open(paths: list[Path]) -> tuple[sqlite3.Connection, list[str]]:
    if len(paths) > MAX_ATTACHED:
        raise InvalidInput(f"{len(paths)} databases at once; at most {MAX_ATTACHED}", hint="import them in groups")
    con = sqlite3.connect("file::memory:", uri=True)  # URIs on, so each database attaches read-only
    _bounded(con, QUERY_BUDGET_S)
    schemas = []
    for index, path in enumerate(paths):
        with path.open("rb") as handle:
            head = handle.read(16)
        if head != b"SQLite format 3\x00":
            raise InvalidInput(f"{path.name} is not an SQLite database" + (" (empty file)" if not head else ""))
        schema = f"db{index}"
        try:
            con.execute(f"ATTACH DATABASE ? AS {schema}", (open_uri(path),))
            con.execute(f"SELECT count(*) FROM {schema}.sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise InvalidInput(f"{path.name} is not a readable database (truncated or corrupt?): {exc}") from None
        schemas.append(schema)
    return con, schemas


def _columns(con: sqlite3.Connection, schema: str, view: str) -> set[str]:
    try:
        return {row[1] for row in con.execute(f"PRAGMA {schema}.table_info(`{view}`)")}
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"the database cannot be read ({exc}); truncated or corrupt?") from None


def check_schema(con: sqlite3.Connection, schema: str, name: str) -> tuple[str | None, bool]:
    """(schema version, has counters); raises naming everything missing."""
    missing = []
    for view, columns in NEEDED.items():
        have = _columns(con, schema, view)
        if not have:
            missing.append(f"view {view}")
        else:
            missing += [f"{view}.{c}" for c in sorted(columns - have)]
    version = None
    if "view rocpd_metadata" not in missing:
        try:
            row = con.execute(f"SELECT value FROM {schema}.rocpd_metadata WHERE tag = 'schema_version'").fetchone()
            version = row[0] if row else None
        except sqlite3.DatabaseError as exc:
            raise InvalidInput(f"{name}: rocpd_metadata cannot be read: {exc}") from None
    if missing:
        known = f"schema version {version}" if version else "no schema version"
        raise InvalidInput(
            f"{name} is not a rocpd database this reader understands ({known}): missing {', '.join(missing[:12])}",
            hint=f"known schema versions: {', '.join(sorted(KNOWN_SCHEMA_VERSIONS))}",
        )
    has_counters = COUNTER_VIEW[1] <= _columns(con, schema, COUNTER_VIEW[0])
    return version, has_counters


def _target_dispatches(con: sqlite3.Connection, schemas: list[str], names: list[str]) -> tuple[dict[str, list[float]], dict[str, int]]:
    """What summarise() hands the ledger from a CSV: per "kernel|gx x gy x gz" group the GPU times
    (ns) of the target's dispatches in start order, the first MAX_GROUP_SAMPLES of each, and the
    uncapped count. Without it the keep silently fell back to the CSV metric under a "profiler" label.
    Counted and capped in SQLite (a window per group), so a million target dispatches stay there."""
    if not names:
        return {}, {}
    con.execute("CREATE TEMP TABLE IF NOT EXISTS kmcp_target (name TEXT PRIMARY KEY)")
    con.execute("DELETE FROM temp.kmcp_target")
    con.executemany("INSERT OR IGNORE INTO temp.kmcp_target VALUES (?)", [(n,) for n in names])
    union = " UNION ALL ".join(
        f"SELECT name, grid_x, grid_y, grid_z, start, dispatch_id, duration FROM {s}.kernels WHERE name IN (SELECT name FROM temp.kmcp_target)" for s in schemas
    )
    key = "name || '|' || CAST(grid_x AS INTEGER) || 'x' || CAST(grid_y AS INTEGER) || 'x' || CAST(grid_z AS INTEGER)"
    counts = {k: int(n) for k, n in con.execute(f"SELECT {key}, COUNT(*) FROM ({union}) GROUP BY 1")}
    groups: dict[str, list[float]] = {}
    for k, duration in con.execute(
        f"""SELECT grp, duration FROM (
                SELECT {key} AS grp, duration, start, dispatch_id,
                       ROW_NUMBER() OVER (PARTITION BY name, grid_x, grid_y, grid_z ORDER BY start, dispatch_id) AS nth
                FROM ({union}))
            WHERE nth <= ? ORDER BY start, dispatch_id""",
        (MAX_GROUP_SAMPLES,),
    ):
        groups.setdefault(k, []).append(float(duration))
    return groups, counts


def summary(paths: list[Path], target_regex: str | None, labels: list[str]) -> ProfileSummary:
    names = ", ".join(p.name for p in paths)
    try:
        return _summary(paths, target_regex, labels)
    except sqlite3.DatabaseError as exc:  # a page read mid-query: the file is damaged
        if "interrupted" in str(exc):
            raise InvalidInput(f"{names}: reading the rocpd database took longer than {QUERY_BUDGET_S:g} s (a view that never ends?); stopped") from None
        raise InvalidInput(f"{names}: a rocpd database could not be read to the end (truncated or corrupt?): {exc}") from None
    except (TypeError, ValueError, OverflowError, ZeroDivisionError, KeyError, ValidationError) as exc:
        # Columns of the wrong type (text where rocprofv3 writes numbers, NULL names) that the
        # per-row checks below did not name: still a property of the file, never an internal error.
        raise InvalidInput(f"{names}: a rocpd table holds values of the wrong type ({type(exc).__name__}: {str(exc)[:200]})") from None


def _summary(paths: list[Path], target_regex: str | None, labels: list[str]) -> ProfileSummary:
    con, schemas = _open(paths)
    notes, origins = [], []
    counter_schemas = []
    targets: dict[str, list[str]] = {}  # GPU target (rocpd_info_agent.name, gfx942) -> the databases that name it
    for schema, path, label in zip(schemas, paths, labels):
        version, has_counters = check_schema(con, schema, path.name)
        if version not in KNOWN_SCHEMA_VERSIONS:
            notes.append(f"{label}: schema version {version} is not one this reader was written for; every view and column it needs is present")
        gpu_agents = list(con.execute(f"SELECT DISTINCT name, product_name FROM {schema}.rocpd_info_agent WHERE type = 'GPU'"))
        agents = ", ".join(f"{r[0]} {r[1] or ''}".strip() for r in gpu_agents)
        for r in gpu_agents:
            if isinstance(r[0], str) and r[0].strip():
                targets.setdefault(r[0].strip(), []).append(label)
        procs = ", ".join(f"pid {r[0]} ({(r[1] or '')[:60]})" for r in con.execute(f"SELECT pid, command FROM {schema}.rocpd_info_process LIMIT 4"))
        origins.append(f"{label}: {agents or 'no GPU agent'}; {procs or 'no process'}")
        if has_counters:
            counter_schemas.append((schema, label))
    # One grouped scan per database for counts, sums and launch facts (grouped on the integer
    # kernel id, which sorts far faster than the name); a few rows per kernel come back.
    stats: dict[str, dict] = {}
    for schema, label in zip(schemas, labels):
        for name, calls, total, mn, mx, gmin, gmax, bmin, bmax, vgprs, agprs, sgprs, lds, scratch, bad in con.execute(
            f"""SELECT MIN(name), COUNT(*), SUM(duration), MIN(duration), MAX(duration),
                       MIN(grid_x) || 'x' || MIN(grid_y) || 'x' || MIN(grid_z), MAX(grid_x) || 'x' || MAX(grid_y) || 'x' || MAX(grid_z),
                       MIN(workgroup_x) || 'x' || MIN(workgroup_y) || 'x' || MIN(workgroup_z), MAX(workgroup_x) || 'x' || MAX(workgroup_y) || 'x' || MAX(workgroup_z),
                       MAX(vgpr_count), MAX(accum_vgpr_count), MAX(sgpr_count), MAX(lds_size), MAX(scratch_size),
                       SUM(typeof(duration) NOT IN ('integer', 'real') OR typeof(start) NOT IN ('integer', 'real') OR typeof(name) != 'text')
                FROM {schema}.kernels GROUP BY kernel_id"""
        ):
            # Counted in the same scan: SQLite adds text as 0, so a text duration would be a silent lie.
            if bad:
                raise InvalidInput(
                    f"{label}: {bad} dispatch(es) of the kernels view have a start or duration that is not a number or a name that is not text; not what rocprofv3 writes"
                )
            k = stats.setdefault(
                name,
                {"calls": 0, "total": 0, "min": mn, "max": mx, "grids": set(), "blocks": set(), "origins": set(), "regs": (vgprs, agprs, sgprs, lds, scratch)},
            )
            k["calls"] += calls
            k["total"] += total
            k["min"], k["max"] = min(k["min"], mn), max(k["max"], mx)
            k["grids"].update({gmin, gmax})
            k["blocks"].update({bmin, bmax})
            k["origins"].add(label)
    union = " UNION ALL ".join(f"SELECT name, duration FROM {schema}.kernels" for schema in schemas)
    # ...and one ordered scan, streamed, for the exact median of each kernel.
    medians: dict[str, float] = {}
    current, index = None, 0
    middle: tuple[int, ...] = ()
    for name, duration in con.execute(f"SELECT name, duration FROM ({union}) ORDER BY name, duration"):
        if name != current:
            current, index = name, 0
            n = stats[name]["calls"]
            middle = ((n - 1) // 2, n // 2)
            medians[name] = 0.0
        medians[name] += duration * middle.count(index) / 2  # odd counts: the one middle value, twice
        index += 1
    pattern = target_pattern(target_regex)
    grand = sum(k["total"] for k in stats.values())
    kernels = []
    for name, k in sorted(stats.items(), key=lambda item: -item[1]["total"]):
        vgprs, agprs, sgprs, lds, scratch = k["regs"]
        kernels.append(
            KernelRow(
                name=name,
                calls=k["calls"],
                total_us=k["total"] / 1e3,
                avg_us=k["total"] / k["calls"] / 1e3,
                median_us=medians[name] / 1e3,
                min_us=k["min"] / 1e3,
                max_us=k["max"] / 1e3,
                share=k["total"] / grand if grand else 0.0,
                grid=next(iter(k["grids"])) if len(k["grids"]) == 1 else "varies",
                block=next(iter(k["blocks"])) if len(k["blocks"]) == 1 else "varies",
                vgprs=vgprs,
                agprs=agprs,
                sgprs=sgprs,
                lds_bytes=lds,
                scratch_bytes=scratch,
                target=pattern.search(name) if pattern else False,
                sources=sorted(k["origins"]),
            )
        )
    shown = kernels[:MAX_KERNELS] + [k for k in kernels[MAX_KERNELS:] if k.target][:3]
    result = ProfileSummary(
        source="rocpd",
        kernels=shown,
        kernels_total=len(kernels),
        dispatches=sum(k["calls"] for k in stats.values()),
        total_gpu_us=grand / 1e3,
        target_regex=target_regex,
        origins=origins,
        notes=notes,
    )
    if pattern is not None:
        result.target_dispatches, result.target_calls = _target_dispatches(con, schemas, [k.name for k in kernels if k.target])
    if counter_schemas:
        union_c = " UNION ALL ".join(f"SELECT dispatch_id, kernel_name, counter_name, value FROM {s}.counters_collection" for s, _ in counter_schemas)
        found: dict[str, dict[str, float]] = {}
        dispatches: dict[str, int] = {}
        for kernel, counter, per_dispatch, n in con.execute(
            f"SELECT kernel_name, counter_name, SUM(value) / COUNT(DISTINCT dispatch_id), COUNT(DISTINCT dispatch_id) FROM ({union_c}) GROUP BY kernel_name, counter_name"
        ):
            found.setdefault(kernel, {})[counter] = per_dispatch
            dispatches[kernel] = max(dispatches.get(kernel, 0), n)
        durations = {k.name: k.avg_us / 1e6 for k in kernels}
        # the vendor's definitions for the one GPU target the databases' agents name (several, or none: those alike on every target)
        arch = next(iter(targets)) if len(targets) == 1 else None
        machine, machine_notes = vendor_metrics.machine_figures(arch, vendor_metrics.Machine({}, {}), _agents(con, schemas, labels), None)
        per_dispatch, how = _dispatch_tables(con, counter_schemas)
        result.notes += machine_notes + [machine.note()] + ([how] if how else [])
        result.notes.append(
            f"derived metrics: rocprof-compute definitions for {arch}, the target rocpd_info_agent of {', '.join(targets[arch][:2])} names"
            if arch
            else "derived metrics: the databases' agents name "
            + (", ".join(sorted(targets)) or "no GPU target")
            + ": only the rocprof-compute metrics defined alike on every shipped target"
        )
        result.counters = [
            CounterRow(
                kernel=k,
                dispatches=dispatches[k],
                counters=c,
                derived=ctr.derived_amd(c, durations.get(k), None, {}, arch, machine.values, vendor_metrics.kernel_columns(per_dispatch, k)),
            )
            for k, c in found.items()
        ][:MAX_KERNELS]
    con.close()
    return result


def _agents(con: sqlite3.Connection, schemas: list[str], labels: list[str]) -> list[tuple[str, dict[str, str]]]:
    """Each database's GPU agents with the figures rocprofv3 keeps in rocpd_info_agent.extdata (the
    agent's fields, as its agent_info.csv lists them: generateRocpd.cpp saves the whole agent there)."""
    found = []
    for schema, label in zip(schemas, labels):
        for name, extdata in con.execute(f"SELECT name, extdata FROM {schema}.rocpd_info_agent WHERE type = 'GPU'"):
            try:
                fields = json.loads(extdata) if isinstance(extdata, str | bytes) else {}
            except ValueError:
                fields = {}
            row = {str(k).lower(): str(v) for k, v in (fields.items() if isinstance(fields, dict) else []) if not isinstance(v, dict | list)}
            row["name"] = str(name or "")
            found.append((f"{label} rocpd_info_agent", row))
    return found


def _dispatch_tables(con: sqlite3.Connection, counter_schemas: list[tuple[str, str]]) -> tuple[list[tables.DispatchTable], str | None]:
    """Each database's counters per dispatch, as rocprof-compute reads a rocpd database (its CSV
    export of counters_collection, one row per dispatch and counter; src/utils/rocpd_data.py), for
    the derived metrics; none past MAX_COUNTER_ROWS rows (then per-kernel means, said so)."""
    out = []
    for schema, label in counter_schemas:
        have = _columns(con, schema, COUNTER_VIEW[0])
        extra = [c for c in DISPATCH_COLUMNS if c in have]
        query = f"SELECT dispatch_id, kernel_name, counter_name, value{''.join(', ' + c for c in extra)} FROM {schema}.{COUNTER_VIEW[0]} LIMIT ?"
        rows = con.execute(query, (MAX_COUNTER_ROWS + 1,)).fetchall()
        if len(rows) > MAX_COUNTER_ROWS:
            return [], f"{label}: over {MAX_COUNTER_ROWS:,} counter rows: the derived metrics are computed on each kernel's mean counters, not per dispatch"
        import pandas as pd  # here: listing the tools must not load pandas

        frame = pd.DataFrame(rows, columns=["dispatch", "kernel", "counter", "value", *(DISPATCH_COLUMNS[c] for c in extra)])
        frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
        frame = frame.assign(origin=label, kernel=frame["kernel"].astype(str), counter=frame["counter"].astype(str))
        table = tables.dispatch_table(frame, label, vendor_metrics.wanted, rocpd=True)
        if table is not None:
            out.append(table)
    return out, None
