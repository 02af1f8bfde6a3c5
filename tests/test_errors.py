"""rstore's exceptions are redis-py's too when redis-py is installed, and only rstore's without.

The expected class and message of each error line come from redis-py's own reply parser; the
oracle tests (``tests/oracle/test_redispy_client.py``) compare whole calls with redis-py on
valkey-server.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rstore

LINES = [
    "ERR no such key",
    "ERR The ID specified in XADD is equal or smaller than the target stream top item",
    "WRONGTYPE Operation against a key holding the wrong kind of value",
    "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option",
    "BUSYGROUP Consumer Group name already exists",
    "BUSYKEY Target key name already exists.",
    "READONLY You can't write against a read only replica.",
    "EXECABORT Transaction discarded because of previous errors.",
    "NOSCRIPT No matching script.",
    "OOM command not allowed when used memory > 'maxmemory'.",
]


@pytest.mark.parametrize("line", LINES)
def test_a_refusal_is_the_error_redis_py_raises_for_its_line(line: str) -> None:
    redis = pytest.importorskip("redis")
    from redis._parsers.base import BaseParser

    expected = BaseParser.parse_error(line)  # what redis-py raises for this reply
    err = rstore.ResponseError(line)
    assert isinstance(err, type(expected)) and isinstance(err, rstore.ResponseError)
    assert isinstance(err, redis.exceptions.ResponseError)
    assert str(err) == str(expected) and err.args == expected.args
    assert err.status_code == getattr(expected, "status_code", None)
    assert err.line == line and err.prefix == line.split(maxsplit=1)[0]


def test_client_side_and_storage_errors_are_redis_pys(tmp_path: Path) -> None:
    redis = pytest.importorskip("redis")
    store = rstore.Store(tmp_path / "store", sync=False)
    with pytest.raises(redis.exceptions.DataError) as data_error:
        store.xadd("s", {})
    assert isinstance(data_error.value, rstore.DataError)
    assert str(data_error.value) == "XADD fields must be a non-empty dict"
    store.close()
    with pytest.raises(redis.exceptions.ConnectionError) as closed:
        store.xlen("s")
    assert isinstance(closed.value, rstore.StoreClosedError)
    with pytest.raises(redis.exceptions.ConnectionError) as missing:
        rstore.Store(tmp_path / "nowhere", create=False)
    assert isinstance(missing.value, rstore.StoreNotFoundError)
    assert not isinstance(rstore.CorruptDataError("bad"), redis.exceptions.RedisError)


def test_errors_survive_pickling_with_their_classes() -> None:
    err = rstore.ResponseError("ERR no such key")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert (back.line, str(back), back.status_code) == (err.line, str(err), err.status_code)
    closed = pickle.loads(pickle.dumps(rstore.StoreClosedError("closed")))
    assert isinstance(closed, rstore.StoreClosedError) and str(closed) == "closed"
    rdb = pickle.loads(pickle.dumps(rstore.CorruptRDBError("bad", 7, key=b"k")))
    assert (rdb.offset, rdb.key) == (7, b"k")


def test_repr_names_the_rstore_class() -> None:
    assert repr(rstore.ResponseError("ERR no such key")) == "ResponseError('no such key')"
    assert repr(rstore.StoreClosedError("closed")) == "StoreClosedError('closed')"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_import_rstore_does_not_import_redis_py(tmp_path: Path) -> None:
    """Only the first error imports redis-py (to make the errors redis-py's)."""
    result = _python(f"""
        import sys
        import rstore
        assert "redis" not in sys.modules
        with rstore.Store({str(tmp_path / "store")!r}, sync=False) as store:
            store.xadd("s", {{"f": "v"}})
            store.xrange("s")
            assert "redis" not in sys.modules
            try:
                store.xadd("s", {{"f": "v"}}, id="0-0")
            except rstore.ResponseError:
                pass
        print(sorted(name for name in ("redis",) if name in sys.modules))
    """)
    assert result.returncode == 0, result.stderr
    installed = _python("import redis").returncode == 0
    assert result.stdout.strip() == ("['redis']" if installed else "[]")


def test_without_redis_py_the_errors_are_rstores_alone(tmp_path: Path) -> None:
    result = _python(f"""
        import pickle
        import sys
        sys.modules["redis"] = None  # redis-py cannot be imported
        import rstore
        with rstore.Store({str(tmp_path / "store")!r}, sync=False) as store:
            try:
                store.xadd("s", {{"f": "v"}}, id="0-0")
            except rstore.ResponseError as err:
                assert err.line == "ERR The ID specified in XADD must be greater than 0-0"
                assert str(err) == "The ID specified in XADD must be greater than 0-0"
                mro = type(err).__mro__
                assert mro[:3] == (rstore.ResponseError, rstore.RStoreError, Exception), mro
                assert pickle.loads(pickle.dumps(err)).line == err.line
            try:
                store.xadd("s", {{}})
            except rstore.DataError as err:
                assert type(err) is rstore.DataError
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
