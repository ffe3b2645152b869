"""The `tether` command: parsing arguments and printing results, nothing more.

Every command has --help. A user mistake (missing folder, bad date, unknown doc_id, no index)
prints one line starting with "error:" and exits with status 1 (2 for a bad option value).

This module registers the commands of `tether.cli.{ingest,ingest_web,watch,search,ask,evaluate,schema,config,serve,health,audit,mcp}` on
the app of `tether.cli.app`, in the order `tether --help` lists them.

What it cannot do: nothing here imports an engine module; each command does, when it runs.
"""

from __future__ import annotations

from tether.cli import (
    ask,
    audit,
    config,
    evaluate,
    health,
    ingest,
    ingest_web,
    mcp,
    schema,
    search,
    serve,
    watch,
)
from tether.cli.app import app

app.command()(ingest.ingest)
app.command()(ingest_web.sync)
app.command()(watch.watch)
app.command()(search.documents)
app.command()(search.chunks)
app.command()(search.search)
app.command()(search.info)
app.command()(ask.demo)
app.command()(ask.questions)
app.command()(schema.version)
app.command()(config.config)
app.command()(ask.ask)
app.command()(ask.chat)
app.command()(mcp.mcp)
app.command()(evaluate.calibrate)
app.command("eval")(evaluate.eval_command)
app.add_typer(audit.audit_app, name="audit")
app.command()(schema.schema)
app.command()(serve.serve)
app.command()(health.health)
app.add_typer(serve.keys_app, name="keys")


def main() -> None:
    app()


__all__ = ["app", "main"]

if __name__ == "__main__":
    main()
