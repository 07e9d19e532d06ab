"""A loopback TCP relay for tests of a server that goes away: ``cut()`` drops every connection (a server that
died), ``pause()`` stops forwarding with every connection left open (a server that stalls: the TCP connection
is up, nothing answers), ``resume()`` forwards again what was held."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class TcpRelay:
    """Relays ``127.0.0.1:<port>`` on its own thread and event loop; :attr:`port` is where to connect."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.target = (host, port)
        self.loop = asyncio.new_event_loop()
        self.links: set[asyncio.StreamWriter] = set()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._flowing = asyncio.Event()
        self._flowing.set()
        self.server = self._call(asyncio.start_server(self._link, "127.0.0.1", 0))
        self.port: int = self.server.sockets[0].getsockname()[1]

    def url_for(self, url: str) -> str:
        """``url`` with ``host:port`` of the relayed server replaced by the relay's."""
        relayed = f"{self.target[0]}:{self.target[1]}"
        assert relayed in url, f"{url} does not name {relayed}"
        return url.replace(relayed, f"127.0.0.1:{self.port}")

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(5)

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.links.add(writer)
        await self._flowing.wait()  # paused: the connection is accepted, the server is never reached
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.links.add(up_writer)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    await self._flowing.wait()  # paused: hold what came, forward it on resume
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    def pause(self) -> None:
        """Stop forwarding in both directions; connections stay open and new ones are accepted."""
        self.loop.call_soon_threadsafe(self._flowing.clear)

    def resume(self) -> None:
        """Forward again, what was held first."""
        self.loop.call_soon_threadsafe(self._flowing.set)

    def cut(self) -> None:
        """Close the listener and abort every connection: new connections are refused."""

        async def close() -> None:
            self.server.close()
            for writer in self.links:
                writer.transport.abort()

        self._call(close())

    def stop(self) -> None:
        """Drop every connection and stop the relay's thread (at the end of a test)."""

        async def shutdown() -> None:
            self.server.close()
            for writer in self.links:
                writer.transport.abort()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self._call(shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()
