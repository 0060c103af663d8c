"""Bad filters fail at compile time with a clear lance_duck error naming the problem."""
from __future__ import annotations

import pyarrow as pa
import pytest

from lance_duck.errors import InvalidArgumentError, LanceDuckError, UnsupportedFeatureError
from lance_duck.predicate import compile_filter

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("d", pa.date32()),
                    ("s", pa.struct([("a", pa.int32())])), ("l", pa.list_(pa.int32()))])


def test_unknown_column_is_named():
    with pytest.raises(InvalidArgumentError, match="unknown column 'nope'.*available: id, name"):
        compile_filter("nope = 1", SCHEMA)


def test_unknown_nested_field_is_named_with_its_struct():
    with pytest.raises(InvalidArgumentError, match="unknown column 's.zz' in filter in struct 's'"):
        compile_filter("s.zz = 1", SCHEMA)


def test_field_of_a_non_struct_is_refused():
    with pytest.raises(InvalidArgumentError, match="not a struct"):
        compile_filter("id.x = 1", SCHEMA)


def test_string_literal_against_int_column_that_is_not_a_number():
    with pytest.raises(InvalidArgumentError, match="int64"):
        compile_filter("id = 'abc'", SCHEMA)


def test_number_against_string_column_is_a_type_error():
    with pytest.raises(InvalidArgumentError, match="string"):
        compile_filter("name = 5", SCHEMA)


def test_bad_date_literal_is_named():
    with pytest.raises(InvalidArgumentError, match="2024-13-45"):
        compile_filter("d = DATE '2024-13-45'", SCHEMA)


def test_syntax_error_quotes_the_filter():
    with pytest.raises(InvalidArgumentError, match="cannot parse filter 'id = = 3'"):
        compile_filter("id = = 3", SCHEMA)


def test_non_boolean_filter_is_refused():
    with pytest.raises(InvalidArgumentError, match="boolean"):
        compile_filter("id + 1", SCHEMA)


def test_like_on_a_number_is_refused():
    with pytest.raises(InvalidArgumentError, match="LIKE needs a string"):
        compile_filter("id LIKE '1%'", SCHEMA)


@pytest.mark.parametrize("sql", ["substr(name, 1, 2) = 'ab'", "id IN (SELECT 1)",
                                 "CASE WHEN id > 1 THEN true END"])
def test_unsupported_sql_raises_unsupported_feature(sql):
    with pytest.raises(UnsupportedFeatureError):
        compile_filter(sql, SCHEMA)


def test_filter_of_wrong_python_type_is_refused():
    with pytest.raises(LanceDuckError, match="SQL string or a pyarrow.compute.Expression"):
        compile_filter(42, SCHEMA)  # type: ignore[arg-type]


def test_pyarrow_expression_with_unknown_column_is_refused():
    import pyarrow.compute as pc
    with pytest.raises(InvalidArgumentError, match="nope"):
        compile_filter(pc.field("nope") == 1, SCHEMA)
