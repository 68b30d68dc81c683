"""The shell command-line parse (tools/_shell_parse.py): structure, and the paths a command line names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eca_notebook.tools._shell_parse import analyse_paths, parse


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A workspace `ws` (with sub/ and a link to an outside folder), the outside folder, and an environment."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.py").write_text("x")
    (ws / "b.py").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (ws / "link").symlink_to(outside, target_is_directory=True)
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "USER": "me", "INSIDE": str(ws / "sub")}
    return ws, outside, env


def outside_of(command: str, tree) -> tuple[list[Path], list[Path], list[str]]:
    ws, _, env = tree
    report = analyse_paths(parse(command), ws, [ws], env)
    return report.outside, report.cd_outside, report.unknown


# -- syntax --------------------------------------------------------------------------------------------------------


def test_structure_of_lists_pipes_subshells_and_substitutions() -> None:
    parsed = parse("cd sub && grep -rn 'a b' . | head -5; (echo $(ls /etc)) > out.txt 2>&1")
    assert parsed.ok
    assert [c.program for c in parsed.commands] == ["cd", "grep", "head", "ls", "echo"]
    grep = parsed.commands[1]
    assert [w.static for w in grep.args] == ["-rn", "a b", "."]
    assert [(r.op, r.target.static if r.target else None) for r in parsed.redirects] == [(">", "out.txt"),
                                                                                        (">&", None)]
    assert [w.static if w else None for w in parsed.cd_targets] == ["sub"]
    assert [w.text for w in parsed.path_like] == [".", "/etc", "$(ls /etc)"]


def test_quoting_escapes_and_expansions() -> None:
    [date, cmd] = parse("""echo "a $HOME b" 'x $y' a\\ b $'t\\tz' ~/d "${USER}" $(date)""").commands
    assert date.program == "date"  # a substitution runs before the command it is part of
    texts = [(w.static, [p.kind for p in w.parts]) for w in cmd.args]
    assert texts[0] == (None, ["literal", "var", "literal"])
    assert texts[1] == ("x $y", ["literal"])
    assert texts[2] == ("a b", ["literal"])
    assert texts[3] == ("t\tz", ["literal"])
    assert texts[4] == (None, ["tilde", "literal"])
    assert texts[5] == (None, ["var"])
    assert texts[6] == (None, ["dynamic"])


def test_assignments_loops_functions_heredocs_eval_and_sh_c() -> None:
    parsed = parse("F=x; for f in *.py; do wc -l $f; done; g() { cat y; }; cat <<EOF\n$(rm z)\nEOF\n"
                   "eval 'touch e'; bash -c 'ls q'")
    assert parsed.ok
    programs = [c.program for c in parsed.commands]
    assert programs == [None, None, "wc", "cat", "cat", "rm", "eval", "touch", "bash", "ls"]
    assert parsed.commands[0].assignments[0][0] == "F"
    assert parsed.commands[1].assignments[0][0] == "f" and parsed.commands[2].in_loop
    assert [c.via for c in parsed.commands if c.program in ("touch", "ls")] == ["eval", "bash -c"]


@pytest.mark.parametrize("command", ["echo 'unterminated", "if then fi", "cat <(", "echo $((", "a && && b"])
def test_syntax_errors_are_problems_not_exceptions(command: str) -> None:
    parsed = parse(command)
    assert not parsed.ok and parsed.problems


# -- paths ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    "ls -la", "git status --short", "pytest -q tests/ > out.log 2>&1", "cat a.py | wc -l", "ls > /dev/null 2>&1",
    "for f in *.py; do wc -l \"$f\"; done", "cd sub && make", "awk '{print $1}' a.py",
    "/usr/bin/env python3 a.py", "echo $USER", "cat $INSIDE/x", "x=$((1+2)); echo $x", "sed -i 's/a/b/' a.py",
    "git log --format='%h {a,b}' origin/main..HEAD", "curl -s https://example.com/a/b", "f() { cat a.py; }; f",
    "case x in a) ls;; esac", "tee >(wc -l) < a.py", "find . -name '*.py' -exec grep -l x {} +",
    "git config user.name me", "git config --get core.pager", "curl https://example.com/file:/etc/x",
])
def test_inside_commands_name_nothing_outside(command: str, tree) -> None:
    assert outside_of(command, tree) == ([], [], [])


@pytest.mark.parametrize(("command", "expected"), [
    ("cat ../outside/secret.txt", "outside/secret.txt"),
    ("cat /etc/passwd", "/etc/passwd"),
    ("cat ~/x", "home/x"),
    ("cat $HOME/x", "home/x"),
    ("cat ${HOME}/x", "home/x"),
    ("echo hi > ~/.bashrc", "home/.bashrc"),
    ("echo hi >> ../outside/log", "outside/log"),
    ("wc -l < ../outside/secret.txt", "outside/secret.txt"),
    ("F=../outside/secret.txt; cat $F", "outside/secret.txt"),
    ("F='../outside/secret.txt x'; cat $F", "outside/secret.txt"),
    ("cat link/secret.txt", "outside/secret.txt"),  # a symlink inside the workspace that points out
    ("cat lin*/secret.txt", "outside/secret.txt"),  # globs are expanded against the real tree
    ("cat ../outside/*.txt", "outside/secret.txt"),
    ("cmd --out=/etc/x", "/etc/x"),
    ("gcc -I/usr/include a.c", "/usr/include"),
    ("cat ./sub/../../outside/secret.txt", "outside/secret.txt"),
    ("eval 'cat ../outside/secret.txt'", "outside/secret.txt"),
    ("sh -c 'cat ../outside/secret.txt'", "outside/secret.txt"),
    ("if [ -f ../outside/secret.txt ]; then echo y; fi", "outside/secret.txt"),
    ("cat <<EOF\n$(cat ../outside/secret.txt)\nEOF", "outside/secret.txt"),
    ("../outside/run.sh", "outside/run.sh"),
    ("cd sub && cat ../../outside/secret.txt", "outside/secret.txt"),
    # a file:// URL is a path on this machine; git config --global/--system name files they do not spell out
    ("curl file:///etc/passwd", "/etc/passwd"),
    ("wget file://localhost/etc/passwd", "/etc/passwd"),
    ("git clone file://localhost/etc/ssh copy", "/etc/ssh"),
    ("curl file:///etc/pass%77d", "/etc/passwd"),
    ("git config --global user.name x", "home/.gitconfig"),
    ("git config --global core.pager x", "home/.config/git/config"),
    ("git -C sub config --global --get user.name", "home/.gitconfig"),
    ("git config --system core.editor x", "/etc/gitconfig"),
])
def test_outside_paths_are_found(command: str, expected: str, tree) -> None:
    ws, _, _ = tree
    found, _, unknown = outside_of(command, tree)
    assert unknown == []
    assert any(str(p).endswith(expected) for p in found), (command, found)
    assert all(not p.is_relative_to(ws) or p.is_relative_to(ws / "link") for p in found)


@pytest.mark.parametrize(("command", "expected"), [
    ("cd .. && cat outside/secret.txt", ""),
    ("cd ..", ""),
    ("cd", "home"),
    ("(cd ../outside && cat secret.txt)", "outside"),
    ("cd sub; cd ../..", ""),
    ("cd link", "outside"),
    ("pushd /tmp", "/tmp"),
    ("builtin cd ~", "home"),
])
def test_cd_out_of_the_workspace_is_found(command: str, expected: str, tree) -> None:
    ws, _, _ = tree
    _, cds, _ = outside_of(command, tree)
    assert cds and all(not d.is_relative_to(ws) for d in cds)
    assert any(str(d).endswith(expected) for d in cds)


def test_every_directory_the_shell_may_be_in_counts(tree) -> None:
    """``cd sub`` may fail (no such directory): ``ls ..`` may then run in the workspace root — a superset."""
    ws, _, _ = tree
    found, cds, _ = outside_of("cd sub; ls ..", tree)
    assert found == [ws.parent] and cds == []


def test_cd_then_relative_path_is_resolved_from_the_new_directory(tree) -> None:
    ws, outside, _ = tree
    found, cds, _ = outside_of("cd .. && cat outside/secret.txt", tree)
    assert outside / "secret.txt" in found and ws.parent in cds


@pytest.mark.parametrize("command", [
    "cat $(printf x)", "cat `echo x`", "while read l; do cat \"$l\"; done < a.py", "echo {a,b}",
    "echo ${X:-../y}", "cd -", "cd $(dirname x)", "eval \"$CMD\"", "$(which x) a.py", "sh -c \"$S\"",
    "echo 'unterminated",
])
def test_what_cannot_be_known_before_running_is_reported(command: str, tree) -> None:
    _, _, unknown = outside_of(command, tree)
    assert unknown, command


def test_variables_come_from_the_environment_the_command_gets(tree) -> None:
    ws, _, env = tree
    assert analyse_paths(parse("cat $SECRET_DIR/x"), ws, [ws], {**env, "SECRET_DIR": "/etc"}).outside == \
        [Path("/etc/x").resolve()]
    assert analyse_paths(parse("cat $SECRET_DIR/x"), ws, [ws], env).outside == [Path("/x")]  # unset: empty


def test_several_workspace_folders(tree, tmp_path: Path) -> None:
    ws, outside, env = tree
    report = analyse_paths(parse("cat ../outside/secret.txt"), ws, [ws, outside], env)
    assert not report.needs_asking


def test_long_or_binary_input_asks() -> None:
    assert not parse("echo " + "a" * 70_000).ok
    assert not parse("echo a\0b").ok


def test_parse_is_total_on_odd_input() -> None:
    for text in ["", " ", "\n\n", ";;", "&&", "|", "$(", "`", "'", '"', "<<", "((", "[[", "{", "}", "\\",
                 "a\\\nb", "echo \udcff", "x" * 1000, "(" * 200]:
        parse(text)  # never raises
    ws = Path(os.getcwd())
    analyse_paths(parse("(" * 200), ws, [ws], {})


@pytest.mark.parametrize("command", [
    "cat .\\./outside/secret.txt", 'cat "..""/outside/secret.txt"', "cat $'..'/outside/secret.txt",
    "cat $PWD/../outside/secret.txt", ">../outside/x", "exec 3<../outside/secret.txt; cat <&3",
    "ls\ncat ../outside/secret.txt", "env A=1 sh -c 'cat ../outside/secret.txt'",
    "timeout 10 bash -lc 'cat ../outside/secret.txt'", "a=(../outside/secret.txt); echo ok",
])
def test_spellings_that_reach_the_same_outside_file(command: str, tree) -> None:
    _, outside, _ = tree
    found, _, _ = outside_of(command, tree)
    assert any(p == outside or p.is_relative_to(outside) for p in found), (command, found)


def test_cdpath_is_searched(tree) -> None:
    ws, outside, _ = tree
    _, cds, _ = outside_of("CDPATH=.. cd outside", tree)
    assert outside in cds


@pytest.mark.parametrize("command", ["((((cat ../outside/secret.txt))))", "echo " + "$(" * 3000 + "ls" + ")" * 3000])
def test_what_the_parser_only_half_understands_asks(command: str, tree) -> None:
    assert not parse(command).ok
    assert outside_of(command, tree)[2]
