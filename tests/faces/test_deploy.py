"""The deployment files (`deploy/`, docs/deploy.md) against tether itself, fast and without a
model: `compose.yaml` parses and its parts agree (servers, health checks, the proxy's address
and upstreams); every `tether` command line written in `compose.yaml`, the systemd units and
docs/deploy.md's `sh` blocks parses with tether's real CLI, options, values and callbacks
included, without running (a renamed or removed flag fails here); every `TETHER_*` variable
they set is one tether reads; the units pass `systemd-analyze verify` and the Caddyfile
`caddy validate`. Those two tools are skipped with the reason when missing, except in CI
(`CI=true`), where `scripts/ci/deploy.sh` installs them and a missing one fails."""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from tether.cli.main import app
from tether.config import VARIABLES

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = DEPLOY / "systemd"
DOC = ROOT / "docs" / "deploy.md"
SERVERS = ("tether-1", "tether-2")


def tool(name: str) -> str:
    """The path of `name`; skips the test without it (fails it in CI)."""
    found = shutil.which(name)
    if found is None:
        reason = f"{name} is not installed (scripts/ci/deploy.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason}; in CI it must be", pytrace=False)
        pytest.skip(reason)
    return found


# ---- parsing a command line with tether's own CLI ---------------------------------------


def _must_exist(command: Any) -> set[str]:
    """The option strings of `command` whose value must be an existing path."""
    names: set[str] = set()
    for param in command.params:
        info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
        if getattr(info, "exists", False):
            names.update(getattr(param, "opts", []))
    return names


def _existing(args: list[str], names: set[str], stand_in: Path) -> list[str]:
    """`args` with each value of an option in `names` replaced by `stand_in` (a file that
    exists: the deployment's own paths, /etc/tether/keys.toml, are not on this machine)."""
    out: list[str] = []
    replace_next = False
    for arg in args:
        if replace_next:
            out.append(str(stand_in))
            replace_next = False
        elif arg in names:
            out.append(arg)
            replace_next = True
        elif "=" in arg and arg.split("=", 1)[0] in names:
            out.append(f"{arg.split('=', 1)[0]}={stand_in}")
        else:
            out.append(arg)
    return out


def parse_tether(argv: list[str], stand_in: Path) -> dict[str, Any]:
    """Parse `tether ARGV` down to its command as `tether` would (types, ranges, callbacks
    such as --store's URL check), without running it; the command's parameters. A usage
    error raises (click's UsageError, BadParameter, NoSuchOption)."""
    command: Any = typer.main.get_command(app)
    args = _existing(list(argv), _must_exist(command), stand_in)
    ctx = command.make_context("tether", args)
    while hasattr(command, "resolve_command"):  # a group: find the subcommand
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        assert rest, f"no command in {argv}"
        name, command, rest = command.resolve_command(ctx, rest)
        rest = _existing(rest, _must_exist(command), stand_in)
        ctx = command.make_context(name, rest, parent=ctx)
    assert not ctx.args, f"unexpected arguments {ctx.args} in {argv}"
    return dict(ctx.params)


def tether_args(tokens: list[str]) -> list[str] | None:
    """The arguments after the `tether` executable in a shell command's tokens (`tether`,
    `.../bin/tether`; not `-u tether`, a user, nor `tether:local`, an image), else None."""
    for i, token in enumerate(tokens):
        if token != "tether" and not token.endswith("/bin/tether"):
            continue
        if i and tokens[i - 1] in ("-u", "-g", "-o", "--user", "--group", "--owner"):
            continue
        if i + 1 < len(tokens):
            return tokens[i + 1 :]
    return None


def doc_commands() -> list[list[str]]:
    """The `tether` command lines of docs/deploy.md's `sh` blocks (comments dropped, `\\`
    continuations joined, each part of `a && b` or `a; b` on its own)."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            tokens = shlex.split(line, comments=True)
            part: list[str] = []
            for token in [*tokens, "&&"]:
                if token in ("&&", "||", ";", "|"):
                    args = tether_args(part)
                    if args is not None:
                        found.append(args)
                    part = []
                else:
                    part.append(token)
    return found


def unit_commands(path: Path) -> list[list[str]]:
    """The `tether` command lines of a unit's Exec*= settings, instance %i as 8081."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip().startswith("Exec"):
            tokens = shlex.split(value.lstrip("-@:+!").replace("%i", "8081"))
            args = tether_args(tokens)
            if args is not None:
                found.append(args)
    return found


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    """An existing keys file to stand in for the deployment's."""
    keys = tmp_path / "keys.toml"
    keys.write_text("allow_anonymous = false\n", encoding="utf-8")
    return keys


def test_the_parser_refuses_a_flag_tether_does_not_have(stand_in: Path) -> None:
    usage_error = typer.BadParameter.__base__  # click's UsageError: every parse error is one
    assert usage_error is not None and usage_error.__name__ == "UsageError"
    assert parse_tether(["serve", "--port", "8081"], stand_in)["port"] == 8081
    assert parse_tether(["serve", "--workers", "2"], stand_in)["workers"] == 2
    for wrong in (["serve", "--threads", "2"], ["serve", "--workers", "0"], ["serve", "--port", "http"],
                  ["serve", "--store", "mysql://db/x"], ["ingest", "docs", "--ray", "auto"]):  # fmt: skip
        with pytest.raises(usage_error):
            parse_tether(wrong, stand_in)
    assert tether_args(shlex.split("sudo -u tether -H /opt/tether/venv/bin/tether audit")) == [
        "audit"
    ]


# ---- compose.yaml ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _command_flag(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_compose_has_the_parts_of_the_layout(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "ingest", *SERVERS, "proxy", "ray-head", "ray-worker"} <= set(services)
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    for name in SERVERS:
        server = services[name]
        assert server["command"][:2] == ["tether", "serve"]
        assert "/readyz" in " ".join(server["healthcheck"]["test"])
        assert server["depends_on"]["ingest"]["condition"] == "service_completed_successfully"
        assert server["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert server["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (DEPLOY / server["build"]["context"] / server["build"]["dockerfile"]).is_file()
    assert (DEPLOY / "Dockerfile.dockerignore").is_file()
    assert services["ingest"]["command"][:2] == ["tether", "ingest"]
    for name in ("ray-head", "ray-worker"):
        assert services[name]["profiles"] == ["ray"]


def test_the_servers_trust_the_proxy_and_the_proxy_knows_the_servers(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    proxy = services["proxy"]
    address = proxy["networks"]["tether"]["ipv4_address"]
    subnet = compose["networks"]["tether"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(address) in ipaddress.ip_network(subnet)
    upstreams = proxy["environment"]["TETHER_UPSTREAMS"].split()
    ports = set()
    for name in SERVERS:
        command = services[name]["command"]
        assert _command_flag(command, "--forwarded-allow-ips") == address
        assert _command_flag(command, "--host") == "0.0.0.0"
        ports.add(_command_flag(command, "--port"))
    assert sorted(upstreams) == sorted(f"{name}:{port}" for name in SERVERS for port in ports)
    assert proxy["volumes"][0].startswith("./Caddyfile:")


def test_every_tether_command_in_compose_parses(compose: dict[str, Any], stand_in: Path) -> None:
    commands = [s["command"] for s in compose["services"].values() if "command" in s]
    tethers = [c for c in commands if c[0] == "tether"]
    assert len(tethers) == len(SERVERS) + 1  # the servers and the ingest
    for command in tethers:
        parse_tether(command[1:], stand_in)
    serve = parse_tether(compose["services"]["tether-1"]["command"][1:], stand_in)
    assert serve["keys"] is not None and serve["rate"] > 0


def test_compose_sets_only_settings_tether_reads(compose: dict[str, Any]) -> None:
    from tether.stores.postgres_db import parse_url

    for name, service in compose["services"].items():
        environment = service.get("environment") or {}
        for variable in environment:
            if variable.startswith("TETHER_") and variable not in ("TETHER_SITE",
                                                                   "TETHER_UPSTREAMS"):  # fmt: skip
                assert variable in VARIABLES, f"{name}: {variable} is not a tether setting"
        if "TETHER_STORE" in environment:
            assert parse_url(environment["TETHER_STORE"])[1] == "docs"


# ---- systemd -----------------------------------------------------------------------------


def test_every_tether_command_in_the_units_parses(stand_in: Path) -> None:
    serve = unit_commands(UNITS / "tether-serve@.service")
    ingest = unit_commands(UNITS / "tether-ingest.service")
    sync = unit_commands(UNITS / "tether-sync.service")
    assert [c[0] for c in serve] == ["serve"] and [c[1] for c in ingest] == ["ingest"]
    assert sync and all("sync" in c for c in sync)
    for args in serve + ingest + sync:
        parse_tether(args, stand_in)
    params = parse_tether(serve[0], stand_in)
    assert params["port"] == 8081 and params["forwarded_allow_ips"] == "127.0.0.1"


def test_the_environment_file_sets_only_settings_tether_reads() -> None:
    text = (UNITS / "tether.env").read_text(encoding="utf-8")
    names = re.findall(r"^#? ?(TETHER_[A-Z_]+)=", text, re.M)
    assert "TETHER_STORE" in names
    assert [n for n in names if n not in VARIABLES] == []


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = tool("systemd-analyze")
    executable = shutil.which("tether") or str(Path(sys.executable).with_name("tether"))
    names = {"tether-serve@.service": "tether-serve@8081.service"}
    copies = []
    for unit in ("tether-serve@.service", "tether-ingest.service", "tether-ingest.timer",
                 "tether-sync.service", "tether-sync.timer"):  # fmt: skip
        text = (UNITS / unit).read_text(encoding="utf-8")
        # the units name /opt/tether/venv/bin/tether; verify checks that it is executable
        copy = tmp_path / names.get(unit, unit)
        copy.write_text(text.replace("/opt/tether/venv/bin/tether", executable), "utf-8")
        copies.append(str(copy))
    done = subprocess.run([analyze, "verify", *copies], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


# ---- Caddy -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "site, upstreams",
    [(None, None), ("tether.example.com", "tether-1:8080 tether-2:8080")],
    ids=["systemd defaults", "compose"],
)
def test_the_caddyfile_is_valid(tmp_path: Path, site: str | None, upstreams: str | None) -> None:
    caddy = tool("caddy")
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_SITE", "TETHER_UPSTREAMS")}
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))
    if site:
        env["TETHER_SITE"] = site
    if upstreams:
        env["TETHER_UPSTREAMS"] = upstreams
    done = subprocess.run(
        [caddy, "validate", "--config", str(DEPLOY / "Caddyfile"), "--adapter", "caddyfile"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    adapted = subprocess.run(
        [caddy, "adapt", "--config", str(DEPLOY / "Caddyfile"), "--adapter", "caddyfile"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert adapted.returncode == 0, adapted.stderr
    assert '"uri":"/readyz"' in adapted.stdout.replace(" ", "")
    for upstream in (upstreams or "127.0.0.1:8081 127.0.0.1:8082").split():
        assert f'"dial":"{upstream}"' in adapted.stdout.replace(" ", "")


# ---- docs/deploy.md ----------------------------------------------------------------------


def test_every_tether_command_in_the_deploy_doc_parses(stand_in: Path) -> None:
    commands = doc_commands()
    kinds = {args[0] for args in commands}
    assert {"keys", "ingest"} <= kinds, commands
    for args in commands:
        parse_tether(args, stand_in)


def test_the_deploy_doc_names_only_settings_tether_reads() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`(TETHER_[A-Z_]+)", text)) - {"TETHER_SITE", "TETHER_UPSTREAMS"}
    assert named and sorted(named - set(VARIABLES)) == []


def test_the_deploy_doc_is_linked_and_points_only_inside_the_project() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "../shared" not in text
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")):
            assert (DOC.parent / target).resolve().exists(), target
    assert "deploy.md" in (ROOT / "docs" / "serve.md").read_text(encoding="utf-8")
    assert "docs/deploy.md" in (ROOT / "README.md").read_text(encoding="utf-8")
