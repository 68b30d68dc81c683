"""skill: returns the body of the skill asked for, with its base directory and its other files; read_file reads a
skill folder outside the workspace without asking (``ToolContext.read_roots``)."""

from __future__ import annotations

from pathlib import Path

from eca_notebook.tools import ReadFileTool
from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.skill import Skill, SkillTool


def make(folder: Path, files: int = 0) -> Skill:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nBODY\n")
    for i in range(files):
        (folder / "refs" / f"f{i:03}.md").parent.mkdir(exist_ok=True)
        (folder / "refs" / f"f{i:03}.md").write_text("x")
    (folder / ".hidden").write_text("x")
    return Skill(name="s", description="d", path=folder / "SKILL.md", body="BODY\n", scope="global")


async def test_body_base_directory_and_files(tmp_path: Path) -> None:
    skill = make(tmp_path / "s", files=2)
    tool = SkillTool(lambda: [skill])
    ctx = ToolContext(workspace_folders=[tmp_path / "ws"])
    prepared = tool.prepare({"name": "s"}, ctx)
    assert prepared.error is None and prepared.summary == "Loading skill 's'" and not prepared.outside_workspace
    result = await tool.run(prepared, ctx)
    assert not result.error
    assert result.output.splitlines()[:4] == ["**Skill**: s", f"**Base directory**: {tmp_path / 's'}", "", "BODY"]
    assert "- refs/f000.md\n- refs/f001.md" in result.output
    assert ".hidden" not in result.output and "- SKILL.md" not in result.output
    assert not tool.mutates and tool.default_approval == "allow"


async def test_unknown_name_and_a_long_listing(tmp_path: Path) -> None:
    skill = make(tmp_path / "s", files=120)
    tool = SkillTool(lambda: [skill])
    ctx = ToolContext(workspace_folders=[tmp_path])
    missing = await tool.run(tool.prepare({"name": "other"}, ctx), ctx)
    assert missing.error and missing.output == "skill: no skill named 'other'. Available skills: s"
    result = await tool.run(tool.prepare({"name": "s"}, ctx), ctx)
    assert "- refs/f099.md" in result.output and "refs/f100.md" not in result.output
    assert "only the first 100 are listed" in result.output
    assert tool.prepare({}, ctx).error


def test_read_roots_make_a_skill_file_inside(tmp_path: Path) -> None:
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "notes.md").write_text("hi")
    (tmp_path / "ws").mkdir()
    path = str(tmp_path / "skills" / "notes.md")
    plain = ReadFileTool().prepare({"path": path}, ToolContext(workspace_folders=[tmp_path / "ws"]))
    assert plain.outside_workspace
    roots = ToolContext(workspace_folders=[tmp_path / "ws"], read_roots=(tmp_path / "skills",))
    assert not ReadFileTool().prepare({"path": path}, roots).outside_workspace
