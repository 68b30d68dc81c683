"""``%eca @fig``, ``@Out[n]`` and ``-f plot.png``: a figure the prompt names reaches the (scripted, vision-capable)
model as an image part, rendered in the kernel; the widget shows ``image`` chat contents as raster ``<img>`` only."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from eca_notebook.notebook import _magics
from eca_notebook.notebook._figures import FigureNote, figure_png
from eca_notebook.notebook._session import NotebookSession
from eca_notebook.notebook._transcript import Transcript
from eca_notebook.testing.llm_server import Reply

from .conftest import engine_env

pytest.importorskip("matplotlib")


@pytest.fixture
def shell(shell, home, llm, workspace):
    """The shell with a session whose scripted model can see (``imageInput: true``)."""
    env = engine_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["providers"]["scripted"]["models"]["demo"]["imageInput"] = True
    env["ECA_CONFIG"] = json.dumps(config)
    session = NotebookSession(shell, workspace=workspace, env=env)
    _magics._state["session"] = session
    shell.eca_session = session
    return shell


def sent_images(llm) -> list[str]:
    """The ``image_url`` data URLs of the last Chat Completions request."""
    urls = []
    for message in llm.requests[-1].body["messages"]:
        if isinstance(message.get("content"), list):
            urls += [p["image_url"]["url"] for p in message["content"] if p.get("type") == "image_url"]
    return urls


def png_size(url: str) -> tuple[int, int]:
    from PIL import Image

    header, data = url.split(",", 1)
    assert header == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(data))).size


def test_eca_at_fig_sends_the_figure_as_a_png(shell, llm):
    shell.run_cell("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                   "fig, ax = plt.subplots(figsize=(4, 3))\nax.plot([3, 1, 2], [1, 2, 3])")
    llm.enqueue(Reply.text("The x axis is not sorted."))
    assert shell.run_cell("%eca what is wrong with @fig?").success
    [url] = sent_images(llm)
    width, height = png_size(url)
    assert 200 < width <= 400 and 150 < height <= 300  # rendered at 100 dpi (bbox tight)
    assert "what is wrong with @fig?" in str(llm.requests[-1].body["messages"])


def test_eca_at_out_n_with_a_plot_sends_it_and_plain_values_send_none(shell, llm):
    shell.run_cell("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt")
    number = shell.execution_count
    shell.run_cell("plt.figure(); plt.plot([1, 2]); plt.gca()", store_history=True)  # Out[n] is the Axes
    llm.enqueue(Reply.text("A line."))
    assert shell.run_cell(f"%eca describe @Out[{number}]").success
    assert len(sent_images(llm)) == 1
    shell.run_cell("values = [1, 2, 3]")
    llm.enqueue(Reply.text("A list."))
    assert shell.run_cell("%eca -n describe @values").success  # (a new chat: no earlier image)
    assert sent_images(llm) == []


def test_eca_file_flag_with_a_png_sends_the_image(shell, llm, workspace: Path):
    from PIL import Image

    Image.new("RGB", (64, 48), "blue").save(workspace / "plot.png")
    llm.enqueue(Reply.text("Blue."))
    assert shell.run_cell("%eca -f plot.png what colour is this?").success
    [url] = sent_images(llm)
    assert png_size(url) == (64, 48)


def test_a_plotly_figure_without_kaleido_is_a_note_and_others_are_not_figures():
    class PlotlyLike:
        def to_plotly_json(self):
            return {}

        def to_image(self, format):
            raise ValueError("Image export using the 'kaleido' engine requires the kaleido package")

    with pytest.raises(FigureNote, match="kaleido"):
        figure_png(PlotlyLike())
    assert figure_png([1, 2]) is None and figure_png("text") is None

    class Picture:
        def _repr_png_(self):
            return b"\x89PNG..."

    assert figure_png(Picture()) == ("image/png", b"\x89PNG...")


def test_the_transcript_shows_raster_images_only():
    t = Transcript()
    [block] = t.apply("chat/contentReceived", {"chatId": "c", "role": "assistant", "content": {
        "type": "image", "mediaType": "image/png", "base64": "iVBORw0KGgo="}})
    assert block.kind == "image" and block.id == "image/png"
    for bad in ({"mediaType": "image/svg+xml", "base64": "PHN2Zz4="},
                {"mediaType": "image/png", "base64": '"><script>alert(1)</script>'}):
        [note] = t.apply("chat/contentReceived", {"chatId": "c", "role": "assistant",
                                                  "content": {"type": "image", **bad}})
        assert note.kind == "note" and "script" not in note.text
    assert "[image: image/png" in t.to_markdown()
