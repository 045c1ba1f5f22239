"""`kernel-mcp.toml`: what a workspace declares, validated so that a bad file names the key at fault."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from kernel_mcp import arch_registry, limits, safe_files
from kernel_mcp.errors import KernelMcpError, WorkspaceError
from kernel_mcp.forked_runs import script_of
from kernel_mcp.patterns import AgentPattern

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

CONFIG_NAME = "kernel-mcp.toml"

if TYPE_CHECKING:  # a Literal built at import time is no type to a checker: it sees the str the Literal holds
    Arch = str
else:
    Arch = arch_registry.ArchName  # the hardware tables in docs_index/hardware/
Platform = Literal["auto", "rocm", "cuda", "offline"]

_RULE = re.compile(r"^\s*(==|!=|<=|>=|<|>)\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")  # \Z: `$` would accept a trailing newline


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetConfig(_Strict):
    # no default arch without a docs index: "" (a str, as the field says), which every arch lookup refuses naming the missing index
    arch: Arch = Field(arch_registry.DEFAULT_ARCH or "", description="the GPU the kernel is tuned for")
    platform: Platform = Field("auto", description="which toolchain family runs it; auto picks what is installed")
    product: str | None = Field(
        None,
        min_length=1,
        max_length=80,
        description="the product of that arch it is tuned for (a product table's label or name): "
        "the calculators' default; a measured answer uses the GPU it ran on",
    )

    @model_validator(mode="after")
    def _product_of_arch(self) -> TargetConfig:
        if self.product is not None:
            try:
                entry = arch_registry.product_named(self.product)
            except KernelMcpError as exc:
                raise ValueError(f"{exc.message} ({exc.hint})") from None
            if entry.arch != self.arch:
                raise ValueError(f"product {entry.label} is a {entry.arch} product, but arch = {self.arch!r}")
        return self


class CorrectnessRule(_Strict):
    column: str = Field(min_length=1, description="CSV column holding the error figure")
    rule: str = Field("== 0", description="comparison every row must satisfy, e.g. '== 0' or '<= 1e-3'")

    @field_validator("rule")
    @classmethod
    def _rule_is_comparison(cls, value: str) -> str:
        if not _RULE.match(value):
            raise ValueError("must be a comparison and a number, one of ==, !=, <, <=, >, >= (e.g. '== 0')")
        return value

    def parsed(self) -> tuple[str, float]:
        match = _RULE.match(self.rule)
        assert match is not None  # validated above
        return match.group(1), float(match.group(2))


class BenchmarkConfig(_Strict):
    command: list[str] = Field(min_length=1, description="the fixed benchmark command, as an argument list")
    csv: str = Field(min_length=1, description="where the command writes its CSV, relative to the workspace")
    config_columns: list[str] = Field(default_factory=list, description="columns that define a config class")
    correctness: CorrectnessRule
    metric: str = Field(min_length=1, description="CSV column of the speed figure; lower is better")
    target_kernel: str = Field(".*", description="regular expression naming the kernel being optimized")
    noise_threshold: float = Field(0.01, ge=0.0, le=0.5, description="relative change treated as noise")
    severe_threshold: float = Field(
        0.05,
        gt=0.0,
        le=1.0,
        description="a slowdown a class may not be shown to risk for a keep: every class the change must not hurt needs the upper end of its interval below it",
    )
    timeout_s: float = Field(1800.0, gt=0, le=24 * 3600, description="the benchmark is killed after this")
    repeats: int = Field(3, ge=1, le=100, description="runs of the command per evaluation, for the statistics")
    seed_env: str = Field("KERNEL_MCP_SEED", pattern=r"^[A-Z_][A-Z0-9_]*$", description="variable carrying a fresh seed to each run")
    build_command: list[str] = Field(
        default_factory=list, description="run once in BEST's and the candidate's tree before any timed run, so both builds are ready first"
    )
    preload: list[str] = Field(
        default_factory=list,
        description="modules a `python script.py` benchmark imports, imported once per side by a fork server; each run is a fork of it",
    )

    @field_validator("target_kernel")
    @classmethod
    def _valid_regex(cls, value: str) -> str:
        try:  # compiled as it is searched (see patterns): a file the search would refuse is refused here, by its key
            AgentPattern(value)
        except KernelMcpError as exc:
            raise ValueError(f"not a valid regular expression: {exc.message}") from None
        return value

    @field_validator("command", "build_command")
    @classmethod
    def _no_empty_words(cls, value: list[str]) -> list[str]:
        if any(not word for word in value):
            raise ValueError("words of the command must not be empty")
        return value

    @field_validator("preload")
    @classmethod
    def _module_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not all(part.isidentifier() for part in name.split(".")):
                raise ValueError(f"{name!r} is not a module name")
        return value

    @model_validator(mode="after")
    def _preload_needs_a_script(self) -> BenchmarkConfig:
        if self.preload and script_of(self.command) is None:
            raise ValueError("preload needs a command of the form python script.py [arguments]")
        return self


class GateConfig(_Strict):
    interval_s: float = Field(600.0, gt=0, description="how often to re-check when no GPU is idle")
    limit_s: float = Field(3600.0, ge=0, description="give up (a stop condition) after waiting this long")
    max_utilization_pct: float = Field(10.0, ge=0, le=100, description="a GPU busier than this is not idle")
    max_memory_used_pct: float = Field(10.0, ge=0, le=100, description="a GPU with more memory in use is not idle")


DEFAULT_EDITABLE = ["**/*.hip", "**/*.cu", "**/*.cuh", "**/*.h", "**/*.hpp", "**/*.cpp", "**/*.cc", "**/*.c"]


class HarnessConfig(_Strict):
    """What an experiment may change, and what must hold before a change is kept."""

    editable: list[str] = Field(default_factory=lambda: list(DEFAULT_EDITABLE), description="globs the agent may edit (kernel sources)")
    protected: list[str] = Field(default_factory=list, description="globs protected even if they match editable; everything not editable is protected anyway")
    verify_command: list[str] = Field(default_factory=list, description="correctness-only run on extra shapes/seeds before a keep")
    verify_csv: str | None = Field(None, description="where verify_command writes its CSV (checked with the correctness rule)")
    flops_column: str | None = Field(None, description="CSV column: floating-point operations of the row's kernel call")
    bytes_column: str | None = Field(None, description="CSV column: fewest bytes the call must move")
    metric_seconds: float = Field(1e-6, gt=0, description="seconds per unit of the metric column (1e-6 for microseconds)")
    floor_dtype: Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"] = Field("fp32", description="arithmetic the kernel does, for its roofline floor")
    floor_engine: Literal["vector", "matrix"] | None = Field(None, description="vector ALUs or matrix cores (default by dtype)")
    floor_arch: Arch | None = Field(None, description="the arch whose products may give the floor (default: the GPU's, else the target's)")
    floor_product: str | None = Field(
        None,
        min_length=1,
        max_length=80,
        description="the product whose figures give the floor, whatever GPU runs (default: the GPU's own product; a GPU no table describes gets no floor)",
    )

    @field_validator("floor_product")
    @classmethod
    def _known_product(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                arch_registry.product_named(value)
            except KernelMcpError as exc:
                raise ValueError(f"{exc.message} ({exc.hint})") from None
        return value

    suspicious_factor: float = Field(3.0, gt=1, description="a speedup over BEST beyond this in one step must be re-measured")
    keep_metric: Literal["auto", "profiler", "csv"] = Field("auto", description="profiler GPU time (auto: when a profiler is installed) or the CSV metric")
    kernel_times: Literal["trace", "profiler"] = Field(
        "trace",
        description="with the profiler keep metric: GPU kernel times recorded inside every benchmark run by the platform's "
        "kernel tracer where it has one (CUPTI activity records: no replay), or by the profiler on runs of their own (ncu)",
    )
    # BEST and the candidate are measured together, in pairs of fresh runs (A B, then B A, ...),
    # so that a drift of the GPU's speed cancels within each pair.
    min_pairs: int = Field(3, ge=2, le=50, description="pairs of runs (BEST and candidate) before a decision may stop early")
    max_pairs: int = Field(10, ge=2, le=100, description="pairs at most, when the outcome stays close to the threshold")
    lock_clocks: bool = Field(False, description="on AMD, hold the GPU in the vendor's deterministic-performance mode while measuring (needs permission)")
    allow_unsealed: bool = Field(False, description="keep changes measured without the OS boundary where the kernel offers none (an explicit opt-in)")
    measure_same_code: bool = Field(
        False,
        description="measure a candidate whose code (comments and layout aside) is BEST's or an earlier attempt's too; "
        "by default it is decided from that without a run (A/A calibration sets this)",
    )
    writable: list[str] = Field(
        default_factory=list,
        description="folders outside its own tree that every run may also write (absolute, "
        "or relative to the workspace); BEST's and the candidate's runs share them",
    )

    @model_validator(mode="after")
    def _pairs_in_order(self) -> HarnessConfig:
        if self.max_pairs < self.min_pairs:
            raise ValueError(f"max_pairs ({self.max_pairs}) must be at least min_pairs ({self.min_pairs})")
        return self


class CompileConfig(_Strict):
    """How compile_kernel builds: the workspace's own header folders, the only include folders a
    compile is given beyond the toolchain's (a tool argument never names one)."""

    include_dirs: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="folders of the workspace searched for #include files (passed as -I to the offline clang, hipcc or nvcc), relative to the workspace",
    )

    @field_validator("include_dirs")
    @classmethod
    def _inside_the_workspace(cls, value: list[str]) -> list[str]:
        for entry in value:
            if not entry or "\x00" in entry or entry != entry.strip():
                raise ValueError(f"{entry!r} is not a folder name")
            if entry.startswith(("-", "@")):
                raise ValueError(f"{entry!r} starts with {entry[0]!r}: a compiler would read it as an option")
            if PurePosixPath(entry).is_absolute() or PureWindowsPath(entry).is_absolute() or entry.startswith("~"):
                raise ValueError(f"{entry!r} is absolute: name folders of the workspace, relative to it")
            if ".." in PurePosixPath(entry).parts:
                raise ValueError(f"{entry!r} leads outside the workspace")
        return value


class ImportsConfig(_Strict):
    """Folders outside the workspace that profile_import, thread_trace_import and compile_import may
    read (never write): where people keep profiler logs. Named by the user's own file, never by a
    tool argument, so an agent cannot widen what it may read."""

    folders: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="absolute folders (or ~/...) whose files an import may be given by absolute path; links out of them are not followed",
    )

    @field_validator("folders")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        for entry in value:
            if not entry or "\x00" in entry or entry != entry.strip():
                raise ValueError(f"{entry!r} is not a folder name")
            if not (PurePosixPath(entry).is_absolute() or entry == "~" or entry.startswith("~/")):
                raise ValueError(f"{entry!r} is not absolute: name a folder outside the workspace as /path or ~/path")
        return value


ListedTools = Literal["core", "all"]


class ServerConfig(_Strict):
    response_budget_bytes: int = Field(4096, ge=512, le=65536, description="most text one tool answer carries")
    command_timeout_s: float = Field(600.0, gt=0, le=24 * 3600, description="timeout of [commands] entries")
    tools: ListedTools = Field(
        "core",
        description="what tools/list shows from the start: core (the other toolsets once tools_load or a call of one of their tools loads them) or all",
    )


class EngineConfig(_Strict):
    """Where experiment_evaluate_many measures its candidates: this node's GPUs, or a Ray cluster."""

    kind: Literal["local", "ray"] = Field("local", description="local: a pool over this node's idle GPUs; ray: one Ray task per candidate")
    address: str = Field(
        "auto",
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_.:/\[\]-]+$",
        description="the Ray cluster to join (ray only): 'auto', 'local', host:port or ray://host:port",
    )
    slots: int | None = Field(None, ge=1, le=256, description="candidates measured at once (local: default every idle GPU; without a GPU monitor: 1)")
    gpus_per_candidate: float = Field(1.0, ge=0, le=8, description="GPUs a Ray task asks for (ray only)")
    candidate_timeout_s: float | None = Field(
        None, gt=0, description="a candidate with no result by then is failed (ray only; default from the benchmark timeout)"
    )


class WorkspaceConfig(_Strict):
    target: TargetConfig = Field(default_factory=TargetConfig)
    benchmark: BenchmarkConfig | None = None
    commands: dict[str, list[str]] = Field(default_factory=dict, description="named commands the agent may run by name (run_command)")
    gate: GateConfig = Field(default_factory=GateConfig)
    harness: HarnessConfig = Field(default_factory=HarnessConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    compile: CompileConfig = Field(default_factory=CompileConfig)
    imports: ImportsConfig = Field(default_factory=ImportsConfig)

    @field_validator("commands")
    @classmethod
    def _command_names(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, argv in value.items():
            if not _NAME.match(name):
                raise ValueError(f"command name {name!r} must be letters, digits, '_', '.', '-'")
            if not argv or any(not word for word in argv):
                raise ValueError(f"command {name!r} must be a non-empty list of non-empty words")
        return value

    def require_benchmark(self) -> BenchmarkConfig:
        """The [benchmark] table, for what cannot run without one."""
        if self.benchmark is None:
            raise WorkspaceError("kernel-mcp.toml has no [benchmark] table")
        return self.benchmark


def _describe(error: ErrorDetails) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "(top level)"
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    elif error["type"] == "missing":
        message = "required key is missing"
    return f"{where}: {message}"


def parse_config(text: str, source: str = CONFIG_NAME) -> WorkspaceConfig:
    """Parse and validate the TOML text; errors name the file, the key and what is allowed.

    tomllib recurses once per nesting level, so a file nested thousands deep raised RecursionError,
    and as every call reads the config, every call failed: the depth is measured first, without
    recursion, and a deep file is refused like any other malformed one."""
    if len(text) > limits.TOML_MAX_BYTES:
        raise WorkspaceError(f"{source} is {len(text)} characters, over the {limits.TOML_MAX_BYTES} a workspace configuration may hold")
    problem = limits.nesting_problem(text, limits.TOML_MAX_DEPTH, limits.TOML_MAX_DOTS_PER_LINE)
    if problem is not None:
        where, what = problem
        raise WorkspaceError(f"{source} has {what} (line {text.count(chr(10), 0, where) + 1}); a workspace configuration nests 3 levels")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkspaceError(f"{source} is not valid TOML: {exc}") from None
    except RecursionError:  # a nesting the scan above did not see (dotted keys, say)
        raise WorkspaceError(f"{source} nests too deeply to be a workspace configuration") from None
    try:
        return WorkspaceConfig.model_validate(data)
    except RecursionError:
        raise WorkspaceError(f"{source} nests too deeply to be a workspace configuration") from None
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors(include_url=False))
        raise WorkspaceError(f"{source} is invalid: {problems}", hint="`kernel-mcp init` writes a commented example") from None


def load_config(path: Path) -> WorkspaceConfig:
    return parse_config(read_config_text(path), path.name)


def read_config_text(path: Path) -> str:
    """The text of a workspace's kernel-mcp.toml (a regular file only), as load_config parses it."""
    if not os.path.lexists(path):
        raise WorkspaceError(f"no {CONFIG_NAME} in {path.parent}", hint="run `kernel-mcp init` in the workspace to write one")
    try:
        # a regular file only: a FIFO named kernel-mcp.toml would block the open forever
        with safe_files.open_regular(path) as handle:
            text = handle.read(limits.TOML_MAX_BYTES + 1).decode("utf-8")  # a larger file is refused by parse_config
    except KernelMcpError as exc:
        raise WorkspaceError(f"cannot read {path.name}: {exc.message}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkspaceError(f"cannot read {path.name}: {exc}") from None
    return text


def example_config() -> str:
    """The commented example `kernel-mcp init` writes."""
    return (Path(__file__).with_name("example.toml")).read_text(encoding="utf-8")
