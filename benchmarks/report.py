"""Turn the benchmark's JSON report into a terminal table, Markdown and target verdicts.

Kept separate from the measuring code so the numbers a run records (JSON, with raw
samples) and the way they are shown can evolve independently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

COLD_TARGET_MS = 35.0
WARM_TARGET_MS = 10.0
WRITE_RATIO_TARGET = 1.3
CLI_RATIO_TARGET = 2.0
CLI_SEARCH_RATIO_TARGET = 2.5
GET_RATE_TARGET = 2000
UPSERT_RATE_TARGET = 300
MCP_OVERHEAD_TARGET_MS = 5.0
MCP_START_TARGET_MS = 150.0
LAUNCH_EXTRA_TARGET_MS = 150.0
ISOLATED_EXTRA_TARGET_MS = 100.0
AGENT_LAUNCH_TARGET_MS = 100.0
AGENT_ISOLATED_TARGET_MS = 50.0
TARGET_SHAPES = ("8 terms", "8 terms, 4 absent")
REFERENCE_RG_MS = 13.5
"""rg's time on the reference machine the issue's ms targets were set on (12–15 ms,
midpoint). A derived row scales each ms target by this run's rg p50 / 13.5."""
FLOOR_RATIONALE = (
    "The issue's cold target (35 ms) was set on a reference machine where rg took "
    "12–15 ms and the plain Python scan 17–31 ms; on a slower machine the absolute "
    "target can be below what any in-process byte scan achieves, so the cold cost is "
    "shown against both floors measured in the same run: `rg` and the bare-Python "
    "floor (`py floor`: for every `*.md` file, `open(path, 'rb').read().lower()` and "
    "`term in data` per folded term, no store code, file list gathered outside the "
    "timing)."
)
DERIVED_NOTE = (
    "Rows marked *derived* are not the issue's targets: they scale each ms target by "
    f"this run's rg p50 / {REFERENCE_RG_MS:g} ms (rg on the reference machine, midpoint "
    "of 12–15 ms), i.e. the target as it would read on this machine if rg's speed is "
    "the yardstick. The absolute verdicts above them stand as they are; `--strict` "
    "ignores derived rows."
)


def targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each with the measured figure and met/missed."""
    rows: list[dict[str, Any]] = []
    search = report["search"]
    incomplete = sum(shape["checks"]["incomplete"] for shape in search.values())
    searches = sum(shape["checks"]["searches"] for shape in search.values())
    recall = report.get("recall")
    if recall is not None:
        incomplete += sum(bool(row["full_scope_incomplete"]) for row in recall["terms"])
        searches += len(recall["terms"])
    rows.append({
        "target": "full-scope search within the budget never reports `incomplete`",
        "measured": f"{incomplete} of {searches} full-scope searches incomplete "
                    f"({report['corpus']['documents']} docs, "
                    f"{report['corpus']['total_bytes']:,} bytes)",
        "met": incomplete == 0,
    })
    for kind, label, target_ms in (("cold", "cold store object", COLD_TARGET_MS),
                                   ("warm_repeated", "same store, repeated search",
                                    WARM_TARGET_MS)):
        for shape in TARGET_SHAPES:
            if shape in search:
                p50 = search[shape][kind]["p50_ms"]
                rows.append({"target": f"{label}, {shape}: p50 ≤ {target_ms:g} ms",
                             "measured": f"{p50:.1f} ms", "met": p50 <= target_ms})
                derived = _relative_row(search[shape], p50, target_ms)
                if derived is not None:
                    rows.append(derived)
    for label, row in report["writes"].items():
        if isinstance(row, dict):
            ratio, goal = row["ratio_p50"], row.get("target", WRITE_RATIO_TARGET)
            rows.append({
                "target": f"upsert {label} ≤ {goal:g}× raw durable floor",
                "measured": f"{ratio:.2f}× ({row['upsert']['p50_ms']:.2f} vs "
                            f"{row['durable_floor']['p50_ms']:.2f} ms)",
                "met": ratio <= goal,
            })
            if "guard_us" in row:
                floor_ms = row["durable_floor"]["p50_ms"]
                rest = (row["upsert"]["p50_ms"] - row["guard_us"] / 1000) / floor_ms
                rows.append({
                    "target": f"… the same without the secret guard's scan (derived: the "
                              f"guard, issue 7, costs {row['guard_us'] / 1000:.2f} ms here)",
                    "measured": f"{rest:.2f}×", "met": rest <= goal,
                    "derived": True,
                })
    if recall is not None:
        cjk = [row for row in recall["terms"] if not row["term"].isascii()]
        lost = [row["term"] for row in cjk if not row["no_recall_loss"]]
        rows.append({
            "target": "CJK terms never lose recall",
            "measured": (f"{len(cjk)} terms, {sum(r['rg_files'] for r in cjk)} rg file matches, "
                         f"{len(lost)} terms with a miss" + (f": {', '.join(lost)}" if lost
                                                           else "")),
            "met": not lost and recall["all_ok"],
        })
    if "hub" in report:
        rows += _hub_targets(report["hub"])
    if "mcp" in report:
        rows += _mcp_targets(report["mcp"])
    if "launch" in report:
        rows += _launch_targets(report["launch"])
    if "agent_launch" in report:
        rows += agent_launch_targets(report["agent_launch"])
    return rows


def _relative_row(shape: dict[str, Any], p50: float, target_ms: float) -> dict[str, Any] | None:
    """The ms target scaled by this run's rg p50 over the reference rg time (derived)."""
    rg_p50 = shape.get("rg", {}).get("p50_ms")
    if not rg_p50:
        return None
    scaled = target_ms * rg_p50 / REFERENCE_RG_MS
    return {
        "target": f"… relative to this machine (derived): p50 ≤ {target_ms:g} × "
                  f"(rg {rg_p50:.1f} / {REFERENCE_RG_MS:g}) = {scaled:.1f} ms",
        "measured": f"{p50:.1f} ms",
        "met": p50 <= scaled,
        "derived": True,
        "scaled_target_ms": round(scaled, 3),
        "rg_p50_ms": rg_p50,
    }


def _load(values: list[float] | None) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if values else "?"


def _ms(summary: dict[str, Any]) -> str:
    return f"{summary['p50_ms']:.1f} / {summary['p90_ms']:.1f}" if summary.get("n") else "-"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool,
           numeric: bool = True) -> str:
    """Aligned text, or a Markdown table (first column left, the rest right when numeric,
    left otherwise)."""
    if markdown:
        align = ["---" if i == 0 or not numeric else "---:" for i in range(len(header))]
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows,
                                                                        strict=True)]
    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i == 0 or not numeric else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def search_table(report: dict[str, Any], markdown: bool) -> str:
    header = ["query", "cold p50/p90", "warm repeated", "warm new terms", "rg -c", "rg -j1",
              "py floor", "cold/rg", "cold/py", "warm/rg", "new/rg"]
    rows = []
    for shape, row in report["search"].items():
        rows.append([
            shape, _ms(row["cold"]), _ms(row["warm_repeated"]), _ms(row["warm_new_terms"]),
            _ms(row.get("rg", {})), _ms(row.get("rg_j1", {})), _ms(row.get("py_floor", {})),
            f"{row.get('cold_vs_rg', float('nan')):.2f}",
            f"{row.get('cold_vs_py', float('nan')):.2f}",
            f"{row.get('warm_repeated_vs_rg', float('nan')):.2f}",
            f"{row.get('warm_new_terms_vs_rg', float('nan')):.2f}",
        ])
    return _table(header, rows, markdown)


def write_table(report: dict[str, Any], markdown: bool) -> str:
    header = ["size", "upsert p50/p90", "durable floor", "plain write (no fsync)",
              "upsert/floor p50", "paired median", "overhead p50", "upsert (bytes)",
              "bytes/floor p50", "encode / UTF-8 check", "secret guard"]
    rows = []
    for label, row in report["writes"].items():
        if isinstance(row, dict):
            rows.append([label, _ms(row["upsert"]), _ms(row["durable_floor"]),
                         _ms(row["plain_write"]), f"{row['ratio_p50']:.2f}×",
                         f"{row['ratio_paired_median']:.2f}×",
                         f"{row['overhead_p50_ms']:+.2f} ms",
                         _ms(row.get("upsert_bytes", {})),
                         f"{row['ratio_bytes_p50']:.2f}×" if "ratio_bytes_p50" in row else "-",
                         f"{row['encode_us']:.1f} / {row['utf8_check_us']:.1f} µs"
                         if "encode_us" in row else "-",
                         f"{row['guard_us'] / 1000:.2f} ms" if "guard_us" in row else "-"])
    return _table(header, rows, markdown)


def context_table(report: dict[str, Any], markdown: bool) -> str:
    rows = [[label, _ms(row)] for label, row in report["interpreter_start"].items()]
    opens = [row["store_open_cold"] for row in report["search"].values()]
    samples = [s for row in opens for s in row.get("samples_ms", [])]
    if samples:
        samples.sort()
        median = samples[len(samples) // 2]
        p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
        rows.append(["`Store(root)` construction (cold)", f"{median:.1f} / {p90:.1f}"])
    return _table(["what", "p50/p90 ms"], rows, markdown)


def recall_table(report: dict[str, Any], markdown: bool) -> str:
    header = ["term", "docs (Python scan)", "rg -l", "store per-doc", "missed", "extra",
              "limit=20 ok"]
    rows = []
    for row in report["recall"]["terms"]:
        rows.append([f"`{row['term']}`" if markdown else row["term"], str(row["documents"]),
                     str(row["rg_files"]), str(row["store_content_matches"]),
                     str(len(row["missed_by_store"])), str(len(row["extra_in_store"])),
                     "yes" if row["full_scope_ok"] else "NO"])
    return _table(header, rows, markdown)


def queries_list(report: dict[str, Any], markdown: bool) -> str:
    lines = []
    for shape, row in report["search"].items():
        terms = ", ".join(
            f"`{t['text']}` ({t['band']}, {t['documents']} docs)" if markdown
            else f"{t['text']} ({t['band']}, {t['documents']})"
            for t in row["query"]["terms"])
        lines.append(f"- {shape}: {terms}")
    return "\n".join(lines)


def targets_table(report: dict[str, Any], markdown: bool) -> str:
    missed = "**missed**" if markdown else "MISSED"

    def verdict(row: dict[str, Any]) -> str:
        if row.get("derived"):
            return "derived: " + ("met" if row["met"] else "missed")
        return "met" if row["met"] else missed

    rows = [[row["target"], row["measured"], verdict(row)] for row in report["targets"]]
    return _table(["target", "measured", "verdict"], rows, markdown, numeric=False)


def _hub_targets(hub: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    show, python = hub["show"]["p50_ms"], hub["python"]["p50_ms"]
    rows.append({"target": f"CLI cold round trip (default path) ≤ {CLI_RATIO_TARGET:g}× "
                           "`python3 -c pass`",
                 "measured": f"{show / python:.2f}× ({show:.1f} vs {python:.1f} ms)",
                 "met": show / python <= CLI_RATIO_TARGET})
    if "rg" in hub:
        search, rg = hub["search"]["p50_ms"], hub["rg"]["p50_ms"]
        rows.append({"target": f"whole-process `amux memory search` (8 terms, default "
                               f"path) ≤ {CLI_SEARCH_RATIO_TARGET:g}× rg",
                     "measured": f"{search / rg:.2f}× ({search:.1f} vs {rg:.1f} ms)",
                     "met": search / rg <= CLI_SEARCH_RATIO_TARGET})
    for key, label, target in (("get_per_s", "Hub `get` of 3 KiB", GET_RATE_TARGET),
                               ("upsert_per_s", "Hub durable conditional writes",
                                UPSERT_RATE_TARGET)):
        rows.append({"target": f"{label}, {hub['threads']} connections ≥ {target:,}/s",
                     "measured": f"{hub[key]:,}/s", "met": hub[key] >= target})
    return rows


def _mcp_targets(mcp: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name in ("search", "get 64 KiB"):
        over = mcp[f"{name} mcp"]["p50_ms"] - mcp[f"{name} http"]["p50_ms"]
        rows.append({"target": f"MCP `{name}` round trip median ≤ {MCP_OVERHEAD_TARGET_MS:g} ms "
                               "above the Hub's HTTP API",
                     "measured": f"+{over:.2f} ms ({mcp[f'{name} mcp']['p50_ms']:.2f} vs "
                                 f"{mcp[f'{name} http']['p50_ms']:.2f} ms)",
                     "met": over <= MCP_OVERHEAD_TARGET_MS})
    start = mcp["start installed"]["p50_ms"]
    rows.append({"target": f"MCP server start to first tools/list ≤ {MCP_START_TARGET_MS:g} ms",
                 "measured": f"{start:.1f} ms", "met": start <= MCP_START_TARGET_MS})
    return rows


def _launch_targets(launch: dict[str, Any]) -> list[dict[str, Any]]:
    extra = launch["amux run (memory)"]["p50_ms"] - launch["direct"]["p50_ms"]
    plain = {"target": f"`amux run` launch overhead (memory path) ≤ "
                       f"{LAUNCH_EXTRA_TARGET_MS:g} ms median extra",
             "measured": f"+{extra:.1f} ms ({launch['amux run (memory)']['p50_ms']:.1f} vs "
                         f"{launch['direct']['p50_ms']:.1f} ms direct)",
             "met": extra <= LAUNCH_EXTRA_TARGET_MS}
    return [plain, *_isolated_target(launch)]


def _isolated_target(launch: dict[str, Any]) -> list[dict[str, Any]]:
    isolated = launch.get("amux run --as-user (isolated)")
    if isolated is None:
        return []
    plain = launch["amux run (memory)"]["p50_ms"]
    extra = isolated["p50_ms"] - plain
    return [{"target": f"isolated launch overhead ≤ {ISOLATED_EXTRA_TARGET_MS:g} ms median "
                       "extra over a plain launch",
             "measured": f"+{extra:.1f} ms ({isolated['p50_ms']:.1f} vs {plain:.1f} ms)",
             "met": extra <= ISOLATED_EXTRA_TARGET_MS}]


def launch_table(report: dict[str, Any], markdown: bool) -> str:
    launch = report["launch"]
    rows = [[name, _ms(launch[name])] for name in
            ("direct", "amux run (memory)", "amux run (fallback)",
             "amux run --as-user (isolated)") if name in launch]
    return _table(["trivial agent", "p50/p90 ms"], rows, markdown, numeric=False)


def mcp_table(report: dict[str, Any], markdown: bool) -> str:
    mcp = report["mcp"]
    rows = []
    for name in ("search", "get 64 KiB"):
        for side, label in (("mcp", "MCP tools/call"), ("http", "Hub HTTP API")):
            summary = mcp[f"{name} {side}"]
            rows.append([f"`{name}`: {label}",
                         f"{summary['p50_ms']:.2f} / {summary['p90_ms']:.2f} / "
                         f"{summary['p99_ms']:.2f}"])
    for key, label in (("start installed", "start to first tools/list: `amux memory mcp`"),
                       ("start single-file", "start to first tools/list: single-file client")):
        summary = mcp[key]
        rows.append([label, f"{summary['p50_ms']:.1f} / {summary['p90_ms']:.1f} / "
                            f"{summary['p99_ms']:.1f}"])
    return _table(["what", "p50 / p90 / p99 ms"], rows, markdown, numeric=False)


def hub_table(report: dict[str, Any], markdown: bool) -> str:
    hub = report["hub"]
    rows = [[label, _ms(hub[key])] for key, label in (
        ("show", "`amux memory show` (3 KiB, new process, default path)"),
        ("python", "`python3 -c pass`"),
        ("search", "`amux memory search` (8 terms, new process, default path)"),
        ("rg", "`rg -F -i` (same)"),
        ("show_explicit", "`amux memory show` with AMUX_HUB + AMUX_TOKEN"),
        ("search_explicit", "`amux memory search` with AMUX_HUB + AMUX_TOKEN"),
        ("show_on_demand", "`amux memory show`, the Hub started on demand (fresh home)"),
    ) if key in hub]
    rows.append([f"Hub `get` 3 KiB, {hub['threads']} connections", f"{hub['get_per_s']:,}/s"])
    rows.append([f"Hub conditional upsert, {hub['threads']} connections",
                 f"{hub['upsert_per_s']:,}/s"])
    return _table(["what", "p50/p90 ms or rate"], rows, markdown, numeric=False)


def text(report: dict[str, Any]) -> str:
    """The terminal view."""
    corpus = report["corpus"]
    return "\n\n".join([
        f"corpus: {corpus['documents']} docs, {corpus['total_bytes']:,} bytes, median "
        f"{corpus['median_bytes']:,} B, max {corpus['max_bytes']:,} B, "
        f"{corpus['chinese_documents']} mostly-Chinese (seed {corpus['seed']})",
        "search latency, ms (p50 / p90); cold/py = cold p50 / py floor p50, the other "
        "ratios p50 / rg p50\n" + search_table(report, False),
        "queries:\n" + queries_list(report, False),
        "writes, ms (p50 / p90); upsert = str content, upsert (bytes) = pre-encoded; "
        "encode / UTF-8 check = µs per call alone; secret guard = its scan alone\n"
        + write_table(report, False),
        "CJK recall\n" + recall_table(report, False),
        "Hub and CLI\n" + hub_table(report, False),
        "MCP\n" + mcp_table(report, False),
        "launch\n" + launch_table(report, False),
        *_agent_launch_text_sections(report),
        "context\n" + context_table(report, False),
        "targets (derived rows: ms target × this run's rg p50 / "
        f"{REFERENCE_RG_MS:g}; information, not a verdict)\n" + targets_table(report, False),
    ])


def markdown(report: dict[str, Any]) -> str:
    """A section ready to paste into docs/benchmarks.md."""
    machine = report["machine"]
    corpus = report["corpus"]
    fs = machine["filesystem"]
    search = report["search"]
    any_shape = next(iter(search.values()))
    return "\n".join([
        f"## Results ({machine['date_utc']}, {report['mode']} run)",
        "",
        f"- Command: `{report['command']}` (from the repository root)",
        f"- Machine: {machine['nproc']} CPUs ({machine['cpu']}), {machine['kernel']}, "
        f"{machine['python']}, {machine['rg']}, corpus on {fs['type']} "
        f"({fs['mount_point']}), page cache warm",
        f"- Load average (1/5/15 min) at start {_load(machine.get('load_average_start'))}, at "
        f"end {_load(machine.get('load_average'))}; Python speed yardstick "
        f"(1M-step loop) {machine.get('python_loop_1m_ms', '?')} ms",
        f"- Corpus: {corpus['documents']} documents, {corpus['total_bytes']:,} bytes "
        f"(budget 8,388,608), median {corpus['median_bytes']:,} B, min "
        f"{corpus['min_bytes']:,} B, max {corpus['max_bytes']:,} B, "
        f"{corpus['chinese_documents']} mostly Chinese, {corpus['front_matter_documents']} "
        f"with front matter, {corpus['directories']} directories, seed {corpus['seed']}",
        f"- Repetitions: cold {any_shape['cold']['n']}, warm repeated "
        f"{any_shape['warm_repeated']['n']}, warm new terms {any_shape['warm_new_terms']['n']}, "
        f"rg {any_shape.get('rg', {}).get('n', 0)}, writes {report['writes']['runs']} per "
        "variant, each after an untimed warm-up",
        "",
        "### Search latency (ms, p50 / p90)",
        "",
        search_table(report, True),
        "",
        "cold/py is our cold p50 over the bare-Python floor's p50; the other ratios are "
        "our p50 over `rg` p50 (rg with its default threads). " + FLOOR_RATIONALE,
        "",
        "Floor command, e.g. for the 8-term query:",
        "",
        "```",
        search.get("8 terms", any_shape).get("rg_argv", "rg not found"),
        "```",
        "",
        "Queries (band, documents containing the term):",
        "",
        queries_list(report, True),
        "",
        "### Writes (ms, p50 / p90)",
        "",
        write_table(report, True),
        "",
        "`upsert` passes `str` content (what the Hub passes after JSON decoding; the "
        "target uses it), `upsert (bytes)` the same content pre-encoded (the store then "
        "only checks it is valid UTF-8). `encode / UTF-8 check` times `str.encode` and that "
        "check alone, in µs per call; `secret guard` times the guard's scan of the same "
        "content alone (issue 7: every write is scanned for credentials).",
        "",
        "### CJK recall",
        "",
        recall_table(report, True),
        "",
        "### Hub and CLI",
        "",
        hub_table(report, True),
        "",
        "A real Hub process serves the corpus; CLI rows are whole processes through the "
        "installed `amux`, interleaved with their floors: the default path (the local "
        "default connection of `AMUX_HOME`, no `AMUX_*` variable, as the README runs it; the "
        "request is tried first, the Hub started only when nothing answers), the same with "
        "`AMUX_HUB` + `AMUX_TOKEN`, and `show` in a fresh home whose Hub it starts on demand "
        "(stopped after each); rates come from 8 keep-alive connections driven by one "
        "asyncio load-generator process replaying pre-built requests.",
        "",
        "### MCP",
        "",
        mcp_table(report, True),
        "",
        f"Round trips: {report['mcp']['calls']} calls each inside one `amux memory mcp` "
        "session (a minimal JSON-RPC client over pipes), interleaved call by call with the "
        "same request to the Hub's HTTP API over one persistent connection; `get 64 KiB` "
        f"reads the first page of `{report['mcp']['large_document']}`. Starts are new "
        "processes: initialize, initialized, tools/list, with the start-up capability "
        "check against the Hub.",
        "",
        "### Launch",
        "",
        launch_table(report, True),
        "",
        f"A trivial agent (`#!/bin/sh` + `exit 0`), {report['launch']['runs']} runs each way, "
        "interleaved: directly, through `amux run` named `pi` (the memory path: binding "
        "resolution, delegated token, run directory, session state, plan, supervision, "
        "revocation and cleanup), under another name (the fallback adapter) and, run as "
        "root, as a throwaway Unix user (`--as-user`: grant over the shared socket, run "
        "directory with the client copy, spawn as that user, revocation, cleanup).",
        "",
        *_agent_launch_markdown_sections(report),
        "### Context",
        "",
        context_table(report, True),
        "",
        "### Targets",
        "",
        targets_table(report, True),
        "",
        DERIVED_NOTE,
        "",
    ])


# -- real agents through `amux run` (issue 12) ------------------------------------------------

_ARM_LABELS = {"bare": "bare agent", "amux": "amux run", "isolated": "amux run --as-user"}


def agent_launch_targets(agent_launch: dict[str, Any]) -> list[dict[str, Any]]:
    """B − A ≤ 100 ms per agent, C − B ≤ 50 ms: the paired median of the time outside the
    agent (the launcher's share), where the rounds split it off; met when that is within
    the target and the whole runs' paired median is not above it beyond its confidence
    interval (so a launch that slowed the agent itself would miss too)."""
    if "agents" not in agent_launch:
        return []
    rows = []
    for name, row in agent_launch["agents"].items():
        for key, label, target, low, high in (
                ("amux_minus_bare", "`amux run` launch overhead", AGENT_LAUNCH_TARGET_MS,
                 "bare", "amux"),
                ("isolated_minus_amux", "isolated launch overhead over `amux run`",
                 AGENT_ISOLATED_TARGET_MS, "amux", "isolated")):
            diff = row.get(key)
            if diff is None or diff["paired_p50_ms"] is None:
                continue
            failed = sum(len(row.get("failures", {}).get(arm, [])) for arm in (low, high))
            warned = [arm for arm in (low, high) if row.get("amux_warnings", {}).get(arm)]
            whole = (f"whole runs {diff['paired_p50_ms']:+.1f} ms per round"
                     + (" (95% CI {:+.1f} … {:+.1f})".format(*diff["paired_ci95_ms"])
                        if diff.get("paired_ci95_ms") else "")
                     + f", medians {row[high]['p50_ms']:.1f} vs {row[low]['p50_ms']:.1f} ms")
            outside = diff.get("outside_agent", {}).get("paired_p50_ms")
            if outside is None:
                measured, met = whole, diff["paired_p50_ms"] <= target
            else:
                agent = diff["agent_itself"]
                measured = (f"{outside:+.1f} ms outside the agent per round; the agent "
                            f"itself {agent['paired_p50_ms']:+.1f} ms; {whole}")
                met = outside <= target and diff["paired_ci95_ms"][0] <= target
            rows.append({
                "target": f"{label}, {name}: median extra ≤ {target:g} ms",
                "measured": measured
                            + (f"; {failed} runs failed their check" if failed else "")
                            + (f"; amux warned in {', '.join(warned)}" if warned else ""),
                "met": met and not failed,
            })
    return rows


def agent_launch_table(agent_launch: dict[str, Any], markdown: bool) -> str:
    arms = agent_launch["arms"]
    header = ["agent", *(f"{_ARM_LABELS[arm]} p50/p90" for arm in arms),
              "amux − bare (whole runs: paired / medians)"]
    if "isolated" in arms:
        header.append("isolated − amux (whole runs: paired / medians)")
    rows = []
    for name, row in agent_launch["agents"].items():
        cells = [f"{name} {row.get('version', '')}".strip(), *(_ms(row[arm]) for arm in arms)]
        for key in ("amux_minus_bare", "isolated_minus_amux"):
            if key in row:
                diff = row[key]
                outside = diff.get("outside_agent", {}).get("paired_p50_ms")
                cells.append((f"{outside:+.1f} outside the agent; " if outside is not None
                              else "") + f"{diff['paired_p50_ms']:+.1f} / "
                             f"{diff['of_medians_ms']:+.1f}")
        rows.append(cells)
    return _table(header, rows, markdown)


def _profile_rows(profiles: dict[str, Any], names: list[str], arm: str) -> list[list[str]]:
    """One row per measured quantity, one column per agent (ms, medians)."""
    entries = {name: profiles[name][arm] for name in names if arm in profiles.get(name, {})}
    if not entries:
        return []
    def cell(value: object) -> str:
        return "-" if value is None else f"{value:.1f}" if isinstance(value, float) \
            else str(value)

    compared = "B − A" if arm == "amux" else "C − B"
    quantities = [
        ("process_ms", "whole launch (profiled process)"),
        ("agent_supervised_ms", "the agent itself (supervised)"),
        ("launcher_ms", "= the launcher's share (process − agent)"),
    ]
    if arm == "isolated":
        quantities.append(("launcher_extra_ms", "  its share − `amux run`'s share"))
    quantities += [
        ("measured_extra_ms", f"  measured in the rounds: {compared}, paired p50"),
        ("python_start_and_exit_ms", "python start + exit (outside main)"),
        ("imports_ms", "imports: amux.cli, amux.launcher.run"),
    ]
    rows = [[label, *(cell(entries[n].get(key)) for n in entries)]
            for key, label in quantities]
    cells: dict[str, dict[str, str]] = {}  # step path → agent → "ms ×calls"
    weight: dict[str, float] = {}
    for name, entry in entries.items():
        for step in entry["steps"]:
            if step["step"] == "AGENT (supervised)" or step["depth"] > 2 or step["ms"] < 0.05:
                continue
            calls = f" ×{step['calls']:g}" if step["calls"] != 1 else ""
            cells.setdefault(step["path"], {})[name] = f"{step['ms']:.1f}{calls}"
            weight[step["path"]] = max(weight.get(step["path"], 0.0), step["ms"])

    def below(parent: str) -> list[str]:
        children = [p for p in cells if (p.rpartition(" / ")[0] if " / " in p else "") == parent]
        ordered: list[str] = []
        for path in sorted(children, key=lambda p: -weight[p]):
            ordered += [path, *below(path)]
        return ordered

    for path in below(""):
        depth = path.count(" / ")
        rows.append([("  " * depth) + ("└ " if depth else "") + path.rpartition(" / ")[2],
                     *(cells[path].get(n, "-") for n in entries)])
    rows.append(["glue (parsing, the rest of main)",
                 *(cell(entries[n].get("glue_ms")) for n in entries)])
    hub: dict[str, dict[str, str]] = {}
    for name, entry in entries.items():
        for call in entry["hub_calls"]:
            hub.setdefault(call["path"], {})[name] = f"{call['ms']:.1f} ×{call['calls']:g}"
    for path, by_agent in hub.items():
        rows.append([f"Hub: {path}", *(by_agent.get(n, "-") for n in entries)])
    return rows


def agent_profile_tables(agent_launch: dict[str, Any], markdown: bool) -> list[str]:
    profiles = agent_launch.get("profile")
    if not profiles:
        return []
    names = [name for name in agent_launch["agents"] if name in profiles]
    tables = []
    for arm, title in (("amux", "`amux run`"), ("isolated", "`amux run --as-user`")):
        rows = _profile_rows(profiles, names, arm)
        if rows:
            present = [n for n in names if arm in profiles[n]]
            tables.append(f"{title}, ms (medians of {profiles[present[0]][arm]['runs']} "
                          "instrumented launches)\n\n" if markdown else
                          f"{title}, ms (medians of instrumented launches)\n")
            tables[-1] += _table(["step", *present], rows, markdown, numeric=False)
    def imports(name: str) -> str:
        found = profiles[name].get("imports", {})
        groups = ", ".join(f"{group} {ms:.0f}" for group, ms in
                           found.get("self_ms_by_group", {}).items() if ms >= 0.5)
        largest = ", ".join(f"{row['module']} {row['cumulative_ms']:.0f}"
                            for row in found.get("largest", [])[:4])
        return f"{groups}; largest: {largest}"

    rows = [[name, f"{profiles[name]['dry_run_ms']:.1f}",
             f"{profiles[name]['agent_version_uncached_ms']:.1f}", imports(name)]
            for name in names]
    tables.append(("processes, ms\n\n" if markdown else "processes, ms\n")
                  + _table(["agent", "`amux run --dry-run`", "`AGENT --version` (uncached)",
                            "imports of a launch (`-X importtime`): self ms by group; "
                            "largest cumulative"], rows, markdown, numeric=False))
    tables.append(f"`python -c pass`: {profiles['python_c_pass_ms']:.1f} ms")
    return tables


def _agent_launch_note(agent_launch: dict[str, Any]) -> str:
    arms = ", ".join(_ARM_LABELS[arm] for arm in agent_launch["arms"])
    return (f"One-turn non-interactive runs ({agent_launch['rounds']} rounds after "
            f"{agent_launch['warmup_rounds']} warm-up, interleaved {arms} per agent; "
            f"{agent_launch['rounds_seconds']:g} s) against the loopback mock model answering "
            f"`{agent_launch['answer']}` with no tool call. The bare agent gets exactly the "
            "argv and environment of `amux run --dry-run`, with a run directory of its own "
            "made once (a connection config with a token delegated for the same binding, "
            "`bin/amux`; the plan's files with their texts and Gemini's home mirror) so its "
            "MCP server reaches the same Hub; only the agent's session name is new per run, "
            "as in every amux launch. Every run must print the answer and send the model the "
            "memory tools (the MCP agents) or the CLI protocol (Pi). A run of OpenCode or "
            "Gemini CLI takes seconds and varies by hundreds of milliseconds, so their "
            "paired difference needs many rounds; the profile's launcher share does not. "
            "Paired = median of the per-round differences "
            "(the verdict); medians = difference of the two medians. The isolated agent runs "
            "as another user with its own home and config, so C − B also holds the agent's "
            "own differences; the profile's \"its share − `amux run`'s share\" is the "
            "launcher's part alone. The profile runs the same launches in one process with "
            "wall-clock timers around the launcher's steps and Hub calls "
            "(benchmarks/launch_profile.py); steps under 0.05 ms are left out.")


def _agent_launch_text_sections(report: dict[str, Any]) -> list[str]:
    agent_launch = report.get("agent_launch")
    if not agent_launch:
        return []
    if "skipped" in agent_launch:
        return [f"agent launch: skipped ({agent_launch['skipped']})"]
    return ["agent launch (real CLIs, mock model), ms\n"
            + agent_launch_table(agent_launch, False),
            *agent_profile_tables(agent_launch, False)]


def _agent_launch_markdown_sections(report: dict[str, Any]) -> list[str]:
    agent_launch = report.get("agent_launch")
    if not agent_launch:
        return []
    if "skipped" in agent_launch:
        return ["### Launch of the real agents", "", f"Skipped: {agent_launch['skipped']}.", ""]
    lines = ["### Launch of the real agents", "", agent_launch_table(agent_launch, True), "",
             _agent_launch_note(agent_launch), ""]
    for table in agent_profile_tables(agent_launch, True):
        lines += [table, ""]
    return lines


def agent_launch_text(whole: dict[str, Any]) -> str:
    """The standalone benchmark's terminal view."""
    return "\n\n".join([*_agent_launch_text_sections(whole),
                         "targets\n" + targets_table(whole, False)])


def agent_launch_markdown(whole: dict[str, Any]) -> str:
    machine = whole["machine"]
    return "\n".join([
        f"## Agent launch ({machine['date_utc']})", "",
        f"- Command: `{whole['command']}` (from the repository root)",
        f"- Machine: {machine['nproc']} CPUs ({machine['cpu']}), {machine['kernel']}, "
        f"{machine['python']}; load average at start {_load(machine.get('load_average_start'))}, "
        f"at end {_load(machine.get('load_average'))}; Python speed yardstick "
        f"{machine.get('python_loop_1m_ms', '?')} ms", "",
        *_agent_launch_markdown_sections(whole),
        "### Targets", "", targets_table(whole, True), ""])


def floor_table(heading: str, ms: dict[str, Any], rows: Sequence[tuple[str, str]],
                floor: str, floor_name: str) -> str:
    """A Markdown table of whole-process timings (`rows`: label, key of `ms`), each as a
    multiple of the floor `floor` measured in the same run."""
    base = ms[floor]["p50_ms"]
    lines = [heading, "", f"| what | p50 ms | p90 ms | × {floor_name} |", "|---|---:|---:|---:|"]
    lines += [f"| {label} | {ms[key]['p50_ms']:.0f} | {ms[key]['p90_ms']:.0f} | "
              f"{ms[key]['p50_ms'] / base:.1f} |" for label, key in rows]
    return "\n".join(lines)


def emit(result: dict[str, Any], json_path: Any, markdown: str | None) -> None:
    """Print a bench's result as JSON, or its table when `markdown` is given; also write the
    JSON to `json_path` when given."""
    text = json.dumps(result, indent=2)
    if json_path is not None:
        json_path.write_text(text + "\n")
    print(markdown if markdown is not None else text)
