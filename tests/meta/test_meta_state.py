"""One owner of process state: only lance_duck/_state.py creates thread pools, module-level caches
and fork hooks; every other module asks it for them by name (``_state.pool`` / ``cache`` / ``memo``
/ ``slot``), so ``lance_duck.configure`` sizes and ``lance_duck.clear_caches`` empties all of them."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lance_duck"
OWNER = PACKAGE / "_state.py"

#: calls that create a pool or a fork hook, wherever they are
POOL_OR_HOOK = {"ThreadPoolExecutor", "ProcessPoolExecutor", "register_at_fork"}
#: decorators that keep results per process
MEMO_DECORATORS = {"lru_cache", "cache"}
#: constructors of containers that, kept in a module global, are a cache
CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "WeakKeyDictionary",
              "WeakValueDictionary", "WeakSet", "ByteLRU"}
#: module globals that are not caches, by (module, name): what DuckDB has registered per connection
#: (forgetting it would leak registrations), and the ring of scan errors a relation re-raises
NOT_CACHES = {
    ("integrations/duckdb/cache.py", "_registered"),
    ("integrations/duckdb/cache.py", "_recent"),   # the caller's variables and views of those (bounded)
    ("integrations/duckdb/error_ring.py", "_errors"),
    ("integrations/duckdb/namespaces.py", "_attached"),    # what each connection ATTACHed: state, not a cache
}


def _name(func: ast.expr) -> str:
    """``f`` of ``f(...)``, ``mod.f(...)`` and ``a.b.f(...)``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)   # empty: to be filled
    if not isinstance(value, ast.Call) or _name(value.func) not in CONTAINERS:
        return False
    return _name(value.func) not in ("dict", "list", "set") or not (value.args or value.keywords)


def state_made_outside_the_owner(source: str, rel: str) -> list[str]:
    """What module ``rel`` (path inside lance_duck) creates that only the owner may: pools, fork
    hooks, memo decorators anywhere; caches (empty containers, ByteLRUs) in module globals."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in POOL_OR_HOOK:
            found.append(f"{rel}:{node.lineno} {_name(node.func)}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if _name(d.func if isinstance(d, ast.Call) else d) in MEMO_DECORATORS:
                    found.append(f"{rel}:{d.lineno} @{_name(d.func if isinstance(d, ast.Call) else d)}")
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        for t in targets:
            if isinstance(t, ast.Name) and _is_container(value) and (rel, t.id) not in NOT_CACHES:
                found.append(f"{rel}:{node.lineno} {t.id}")
    return found


def test_only_the_owner_creates_pools_caches_and_fork_hooks():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == OWNER or "_proto" in path.parts:
            continue
        found += state_made_outside_the_owner(path.read_text(), path.relative_to(PACKAGE).as_posix())
    assert found == []


def test_the_owner_has_the_one_fork_hook():
    assert state_made_outside_the_owner(OWNER.read_text(), "_state.py").count(
        next(f for f in state_made_outside_the_owner(OWNER.read_text(), "_state.py") if "register_at_fork" in f)) == 1


def test_the_check_sees_module_caches_pools_hooks_and_memo_decorators():
    source = ("import functools, os, collections\nfrom concurrent.futures import ThreadPoolExecutor\n"
              "_MEMO = {}\n_SEEN: list[int] = []\n_LRU = collections.OrderedDict()\n"
              "TABLE = {'a': 1}\nSPECIAL = set('.^$')\n_BY_ID = dict()\n"
              "@functools.lru_cache(maxsize=8)\ndef f(x): return x\n"
              "def g():\n    local = {}\n    return ThreadPoolExecutor(2)\n"
              "os.register_at_fork(after_in_child=g)\n")
    got = [f.split(" ", 1)[1] for f in state_made_outside_the_owner(source, "m.py")]
    assert sorted(got) == sorted(["_MEMO", "_SEEN", "_LRU", "_BY_ID", "@lru_cache", "ThreadPoolExecutor", "register_at_fork"])
