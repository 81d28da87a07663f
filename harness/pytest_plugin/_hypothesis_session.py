"""The session's Hypothesis settings: the profile it asked for and the shared example database.

Chosen by option, ini option or (opt-in) the ``CI`` environment variable, loaded when pytest
configures the plugin and put back as they were when it unconfigures, so a session that asks
for neither leaves Hypothesis exactly as the project configured it and never imports it.
``harness.campaigns._profiles`` registers the profiles and builds the database; this module is the
pytest side of them (``docs/distributed-campaigns.md``).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

import harness.campaigns._profiles as profiles
from harness.campaigns import CI_PROFILE, DEEP_PROFILE

_STATE = pytest.StashKey[dict[str, Any]]()


def add_profile_options(group: Any, parser: pytest.Parser) -> None:
    group.addoption(
        "--harness-profile",
        dest="harness_profile",
        default=None,
        metavar="NAME",
        help=(
            f"load this Hypothesis settings profile: {CI_PROFILE} (derandomized, {profiles.CI_EXAMPLES} examples, "
            f"no deadline, no database), {DEEP_PROFILE} ({profiles.DEEP_EXAMPLES} examples), or any registered "
            "profile. Default: the harness_profile ini option, else harness_ci_profile when the CI environment "
            "variable is set (and --hypothesis-profile is not given), else Hypothesis is left alone."
        ),
    )
    parser.addini("harness_profile", "Hypothesis profile to load (like --harness-profile)", default=None)
    parser.addini(
        "harness_ci_profile",
        f"Hypothesis profile to load when the CI environment variable is set (e.g. {CI_PROFILE}); "
        "opt-in: without it CI changes nothing",
        default=None,
    )


def add_database_options(group: Any, parser: pytest.Parser) -> None:
    """The shared example database (docs/distributed-campaigns.md)."""
    group.addoption(
        "--harness-example-db",
        dest="harness_example_db",
        default=None,
        metavar="URL",
        help=(
            "Hypothesis example database shared between machines, loaded on top of the active profile: "
            "redis://HOST:PORT/DB (needs the distributed extra), a directory, or none. Default: "
            f"${profiles.DB_ENV_VAR}, else the harness_example_db ini option"
        ),
    )
    group.addoption(
        "--harness-example-db-readonly",
        dest="harness_example_db_readonly",
        action="store_true",
        default=None,
        help=(
            "only read the shared example database (CI); this run's own failures go to .hypothesis/examples "
            f"(also ${profiles.DB_READ_ONLY_ENV_VAR}=1 or the harness_example_db_readonly ini option)"
        ),
    )
    parser.addini("harness_example_db", "shared Hypothesis example database (like --harness-example-db)", default=None)
    parser.addini("harness_example_db_readonly", "only read the shared example database", type="bool", default=False)


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("0", "false", "no", "off", "")


def _chosen_profile(config: pytest.Config) -> tuple[str | None, str]:
    explicit = config.getoption("harness_profile", None)
    if explicit:
        return explicit, "--harness-profile"
    ini = config.getini("harness_profile")
    if ini:
        return str(ini), "harness_profile ini option"
    ci = config.getini("harness_ci_profile")
    if ci and _truthy(os.environ.get("CI")) and not config.getoption("hypothesis_profile", None):
        return str(ci), "harness_ci_profile ini option, CI is set"
    return None, ""


def load_profile(config: pytest.Config) -> None:
    """Load the chosen profile, if the session chose one."""
    state: dict[str, Any] = {"profile": None, "source": "", "previous_profile": None}
    config.stash[_STATE] = state
    name, source = _chosen_profile(config)
    if not name:
        return
    # Hypothesis is imported only here, when the session asked for a profile
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    profiles.register()
    state["previous_profile"] = settings.get_current_profile_name()
    try:
        settings.get_profile(name)  # first: load_profile records an unknown name as current before refusing it
        settings.load_profile(name)
    except InvalidArgument:
        raise pytest.UsageError(
            f"{source}: no Hypothesis profile named {name!r}; the harness registers {CI_PROFILE!r} and "
            f"{DEEP_PROFILE!r} (register your own with hypothesis.settings.register_profile)"
        ) from None
    state["profile"], state["source"] = name, source


def load_example_database(config: pytest.Config) -> None:
    """Put the shared example database on top of the active profile (every xdist worker does the
    same, so they all read and write the one database)."""
    state = config.stash[_STATE]
    url, source = config.getoption("harness_example_db", None), "--harness-example-db"
    if url is None and os.environ.get(profiles.DB_ENV_VAR) is not None:
        url, source = os.environ[profiles.DB_ENV_VAR], profiles.DB_ENV_VAR
    if url is None and config.getini("harness_example_db"):
        url, source = str(config.getini("harness_example_db")), "harness_example_db ini option"
    if url is None:
        return
    read_only = bool(
        config.getoption("harness_example_db_readonly", None)
        or _truthy(os.environ.get(profiles.DB_READ_ONLY_ENV_VAR))
        or config.getini("harness_example_db_readonly")
    )
    from hypothesis import settings

    try:
        database = profiles.example_database(url, read_only=read_only)
    except profiles.ExampleDatabaseError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None
    if state.get("previous_profile") is None:
        state["previous_profile"] = settings.get_current_profile_name()
    profiles.use_database(database)
    state["database"] = f"{_without_password(url)}{' (read-only)' if read_only else ''} (from {source})"


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=f"***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")).geturl()


def restore(config: pytest.Config) -> None:
    """Put back the profile that was current before the session loaded its own."""
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    if (state.get("profile") or state.get("database")) and state.get("previous_profile"):
        from hypothesis import settings

        settings.load_profile(state["previous_profile"])


def profile_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, {})
    return [f"hypothesis profile {state['profile']!r} (from {state['source']})"] if state.get("profile") else []


def database_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, {})
    return [f"example database {state['database']}"] if state.get("database") else []
