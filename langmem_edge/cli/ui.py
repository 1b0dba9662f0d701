"""``langmem-edge ui``: the memory inspector in the browser (``docs/inspector.md``)."""

from __future__ import annotations

from typing import Annotated

import typer

from langmem_edge.cli.base import app, err, failing, opened
from langmem_edge.inspector.security import TOKEN_ENV
from langmem_edge.inspector.server import DEFAULT_HOST, DEFAULT_PORT

__all__ = ["ui"]


@app.command()
def ui(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(
        help="Interface to listen on; anything but 127.0.0.1/localhost needs --token.")
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)
                    ] = DEFAULT_PORT,
    token: Annotated[str | None, typer.Option(
        envvar=TOKEN_ENV, show_default=False,
        help="Access token every request must carry (the printed address sets it in a "
             "cookie).")] = None,
) -> None:
    """Serve the memory inspector: see, search, edit and forget what the agent remembers."""
    from langmem_edge.inspector.security import check_bind
    from langmem_edge.inspector.server import address, serve

    with failing(ctx.obj):
        check_bind(host, token)
    with opened(ctx) as memory:
        err.print(f"Memory inspector of {ctx.obj.where}: open {address(host, port, token)} "
                  "(Ctrl+C stops it)")
        serve(memory, host=host, port=port, token=token)
