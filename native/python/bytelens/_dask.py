"""Dask's ``sizeof`` for bytelens objects, registered through the
``dask.sizeof`` entry point (pyproject.toml), so that Dask's scheduler
counts a Buffer by its bytes, not by the few dozen bytes of the Python
object."""


def register(sizeof: object = None) -> None:
    from dask.sizeof import sizeof

    from ._native import Buffer
    from ._view import View

    @sizeof.register(Buffer)
    def sizeof_buffer(buf: Buffer) -> int:
        # Wrapped or mapped memory counts too: a worker holding it holds the bytes.
        return 0 if buf.closed else buf.nbytes

    @sizeof.register(View)
    def sizeof_view(view: View) -> int:
        return sizeof_buffer(view.buffer)
