"""The harness's Hypothesis settings profiles, registered on demand.

``harness-ci`` is what this project's CI runs (the same bounded examples every time, no timing
flakes, no example database to carry around); ``harness-deep`` is a long search for new failures.
``register()`` adds both to Hypothesis. Nothing is registered or loaded on import: the pytest
plugin registers them only when a session asks for a profile (``--harness-profile``, the
``harness_profile`` ini option, or ``harness_ci_profile`` with ``CI`` set), so a project that never
asks keeps Hypothesis exactly as it configured it. A conftest that wants to load one itself calls
``register()`` first.

``example_database(url)`` builds the Hypothesis example database a team shares between machines
(``redis://host:port/db`` for Hypothesis' ``RedisExampleDatabase``, or a directory), optionally
read-only for CI (``MultiplexedDatabase`` of a local directory and a ``ReadOnlyDatabase`` of the
shared one), and ``use_database`` loads it on top of the active profile. The pytest plugin calls
both when ``HARNESS_EXAMPLE_DB`` / ``harness_example_db`` / ``--harness-example-db`` is set; see
docs/distributed-campaigns.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Hypothesis is imported only when a database is built
    from hypothesis.database import ExampleDatabase

CI_PROFILE = "harness-ci"
DEEP_PROFILE = "harness-deep"
CI_EXAMPLES = 50
DEEP_EXAMPLES = 5_000


def register() -> None:
    """Register ``harness-ci`` and ``harness-deep`` with Hypothesis (again is harmless)."""
    from hypothesis import settings

    # parented on Hypothesis' plain "default" profile, not on whatever is active at import (under
    # CI Hypothesis activates its own "ci" profile first), so each profile means the same everywhere
    default = settings.get_profile("default")
    settings.register_profile(
        CI_PROFILE, default, derandomize=True, max_examples=CI_EXAMPLES, deadline=None, database=None, print_blob=True
    )
    settings.register_profile(DEEP_PROFILE, default, max_examples=DEEP_EXAMPLES, deadline=None, print_blob=True)


DB_ENV_VAR = "HARNESS_EXAMPLE_DB"
DB_READ_ONLY_ENV_VAR = "HARNESS_EXAMPLE_DB_READONLY"
DB_PROFILE = "harness-example-db"
LOCAL_DB_DIR = Path(".hypothesis") / "examples"  # where Hypothesis keeps its own database by default
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_FORMS = "redis://HOST:PORT/DB, rediss://..., unix:///path.sock, a directory (dir:PATH or a path), or none"


class ExampleDatabaseError(ValueError):
    """An example database URL that cannot be used: its message says what to write instead."""


def example_database(
    url: str,
    *,
    read_only: bool = False,
    local: str | os.PathLike[str] | None = LOCAL_DB_DIR,
    check: bool = True,
) -> ExampleDatabase | None:
    """The Hypothesis example database ``url`` names, built with Hypothesis' own classes.

    A shared database is what makes a failure found on one machine the first example every other
    machine tries. ``read_only`` is for CI: the shared database is only read (a
    ``ReadOnlyDatabase``), and what this run finds goes to ``local`` (a directory database, by
    default Hypothesis' usual ``.hypothesis/examples``) through a ``MultiplexedDatabase``, so a run
    still replays its own failures but never writes to the team's. ``check`` pings a Redis server
    now, so a wrong address is one clear error instead of a failure inside every test.
    ``none`` (or an empty string) means no database at all.

    The same arguments give the same database object for the life of the process: a runner that
    starts pytest twice in one process (HypoFuzz collects, then fuzzes) finds the tests' database
    equal to the profile's, and one connection pool serves every session.
    """
    key = (url, read_only, None if local is None else str(local))
    if key not in _BUILT:
        _BUILT[key] = _build(url, read_only, local, check)
    return _BUILT[key]


_BUILT: dict[tuple[str, bool, str | None], ExampleDatabase | None] = {}


def _build(url: str, read_only: bool, local: str | os.PathLike[str] | None, check: bool) -> ExampleDatabase | None:
    from hypothesis.database import DirectoryBasedExampleDatabase, MultiplexedDatabase, ReadOnlyDatabase

    text = url.strip()
    if text.lower() in ("", "none", "off"):
        return None
    shared: ExampleDatabase
    if text.startswith(_REDIS_SCHEMES):
        shared = _redis_database(text, check)
    elif "://" in text:
        raise ExampleDatabaseError(f"example database {url!r}: unknown scheme; use {_FORMS}")
    else:
        shared = DirectoryBasedExampleDatabase(text.removeprefix("dir:"))
    if not read_only:
        return shared
    if local is None:
        return ReadOnlyDatabase(shared)
    return MultiplexedDatabase(DirectoryBasedExampleDatabase(local), ReadOnlyDatabase(shared))


def _redis_database(url: str, check: bool) -> ExampleDatabase:
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise ExampleDatabaseError(
            f'example database {url!r} needs the redis package: pip install -e ".[distributed]" from the checkout'
        ) from None
    client = redis.Redis.from_url(url, socket_connect_timeout=5)
    if check:
        try:
            client.ping()
        except redis.RedisError as exc:
            raise ExampleDatabaseError(f"example database {url!r}: cannot reach the Redis server ({exc})") from None
    return RedisExampleDatabase(client)


def use_database(database: ExampleDatabase | None, base: str | None = None) -> str:
    """Load the profile ``base`` (default: the active one) with ``database`` as its example
    database, registered as ``harness-example-db``; returns that name.

    The other settings stay the base profile's, derandomization included: under ``harness-ci`` the
    saved failures are tried first, then the same derandomized examples as always. (Hypothesis
    refuses ``derandomize=True`` and a database given together, because a derandomized run finds
    its own failures again anyway; inheriting the flag from the parent is how a derandomized run
    still replays the failures other machines found.)
    """
    from hypothesis import settings

    parent = settings.get_profile(base or settings.get_current_profile_name())
    settings.register_profile(DB_PROFILE, parent, database=database)
    settings.load_profile(DB_PROFILE)
    return DB_PROFILE
