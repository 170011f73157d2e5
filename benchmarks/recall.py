"""CJK recall: every document rg finds for a Chinese term, the store must match too.

Search results are capped at 20 documents, so a full-scope query cannot show
recall on its own. Instead three independent answers are compared per term:

1. ripgrep: `rg -F -i -l -e TERM DIR` (files whose content contains the term);
2. a pure-Python scan: `TERM.encode().lower() in data.lower()` per file;
3. the store, per document: `store.search(term, path_prefix=<that document>)`,
   which runs the store's own per-document check on exactly one file. A result
   with hits is a content match; a result without hits matched the path only.

Plus a full-scope search with `limit=20`: its results must be true matches,
as many as exist up to 20, and never `incomplete`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from amux.memory import GLOBAL, Store
from benchmarks.timing import run_process


def rg_files(rg: str, term: str, scope_dir: Path) -> set[str]:
    """Logical paths of the files whose content rg says contains `term`."""
    argv = [rg, "--no-config", "--no-ignore", "-F", "-i", "-l", "-e", term, str(scope_dir)]
    _seconds, done = run_process(argv)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"rg failed ({done.returncode}): {done.stderr.decode()[:500]}")
    return {
        Path(os.path.relpath(os.fsdecode(line), scope_dir)).as_posix()
        for line in done.stdout.splitlines()
    }


def check_term(store: Store, scope_dir: Path, documents: list[tuple[str, bytes]], term: str,
               rg: str | None) -> dict[str, Any]:
    """Compare rg, a Python scan and the store's per-document check for one term."""
    needle = term.encode().lower()
    python_set = {path for path, folded in documents if needle in folded}
    path_set = {path for path, _ in documents if needle in path.encode().lower()}
    store_content: set[str] = set()
    store_path_only: set[str] = set()
    for path, _ in documents:
        response = store.search(GLOBAL, term, path_prefix=path, limit=1)
        for result in response["results"]:
            (store_content if result["hits"] else store_path_only).add(result["path"])
    rg_set = rg_files(rg, term, scope_dir) if rg is not None else python_set
    full = store.search(GLOBAL, term, limit=20)
    full_paths = {result["path"] for result in full["results"]}
    expected = min(20, len(python_set | path_set))
    full_ok = (not full["incomplete"] and full_paths <= (python_set | path_set)
               and len(full_paths) == expected)
    return {
        "term": term,
        "documents": len(python_set),
        "rg_files": len(rg_set),
        "store_content_matches": len(store_content),
        "store_path_only_matches": len(store_path_only),
        "missed_by_store": sorted(rg_set - store_content)[:10],
        "extra_in_store": sorted(store_content - rg_set)[:10],
        "python_equals_rg": python_set == rg_set,
        "full_scope_ok": full_ok,
        "full_scope_results": len(full_paths),
        "full_scope_incomplete": full["incomplete"],
        "no_recall_loss": rg_set <= store_content and python_set <= store_content,
    }


def check_recall(root: Path, scope_dir: Path, documents: list[tuple[str, bytes]],
                 terms: list[str], rg: str | None) -> dict[str, Any]:
    """Per-term comparison for all `terms`; `documents` are (path, ASCII-folded bytes)."""
    store = Store(root)
    try:
        rows = [check_term(store, scope_dir, documents, term, rg) for term in terms]
    finally:
        store.close()
    return {
        "method": "rg -F -i -l vs Python substring scan vs store.search(path_prefix=<doc>) "
                  "for every document, plus one full-scope search with limit=20",
        "terms": rows,
        "all_ok": all(r["no_recall_loss"] and r["python_equals_rg"] and r["full_scope_ok"]
                      and not r["extra_in_store"] for r in rows),
    }
