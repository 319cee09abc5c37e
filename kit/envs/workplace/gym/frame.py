"""``Frame``: one table as NeMo-Gym's server holds it, a pandas DataFrame read with ``dtype=str``.

What a model can observe of such a table, and what NeMo-Gym's verify compares, is more than its cells:
the row order, the index labels (which an append without ``ignore_index`` repeats), and each column's
dtype (``str`` until a write stores a value that is not a string, then ``object``). A ``Frame`` keeps
all of it; it is immutable, so a copied state shares its frames until a write replaces one.

Cell-level semantics that pandas decides (regex matching, with RE2 or Python's ``re`` depending on the
pattern and the dtype; comparisons and their errors; assignment through ``.loc``; lower-casing) are left
to pandas itself, on a Series built with the column's dtype: the kit gets pandas' answers and errors,
word for word, without re-deriving them. A missing cell is NaN, as in pandas (``None`` where a tool
stored ``None``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

STR, OBJECT, BOOL, FLOAT = "str", "object", "bool", "float"


@cache
def pandas() -> Any:
    """The pandas module, imported on first use (the kit's own tool set never needs it)."""
    import pandas as pd

    if int(pd.__version__.split(".")[0]) < 3:
        raise ImportError(
            f"env.tool_messages=nemo_gym reproduces NeMo-Gym's pandas 3 string semantics; pandas "
            f"{pd.__version__} is installed. Install pandas>=3 or set env.tool_messages=kit."
        )
    return pd


def _string_dtype() -> Any:
    import numpy as np

    return pandas().StringDtype("pyarrow", na_value=np.nan)


def series(values: Sequence[Any], dtype: str) -> Any:
    """``values`` as a pandas Series of ``dtype``."""
    pd = pandas()
    if dtype == STR:
        return pd.Series(list(values), dtype=_string_dtype())
    return pd.Series(list(values), dtype={OBJECT: object, BOOL: bool, FLOAT: float}[dtype])


def is_missing(value: Any) -> bool:
    """Whether a cell value is pandas' missing value (None or NaN)."""
    return value is None or (isinstance(value, float) and value != value)


def plain(value: Any) -> Any:
    """A cell read back from pandas as the kit stores it: numpy scalars as Python ones."""
    return value.item() if hasattr(value, "item") and not isinstance(value, (list, dict, str)) else value


@contextmanager
def quiet() -> Iterator[None]:
    """A context in which pandas' warnings (a regex with groups, ...) stay out of the logs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def selected(mask: Any) -> list[bool]:
    """A boolean mask as ``frame[mask]`` reads it; raises pandas' own error for a mask that holds NA
    (what ``str.contains`` gives on an object column with missing or non-string cells)."""
    pd = pandas()
    positions = pd.Series(range(len(mask)), index=mask.index)[mask]
    kept = set(positions.tolist())
    return [i in kept for i in range(len(mask))]


@dataclass(frozen=True)
class Frame:
    """An immutable table: columns, rows (dicts), index labels and a dtype per column."""

    columns: tuple[str, ...]
    data: tuple[dict[str, Any], ...]
    labels: tuple[int, ...]
    dtypes: tuple[tuple[str, str], ...]
    # Columns already built as pandas Series (the frame never changes; pandas copies before it writes).
    _series: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, columns: Sequence[str], rows: Sequence[dict[str, Any]], dtype: str = STR) -> Frame:
        """A freshly read table: labels 0..n-1, every column of ``dtype``."""
        return cls(tuple(columns), tuple(rows), tuple(range(len(rows))), tuple((c, dtype) for c in columns))

    # ---- plain access

    def __len__(self) -> int:
        return len(self.data)

    def dtype(self, column: str) -> str:
        return dict(self.dtypes)[column]

    def column(self, name: str) -> list[Any]:
        return [row[name] for row in self.data]

    def series(self, name: str) -> Any:
        if name not in self._series:
            self._series[name] = series(self.column(name), self.dtype(name))
        return self._series[name]

    def records(self) -> list[dict[str, Any]]:
        """The rows as ``to_dict(orient="records")`` gives them (missing cells as None)."""
        return [dict(row) for row in self.data]

    # ---- what the kit's generic helpers (state_diff, snapshots) read from a table

    @property
    def id_column(self) -> str:
        return self.columns[0]

    def rows(self) -> Iterator[dict[str, Any]]:
        return iter(self.data)

    def get(self, row_id: Any) -> dict[str, Any] | None:
        return next((row for row in self.data if row[self.id_column] == row_id), None)

    def __contains__(self, row_id: object) -> bool:
        return self.get(row_id) is not None

    # ---- writes: each returns a new frame

    def keep(self, kept: Sequence[bool]) -> Frame:
        """The rows where ``kept`` is true, with their labels (a boolean filter)."""
        pairs = [(row, label) for row, label, k in zip(self.data, self.labels, kept, strict=True) if k]
        return Frame(self.columns, tuple(r for r, _ in pairs), tuple(la for _, la in pairs), self.dtypes)

    def appended(self, row: dict[str, Any], relabel: bool) -> Frame:
        """``pd.concat([frame, one_row_frame])``: with ``relabel`` (``ignore_index=True``) the labels
        become 0..n, else the new row is labelled 0. A column stays ``str`` only when the new cell is a
        string: a missing or other value makes it ``object``. ``row`` lists the cells in the order the
        tool builds its one-row frame: pandas fails on the first string UTF-8 cannot encode."""
        for value in row.values():
            if isinstance(value, str):
                value.encode("utf-8")
        dtypes = tuple(
            (c, STR if d == STR and isinstance(row.get(c), str) else OBJECT) for c, d in self.dtypes
        )
        new = {c: row.get(c) for c in self.columns}
        labels = tuple(range(len(self.data) + 1)) if relabel else (*self.labels, 0)
        return Frame(self.columns, (*self.data, new), labels, dtypes)

    def assigned(self, hits: Sequence[bool], column: str, value: Any) -> Frame:
        """``frame.loc[hits, column] = value``, done by pandas on the table itself so that its checks,
        errors and dtype changes are pandas' own."""
        pd = pandas()
        table = pd.DataFrame({c: self.series(c) for c in self.columns})
        table.index = pd.Index(self.labels)
        with quiet():
            table.loc[pd.Series(list(hits), index=table.index), column] = value
        result = table[column]
        dtype = STR if isinstance(result.dtype, pd.StringDtype) else OBJECT
        rows = tuple(
            {**row, column: plain(result.iat[i])} if hit else row
            for i, (row, hit) in enumerate(zip(self.data, hits, strict=True))
        )
        dtypes = tuple((c, dtype if c == column else d) for c, d in self.dtypes)
        return Frame(self.columns, rows, self.labels, dtypes)
