"""The extension loads the embedded model in the background as the server starts — only when it is the default."""

from __future__ import annotations

import asyncio


def extension(jp_serverapp):
    return jp_serverapp.extension_manager.extension_apps["eca_notebook"].pop()


async def wait_done(task, ceiling: float = 240.0):
    return await asyncio.wait_for(asyncio.shield(task), ceiling)


async def test_no_preload_when_a_provider_is_the_default(jp_serverapp, api):
    await jp_serverapp._post_start()  # what `jupyter server` runs once its loop is up (pytest-jupyter doesn't)
    app = extension(jp_serverapp)
    assert app.preload_local_model  # on by default
    assert app._preload is not None  # started with the server, without delaying it
    status, _ = await api("GET", "health")
    assert status == 200
    assert await wait_done(app._preload) is None  # defaultModel is a provider (and localModel is off) here
