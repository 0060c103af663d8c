"""Human-readable rendering of Arrow tables for the terminal (the CLI's output)."""
from __future__ import annotations


import pyarrow as pa

MAX_CELL = 40


def _cell(v: object) -> str:
    if v is None:
        return "NULL"
    s = v if isinstance(v, str) else repr(v) if isinstance(v, (bytes,)) else str(v)
    s = s.replace("\n", "\\n")
    return s if len(s) <= MAX_CELL else s[: MAX_CELL - 1] + "…"


def render_table(table: pa.Table, max_rows: int = 40) -> str:
    """A boxed text table with column names and types; long tables show head and tail."""
    n = table.num_rows
    if n > max_rows:
        head = table.slice(0, max_rows // 2).to_pylist()
        tail = table.slice(n - max_rows // 2).to_pylist()
        rows = head + [None] + tail
    else:
        rows = table.to_pylist()
    names = table.column_names
    header = [names, [str(t) for t in table.schema.types]]
    body = [[_cell(r[c]) for c in names] if r is not None else ["⋮"] * len(names) for r in rows]
    widths = [max([len(h[i]) for h in header] + [len(b[i]) for b in body] + [1]) for i in range(len(names))]

    def line(cells: list[str], right: list[bool] | None = None) -> str:
        out = []
        for i, c in enumerate(cells):
            numeric = right is not None and right[i]
            out.append(c.rjust(widths[i]) if numeric else c.ljust(widths[i]))
        return "│ " + " │ ".join(out) + " │"

    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
               for t in table.schema.types]

    def sep(l: str, m: str, r: str) -> str:  # noqa: E741
        return l + m.join("─" * (w + 2) for w in widths) + r

    parts = [sep("┌", "┬", "┐"), line(header[0]), line(header[1]), sep("├", "┼", "┤")]
    parts += [line(b, numeric) for b in body]
    parts.append(sep("└", "┴", "┘"))
    shown = f" (showing {max_rows})" if n > max_rows else ""
    parts.append(f"{n} row{'s' if n != 1 else ''}{shown}")
    return "\n".join(parts)
