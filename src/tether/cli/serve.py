"""Serving: `tether serve` (the HTTP API and the web page, run by uvicorn in one process or
`--workers N`), `tether keys add` (a key for the keys file, printed once) and `tether keys
revoke` (out of the file, and refused by every server on a PostgreSQL store).

What it cannot do: it parses and starts; the app is `tether.server.running.Plan`'s
(`tether.server.api.create_app`), what servers share is `tether.server.shared`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tether.cli.app import (
    DemoOpt,
    IndexOpt,
    StoreOpt,
    audience_option,
    err,
    shown,
    user_errors,
)

KeysOpt = Annotated[
    Path | None,
    typer.Option(
        "--keys",
        help="The keys file (TOML, or JSON by its .json name): named keys, stored as SHA-256"
        " digests, each with an audience. Without one, every caller is public.",
        exists=True,
        dir_okay=False,
    ),
]


def serve(
    index: IndexOpt = None,
    demo: DemoOpt = False,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=0, max=65535)] = 8080,
    keys: KeysOpt = None,
    allow_anonymous: Annotated[
        bool,
        typer.Option(
            "--allow-anonymous", help="Serve requests without a key as the public audience."
        ),
    ] = False,
    rate: Annotated[
        float,
        typer.Option(
            help="Requests a second per key (per client address without one); 0: no limit. On a"
            " PostgreSQL store every server on the collection shares it.",
            min=0,
        ),
    ] = 10.0,
    burst: Annotated[
        int | None,
        typer.Option(help="Requests a key may make at once (default: twice --rate).", min=1),
    ] = None,
    queue: Annotated[
        int, typer.Option(help="Questions that may wait for the model (503 beyond).", min=0)
    ] = 4,
    deadline: Annotated[
        float, typer.Option(help="Seconds a request may take (504 beyond).", min=1)
    ] = 60.0,
    anonymous_audit_per_day: Annotated[
        int,
        typer.Option(
            help="Anonymous answers recorded in the audit per client address a day (beyond:"
            " answered, counted as dropped); 0: no cap.",
            min=0,
        ),
    ] = 200,
    header_timeout: Annotated[
        float,
        typer.Option(help="Seconds a request's headers may take to arrive (408 beyond).", min=0.1),
    ] = 10.0,
    body_timeout: Annotated[
        float,
        typer.Option(help="Seconds a request's body may take to arrive (408 beyond).", min=0.1),
    ] = 30.0,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="An origin whose pages may call the API (repeat; default: none)."),
    ] = None,
    forwarded_allow_ips: Annotated[
        str | None,
        typer.Option(
            "--forwarded-allow-ips",
            help="Proxies whose X-Forwarded-For names the client (comma-separated addresses or"
            " networks, or *); default: none, the peer's address counts.",
        ),
    ] = None,
    docs: Annotated[
        bool,
        typer.Option("--docs", help="Serve Swagger UI at /docs (the browser loads it from a CDN)."),
    ] = False,
    store: StoreOpt = None,
    warm: Annotated[
        bool,
        typer.Option(
            "--warm/--no-warm",
            help="Load the models as the server starts (GET /readyz is 503 until they are"
            " loaded; questions asked meanwhile wait), not on the first question.",
        ),
    ] = True,
    workers: Annotated[
        int,
        typer.Option(
            help="Processes serving the port, each with its own models. On a PostgreSQL store"
            " they share rate limits, metrics and key revocations; on an index file each keeps"
            " its own.",
            min=1,
        ),
    ] = 1,
    readers: Annotated[
        int,
        typer.Option(
            help="Searches and lookups each process runs at once (threads, each with its own"
            " store connection); more wait in line.",
            min=1,
            max=64,
        ),
    ] = 4,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Keep the index current with the folder it was last ingested from, as `tether"
            " watch` does, beside the server: a saved change is searched without a restart.",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API (/v1, OpenAPI at /openapi.json) and the web page (/) over one index."""
    from tether.errors import TetherError
    from tether.extras import install_hint

    with user_errors():
        try:
            import uvicorn  # noqa: F401 (is the serve extra installed?)

            from tether.server.api import ServeConfig
        except ImportError as exc:  # `make demo` installs no server: say so in one line
            raise TetherError(
                f"tether serve needs the serve extra ({exc.name} is missing):"
                f" {install_hint('serve')}"
            ) from None
    from tether.cli.app import open_workspace
    from tether.server.keys import key_ring
    from tether.server.running import Plan, parse_forwarded_allow_ips, serve

    try:
        proxies = parse_forwarded_allow_ips(forwarded_allow_ips)
    except TetherError as exc:
        raise typer.BadParameter(str(exc), param_hint="--forwarded-allow-ips") from None
    with user_errors():
        port_free(host, port)
        opened = open_workspace(index, demo, store)  # the demo index is built when missing
        shown_at = opened.store.location  # opens it: a missing index is an error here
        # --store, else TETHER_STORE
        url = opened.location if isinstance(opened.location, str) else None
        path = opened.index if url is None else None
        opened.check_intact()  # every page read: a damaged index is refused here, not later
        if watch:
            from tether.cli.watch import watched_folder

            if demo:
                raise TetherError("--watch keeps an index of your own folder current, not --demo")
            folder = watched_folder(opened)
        where = shown_at if url is not None else path
        shared = opened.open_shared_state()  # None: an index file, whose servers share nothing
        if shared is not None:
            shared.close()
        opened.close()
        ring = key_ring(keys, allow_anonymous=allow_anonymous)
    config = ServeConfig(
        rate=rate,
        burst=burst or max(1, int(rate * 2)),
        model_waiting=queue,
        deadline_s=deadline,
        cors_origins=tuple(cors_origin or ()),
        docs=docs,
        body_timeout_s=body_timeout,
        anonymous_audit_per_day=anonymous_audit_per_day,
        warm=warm,
        readers=readers,
    )
    who = "anonymous callers are public" if ring.allow_anonymous else "a key is needed"
    warming = "; loading the models: GET /readyz says when they are ready" if warm else ""
    processes = f"; {workers} processes" if workers > 1 else ""
    err.print(
        f"serving {shown(where)} on http://{shown(host)}:{port}/ ({len(ring.keys)} keys; {who}"
        f"{processes}{warming})",
        highlight=False,
    )
    if workers > 1 and shared is None:
        err.print(
            "rate limits, metrics and key revocations are per process on an index file"
            " (each worker counts its own; a PostgreSQL store shares them)",
            highlight=False,
            soft_wrap=True,
        )
    plan = Plan(path, url or "", keys, allow_anonymous, config)
    watching = None
    with user_errors():
        if watch:  # the first sync is over before the server listens
            from tether.cli.watch import start_watch, stop_watch

            watching = start_watch(folder, path, url)
        try:
            serve(
                plan,
                host,
                port,
                workers=workers,
                forwarded_allow_ips=proxies,
                header_timeout_s=header_timeout,
            )
        finally:
            if watching is not None:
                stop_watch(*watching)


def port_free(host: str, port: int) -> None:
    """A TetherError when `host:port` cannot be listened on (in use, or not this machine's
    address), said before "serving … on" is printed: uvicorn would only log it and exit."""
    import socket

    from tether.errors import TetherError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise TetherError(f"cannot listen on {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise TetherError(
                f"cannot listen on {host}:{port} ({exc.strerror}): another server may be"
                " using that port; choose another with --port"
            ) from None


keys_app = typer.Typer(help="Keys for `tether serve`.", no_args_is_help=True)


def key_name(value: str) -> str:
    """NAME of `keys add`, checked as it is parsed (`tether.server.keys.check_key_name`): a
    bad one is a usage error, exit 2."""
    from tether.errors import TetherError
    from tether.server.keys import check_key_name

    try:
        return check_key_name(value)
    except TetherError as exc:
        raise typer.BadParameter(str(exc)) from None


@keys_app.command("add")
def add(
    name: Annotated[
        str,
        typer.Argument(help="A name for the key (letters, digits, _ . -).", callback=key_name),
    ],
    file: Annotated[Path, typer.Option("--file", help="The keys file (created when missing).")],
    audience: Annotated[
        str, typer.Option(help="public or staff.", callback=audience_option)
    ] = "public",
) -> None:
    """Add a new key to a keys file and print it (once: the file keeps only its digest)."""
    from tether.server.keys import add_key

    with user_errors():
        key = add_key(file, name, audience)
    typer.echo(key)
    err.print(f"added {shown(name)} ({shown(audience)}) to {shown(file)}", highlight=False)


@keys_app.command("revoke")
def revoke(
    name: Annotated[str, typer.Argument(help="The key's name.", callback=key_name)],
    file: Annotated[
        Path,
        typer.Option("--file", help="The keys file that has the key.", exists=True, dir_okay=False),
    ],
    store: StoreOpt = None,
) -> None:
    """Revoke a key: take it out of the keys file and, on a PostgreSQL store (--store or
    TETHER_STORE), record its digest there, so every server on the store refuses it (401, as
    an unknown key) within a couple of seconds. A server over an index file refuses it once
    restarted without it."""
    from tether.app import shared_state_of
    from tether.server.keys import revoke_key

    with user_errors():
        shared = shared_state_of(store)  # None: no server store (TETHER_STORE) named
        try:
            fresh = revoke_key(file, name, shared)
            where = shared.location if shared is not None else ""
        finally:
            if shared is not None:
                shared.close()
    err.print(f"removed {shown(name)} from {shown(file)}", highlight=False)
    if fresh is None:
        err.print(
            "no PostgreSQL store: restart the servers that read this file to refuse the key",
            highlight=False,
        )
        return
    already = "" if fresh else " (it was already revoked there)"
    err.print(
        f"revoked {shown(name)} in {shown(where)}{already}: every server on it refuses the key"
        " within a couple of seconds",
        highlight=False,
    )
