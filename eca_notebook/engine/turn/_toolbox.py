"""The engine's toolbox: which tools exist (the built-in ones, the plug-ins' and the config's), which a behavior
offers, what a tool may use, and the system prompts that tell the model about them.

Split from the engine so a prompt's path reads in one place (``_prompting.py``) while "what may the model use, and
what is it told" reads here. The toolbox holds no state of its own: tools, plug-ins and approvals stay on the
:class:`~eca_notebook.engine.Engine` (doors and plug-ins read them there), which it sees as a :class:`ToolboxHost`;
what it asks the clients comes from a :class:`~._client_requests.ClientRequests` it is given. Adding a plug-in is
the engine's (``Engine.add_plugin``), answering an approval ``_toolcall.answer_approval``, undoing a call
``_notebooks.revert_tool_call``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...plugins import Plugin
from ...protocol import NativeServerUpdatedParams, ServerTool
from ...tools.base import Tool, ToolContext, llm_name, tool_server
from ...tools.custom import CONFIG_KEY as CUSTOM_TOOLS_KEY
from ...tools.custom import CustomTool, custom_tools
from ...tools.skill import SkillTool
from ..config import Config, LoadedConfig, ModelInfo
from ..workspace import (
    Agents,
    Rule,
    WorkspaceTrust,
    engine_skills,
    load_rules,
    provenance_key,
    read_roots,
    render_prompt_template,
    render_rules,
    render_skills,
    template_variables,
)
from . import _small_model
from ._approval import hidden_tools, selector_matches
from ._client_requests import ClientRequests
from ._notebooks import listener_notebooks
from ._toolcall import NATIVE_SERVER

if TYPE_CHECKING:
    from ...retrieval import CodeIndex
    from ...tools.base import FileAccess
    from ...tools.jobs import JobRegistry
    from ...tools.notebook import CellRunner, NotebookAccess
    from ._host import Listener
    from ._subagents import Subagents

log = logging.getLogger(__name__)

BASE_SYSTEM_PROMPT = (
    "You are eca-notebook, an AI code assistant working inside the user's workspace{where}. "
    "Answer concisely; use Markdown, with fenced code blocks for code."
)
PLAN_SYSTEM_PROMPT = (
    " You are in plan mode: analyse and propose a plan, but do not change any file."
)
TOOLS_SYSTEM_PROMPT = (
    " Use the tools to read and change the workspace; paths are relative to the first workspace folder. Every change"
    " you propose is shown to the user as a diff and may be rejected: if so, do not retry it unless asked."
)
NOTEBOOK_SYSTEM_PROMPT = (
    " Work on Jupyter notebooks (.ipynb) with the notebook_* tools, cell by cell, using the cell ids notebook_read"
    " shows; to check a fix, run the cells and read their outputs."
)
#: Tools a host's MCP server offers to edit its open notebooks (Jupyter AI 3.2's "Jupyter MCP Server"): when present,
#: the file tools leave .ipynb files to them (Toolbox.host_notebook_hint).
HOST_NOTEBOOK_TOOLS = frozenset({"insert_cell", "edit_cell", "delete_cell", "add_cell", "create_notebook"})


class ToolboxHost(Protocol):
    """What the toolbox reads of the engine — the state it decides from (the toolbox keeps none of its own)."""

    # the tools: the built-in ones and the plug-ins', the config's customTools, which of them an agent is offered
    # (spawn_agent by the subagents; the selected behavior for the native server's list), the content index behind
    # the search tools
    @property
    def tools(self) -> Mapping[str, Tool]: ...
    @property
    def plugins(self) -> list[Plugin]: ...
    @property
    def selected_behavior(self) -> str: ...
    @property
    def config(self) -> Config: ...
    @property
    def agents(self) -> Agents: ...
    @property
    def subagents(self) -> Subagents: ...
    @property
    def code_index(self) -> CodeIndex | None: ...

    # what a tool may use (the ToolContext): the workspace, the clients' notebooks, the door's file and notebook
    # access, the kernels, the background jobs, the environment (the provenance key), the skills' folders (the trust
    # decides)
    @property
    def workspace_folders(self) -> Sequence[Path]: ...
    @property
    def listeners(self) -> list[Listener]: ...
    @property
    def file_access(self) -> FileAccess | None: ...
    @property
    def notebook_access(self) -> NotebookAccess | None: ...
    @property
    def default_notebook(self) -> Path | None: ...
    @property
    def cell_runner(self) -> CellRunner | None: ...
    @property
    def jobs(self) -> JobRegistry: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def trust(self) -> WorkspaceTrust: ...

    # the system prompts: rules and templates (their problems go to the loaded config's)
    @property
    def loaded(self) -> LoadedConfig: ...
    @property
    def global_config_dir(self) -> Path: ...


class Toolbox:
    """Tools, plug-ins and system prompts of one engine."""

    def __init__(self, engine: ToolboxHost, requests: ClientRequests) -> None:
        self.engine = engine
        self.requests = requests  # what the tools may ask the clients; a tool no client can serve is hidden
        self._signing_key: bytes | None = None  # see signing_key
        self._custom: tuple[Any, list[CustomTool], list[str]] | None = None  # see custom_tools

    # -- tools ---------------------------------------------------------------------------------------------------

    def all_tools(self) -> dict[str, Tool]:
        """Every tool the engine knows, keyed by the name the model sees (``eca__read_file``, ``github__search``):
        the built-in tools, the plug-ins' and the config's ``customTools`` (those a held workspace declares wait for
        its trust: the config that applies then has none of them). A custom tool never replaces another tool of the
        same name (a kernel's ``run_python``): a config line must not stand in for a tool the user knows."""
        tools = dict(self.engine.tools)
        for plugin in self.engine.plugins:
            for tool in plugin.tools():
                tools.setdefault(llm_name(tool), tool)
        for custom in self.custom_tools()[0]:
            tools.setdefault(llm_name(custom), custom)
        return tools

    def custom_tools(self) -> tuple[list[CustomTool], list[str]]:
        """The ``customTools`` of the config that applies now (tools/custom.py), and a problem for each entry that is
        not a tool; built again only when that value changes (a reload, trusting a workspace)."""
        entries = (self.engine.config.model_extra or {}).get(CUSTOM_TOOLS_KEY)
        cached = self._custom
        if cached is None or cached[0] != entries:
            reserved = frozenset(t.name for t in self.engine.tools.values())
            cached = self._custom = (copy.deepcopy(entries), *custom_tools(entries, reserved))
        return cached[1], cached[2]

    def offered_tools(self, behavior: str) -> dict[str, Tool]:
        """The tools the model may call in this behavior: minus disabledTools and tools hidden by a bare deny rule."""
        tools = self.all_tools()
        agents = self.engine.agents
        approval = agents.tool_call_for(behavior).approval
        identities = [(tool_server(t), t.name) for t in tools.values()]
        hidden = set(hidden_tools(approval, identities))
        hidden |= {(server, name) for server, name in identities
                   for selector in agents.disabled_tools_for(behavior) if selector_matches(selector, server, name)}
        spec = agents.get(behavior)
        if spec is not None and spec.read_only:  # plan, explorer: nothing that changes files or notebooks
            hidden |= {(tool_server(t), t.name) for t in tools.values() if getattr(t, "mutates", False)}
        if self.requests.diagnostics() is None:  # no connected client can answer editor/getDiagnostics
            hidden.add((NATIVE_SERVER, "editor_diagnostics"))
        code_index = self.engine.code_index
        if code_index is None:  # no workspace folder, or index.content is off
            hidden |= {(NATIVE_SERVER, "search_symbols"), (NATIVE_SERVER, "search_text")}
        if code_index is None or not code_index.vectors_available:  # the vectors extra is not installed
            hidden.add((NATIVE_SERVER, "vector_search"))
        if code_index is None and self.requests.definitions() is None:  # neither the editor nor the index can answer
            hidden.add((NATIVE_SERVER, "editor_definition"))
        if code_index is None and self.requests.references() is None:
            hidden.add((NATIVE_SERVER, "editor_references"))
        offered = {key: t for key, t in tools.items() if (tool_server(t), t.name) not in hidden}
        return self.engine.subagents.offered(behavior, offered)  # spawn_agent only where a subagent may be spawned

    def native_tools(self) -> NativeServerUpdatedParams:
        """``tool/serverUpdated`` for the built-in server: its tools, those the selected behavior hides disabled."""
        offered = self.offered_tools(self.engine.selected_behavior)
        tools = [
            ServerTool(name=tool.name, description=tool.description, parameters=tool.parameters,
                       disabled=None if key in offered else True, custom=True if isinstance(tool, CustomTool) else None)
            for key, tool in self.all_tools().items() if tool_server(tool) == NATIVE_SERVER
        ]
        return NativeServerUpdatedParams(type="native", name="ECA", status="running", tools=tools)

    def tools_for_turn(self, behavior: str, info: ModelInfo, request: str | None, has_contexts: bool
                       ) -> dict[str, Tool]:
        """The tools offered this turn: the behavior's; for a small model only those the prompt asks for."""
        offered = self.offered_tools(behavior)
        if not info.compact or not offered:
            return offered
        return _small_model.tools_for_prompt(
            offered, {key: t.name for key, t in offered.items()}, request or "",
            mode=self.engine.config.local_model.tools, has_contexts=has_contexts,
            folders=self.engine.workspace_folders,
        )

    def tool_context(self) -> ToolContext:
        """What a tool may use: the workspace folders, the client's diagnostics, the door's file access, the
        notebooks' front end."""
        engine, requests = self.engine, self.requests
        return ToolContext(workspace_folders=list(engine.workspace_folders),
                           request_diagnostics=requests.diagnostics(), fs=engine.file_access,
                           notebooks=engine.notebook_access or listener_notebooks(engine.listeners),
                           default_notebook=engine.default_notebook, cell_runner=engine.cell_runner,
                           code_index=engine.code_index, notebook_hint=self.host_notebook_hint(),
                           ask_question=requests.questions(),
                           request_definition=requests.definitions(), request_references=requests.references(),
                           read_roots=read_roots(engine_skills(engine), engine.workspace_folders),
                           provenance_key=self.signing_key(), jobs=engine.jobs)

    def signing_key(self) -> bytes:
        """The key the notebook tools sign cell provenance with (``_provenance.py``): read or made once."""
        if self._signing_key is None:
            self._signing_key = provenance_key(self.engine.env)
        return self._signing_key

    def host_notebook_hint(self) -> str | None:
        """When a host owns the notebooks — it offers notebook tools (Jupyter AI's "Jupyter MCP Server": insert_cell,
        edit_cell…) or its file access refused a raw ``.ipynb`` write — what the model must use instead of writing
        the JSON: the host's tools, and ours."""
        tools = self.all_tools()
        host = sorted(key for key, t in tools.items()
                      if tool_server(t) != NATIVE_SERVER and t.name in HOST_NOTEBOOK_TOOLS)
        if not host and not getattr(self.engine.file_access, "refuses_notebooks", False):
            return None
        ours = sorted(key for key, t in tools.items() if tool_server(t) == NATIVE_SERVER
                      and t.name.startswith("notebook_") and t.name != "notebook_read")
        choices = " or ".join(f"({', '.join(names)})" for names in (host, ours) if names)
        who = "the host edits notebooks itself" if host else "the client refuses raw .ipynb writes"
        return f"{who}: do not write the .ipynb JSON; change notebooks cell by cell with the notebook tools {choices}"

    # -- system prompts ------------------------------------------------------------------------------------------

    def _templated(self, behavior: str, *, subagent: bool,
                   offered: dict[str, Tool] | None = None) -> tuple[str | None, list[Rule]]:
        """The agent's own prompt and the rules, rendered as templates (engine/workspace/_templates.py: ``isSubagent``,
        ``workspaceRoots``, ``toolEnabled_<name>``); a rule rendering to nothing is left out, as in the reference.
        Template errors keep the raw text and become config problems."""
        engine = self.engine
        agent = engine.agents.get(behavior)
        if offered is None:
            offered = self.offered_tools(behavior)
        variables = template_variables(subagent=subagent, workspace_folders=engine.workspace_folders,
                                       tool_names=offered)
        problems = engine.loaded.problems
        custom = None
        if agent is not None and agent.system_prompt:
            custom = render_prompt_template(agent.system_prompt, variables, f"agent '{agent.id}' prompt", problems)
        rules = []
        for rule in load_rules(engine.workspace_folders, engine.global_config_dir):
            if rule.skipped:  # refused (a symlink out of the workspace…): its one-line note goes to the model
                rules.append(rule)
                continue
            content = render_prompt_template(rule.content, variables, f"rule {rule.path}", problems)
            if content.strip():
                rules.append(Rule(rule.name, rule.path, content))
        return custom, rules

    def system_prompt(self, behavior: str, *, subagent: bool = False) -> str:
        """Base prompt (or the behavior's own), tool guidance, then the user's rules (AGENTS.md, .eca/rules).
        *subagent*: the prompt of a subagent's chat (the templates' ``isSubagent``)."""
        engine = self.engine
        where = ""
        if engine.workspace_folders:
            where = " (" + ", ".join(str(p) for p in engine.workspace_folders) + ")"
        prompt = BASE_SYSTEM_PROMPT.format(where=where)
        agent = engine.agents.get(behavior)
        if agent is not None and agent.is_or_inherits("plan"):
            prompt += PLAN_SYSTEM_PROMPT
        offered = self.offered_tools(behavior)
        custom, rule_list = self._templated(behavior, subagent=subagent, offered=offered)
        if custom:
            prompt = custom
        if offered:
            prompt += TOOLS_SYSTEM_PROMPT
        if any(t.name == "notebook_read" for t in offered.values()):
            prompt += NOTEBOOK_SYSTEM_PROMPT
        rules = render_rules(rule_list)
        if rules:
            prompt += "\n\n" + rules
        skill_tool = next((key for key, t in offered.items() if isinstance(t, SkillTool)), None)
        if skill_tool is not None:  # names and descriptions only: the model loads a body with the tool
            prompt += "\n\n" + render_skills(engine_skills(engine), skill_tool)
        return prompt

    def compact_system_prompt(self, behavior: str, *, tools: bool, info: ModelInfo | None = None) -> str:
        """The system prompt for a small model (``ModelInfo.compact``): see ``_small_model.py``."""
        engine = self.engine
        agent = engine.agents.get(behavior)
        custom, rule_list = self._templated(behavior, subagent=False)
        return _small_model.compact_system_prompt(
            plan=agent is not None and agent.is_or_inherits("plan"),
            tools=tools,
            rules=render_rules(rule_list),
            custom=custom or None,
            base=info.system_prompt if info is not None else None,
        )
