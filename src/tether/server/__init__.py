"""`tether serve`: the HTTP API and the web page, a face beside the CLI over the Workspace.

`tether.server.api.create_app` builds the FastAPI app (uvicorn runs it); `tether.server.keys`
reads the keys file that maps each key to an audience; `tether.server.workers` runs the
engine's blocking work (a pool of Workspaces, a bounded queue in front of the model);
`tether.server.http` holds the problem bodies, the size limit, the security headers and the
metrics; `tether.server.limits` what a client may do before 429 (failed authentications);
`tether.server.shared` what the servers on one store share (rate limits, revocations,
metrics); `tether.server.running` how uvicorn runs it, in one process or `--workers N`;
the page is `static/` (plain HTML, CSS and JavaScript, no build step).

What it cannot do: it answers nothing itself; every result comes from a Workspace.
"""
