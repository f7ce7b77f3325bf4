"""Run a GitHub Actions workflow job or composite action on this machine, as a runner would
for what matters here: each `run:` step is executed by bash with the step's `env`, the
`${{ }}` expressions it is given are evaluated (inputs, steps.*.outputs, github.*, runner.*),
`if:` conditions are honoured, and $GITHUB_OUTPUT / $GITHUB_STEP_SUMMARY work. Steps that
use a remote action (checkout, cache, upload-artifact) cannot run here: they are recorded
with their evaluated `with:` values, for the test to check. A local action (`uses: ./x`)
is run step by step.

GitHub itself is not reachable, so the test puts a recorder named `gh` first on PATH.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def load_yaml(path: Path) -> Any:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(path.read_text())


# --- expressions ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_*][A-Za-z0-9_\-]*)*))"
)


def _truthy(value: Any) -> bool:
    return value not in ("", None, False, 0)


class Expr:
    """A small evaluator of GitHub expressions: literals, context paths, ==, !=, &&, ||, !,
    parentheses and the status functions always(), success(), failure()."""

    def __init__(self, text: str, context: dict[str, Any], status: str) -> None:
        self.tokens = self._tokenize(text)
        self.i = 0
        self.context = context
        self.status = status  # "success" | "failure"

    @staticmethod
    def _tokenize(text: str) -> list[tuple[str, str]]:
        out, pos = [], 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot parse expression at {text[pos:]!r}")
            kind = m.lastgroup or ""
            out.append((kind, m.group(kind)))
            pos = m.end()
        return out

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def value(self) -> Any:
        v = self._or()
        if self._peek() is not None:
            raise ValueError(f"trailing tokens: {self.tokens[self.i:]}")
        return v

    def _or(self) -> Any:
        v = self._and()
        while self._peek() == ("op", "||"):
            self._take()
            w = self._and()
            v = v if _truthy(v) else w
        return v

    def _and(self) -> Any:
        v = self._unary()
        while self._peek() == ("op", "&&"):
            self._take()
            w = self._unary()
            v = w if _truthy(v) else v
        return v

    def _unary(self) -> Any:
        if self._peek() == ("op", "!"):
            self._take()
            return not _truthy(self._unary())
        return self._cmp()

    def _cmp(self) -> Any:
        v = self._primary()
        tok = self._peek()
        if tok in (("op", "=="), ("op", "!=")):
            self._take()
            w = self._primary()
            same = str(v).lower() == str(w).lower()
            return same if tok[1] == "==" else not same
        return v

    def _primary(self) -> Any:
        kind, text = self._take()
        if (kind, text) == ("op", "("):
            v = self._or()
            assert self._take() == ("op", ")")
            return v
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if kind == "ident":
            if self._peek() == ("op", "("):
                self._take()
                assert self._take() == ("op", ")")
                return {"always": True, "success": self.status == "success",
                        "failure": self.status == "failure"}[text]
            if text in ("true", "false"):
                return text == "true"
            node: Any = self.context
            for part in text.split("."):
                node = node.get(part, "") if isinstance(node, dict) else ""
            return node
        raise ValueError(f"unexpected token {text!r}")


def evaluate(text: str, context: dict[str, Any], status: str = "success") -> Any:
    return Expr(text, context, status).value()


def interpolate(value: Any, context: dict[str, Any]) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)

    def sub(m: re.Match) -> str:
        v = evaluate(m.group(1), context)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return re.sub(r"\$\{\{(.*?)\}\}", sub, text)


def parse_output_file(path: Path) -> dict[str, str]:
    """$GITHUB_OUTPUT's `key=value` and `key<<DELIM ... DELIM` forms."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            i += 1
            buf = []
            while lines[i] != delim:
                buf.append(lines[i])
                i += 1
            out[key] = "\n".join(buf)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        i += 1
    return out


# --- running -------------------------------------------------------------------------------


@dataclass
class StepRecord:
    name: str
    uses: str | None = None
    with_: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    returncode: int | None = None  # None: skipped by its `if:` or not a run step
    skipped: bool = False
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Runner:
    """The machine: folders and variables every step sees."""

    workspace: Path
    temp: Path
    home: Path
    path_prefix: list[Path]
    github: dict[str, Any]
    base_env: dict[str, str] = field(default_factory=dict)
    records: list[StepRecord] = field(default_factory=list)
    step_summary: Path | None = None

    def env(self, extra: dict[str, str], action_path: Path | None, output: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "GIT_"))}
        env.update(self.base_env)
        env["HOME"] = str(self.home)
        env["PATH"] = os.pathsep.join([*map(str, self.path_prefix), env.get("PATH", "")])
        env["RUNNER_TEMP"] = str(self.temp)
        env["GITHUB_WORKSPACE"] = str(self.workspace)
        env["GITHUB_OUTPUT"] = str(output)
        assert self.step_summary is not None
        env["GITHUB_STEP_SUMMARY"] = str(self.step_summary)
        env["GITHUB_REPOSITORY"] = str(self.github.get("repository", ""))
        env["CI"] = "true"
        if action_path is not None:
            env["GITHUB_ACTION_PATH"] = str(action_path)
        env.update(extra)
        return env

    def run_steps(self, steps: list[dict], context: dict[str, Any], *, action_path: Path | None,
                  local_actions: dict[str, Path]) -> str:
        """Run `steps`; the job status after them ("success" or "failure")."""
        status = "success"
        context.setdefault("steps", {})
        for n, step in enumerate(steps):
            name = step.get("name") or step.get("id") or f"step {n}"
            rec = StepRecord(name, uses=step.get("uses"))
            self.records.append(rec)
            cond = step.get("if")
            ok = _truthy(evaluate(str(cond).replace("${{", "").replace("}}", ""), context, status)) if cond else status == "success"
            rec.env = {k: interpolate(v, context) for k, v in (step.get("env") or {}).items()}
            rec.with_ = {k: interpolate(v, context) for k, v in (step.get("with") or {}).items()}
            if not ok:
                rec.skipped = True
                continue
            outputs: dict[str, str] = {}
            if "run" in step:
                assert "${{" not in step["run"], f"{name}: expressions belong in env:, not in run:"
                output = self.temp / f"output-{len(self.records)}"
                output.write_text("")
                shell = step.get("shell", "bash")
                assert shell == "bash", shell
                cwd = self.workspace / interpolate(step.get("working-directory", "."), context)
                script = self.temp / f"step-{len(self.records)}.sh"
                script.write_text(step["run"])
                proc = subprocess.run(
                    ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                    cwd=cwd, env=self.env(rec.env, action_path, output),
                    capture_output=True, text=True, timeout=600, check=False,
                )
                rec.returncode, rec.stdout, rec.stderr = proc.returncode, proc.stdout, proc.stderr
                outputs = parse_output_file(output)
                if proc.returncode != 0:
                    status = "failure"
            elif rec.uses in local_actions:
                sub = local_actions[rec.uses]
                outputs, sub_status = self.run_action(sub, rec.with_, local_actions=local_actions)
                rec.returncode = 0 if sub_status == "success" else 1
                if sub_status != "success":
                    status = "failure"
            rec.outputs = outputs
            if step.get("id"):
                context["steps"][step["id"]] = {"outputs": outputs, "outcome": "success" if rec.returncode in (0, None) else "failure"}
        return status

    def run_action(self, action_dir: Path, inputs: dict[str, str], *,
                   local_actions: dict[str, Path]) -> tuple[dict[str, str], str]:
        action = load_yaml(action_dir / "action.yml")
        assert action["runs"]["using"] == "composite"
        context = self.context()
        values = {}
        for name, spec in (action.get("inputs") or {}).items():
            default = spec.get("default", "")
            values[name] = inputs[name] if name in inputs else interpolate(default, context)
        context["inputs"] = values
        context["github"] = {**context["github"], "action_path": str(action_dir)}
        status = self.run_steps(action["runs"]["steps"], context, action_path=action_dir,
                                local_actions=local_actions)
        outputs = {k: interpolate(v.get("value"), context) for k, v in (action.get("outputs") or {}).items()}
        return outputs, status

    def run_job(self, workflow_path: Path, job: str, inputs: dict[str, Any], *,
                local_actions: dict[str, Path]) -> str:
        wf = load_yaml(workflow_path)
        spec = wf["on"]["workflow_call"]["inputs"]
        values = {}
        for name, item in spec.items():
            value = inputs.get(name, item.get("default", ""))
            values[name] = value
        context = self.context()
        context["inputs"] = values
        return self.run_steps(wf["jobs"][job]["steps"], context, action_path=None,
                              local_actions=local_actions)

    def context(self) -> dict[str, Any]:
        return {
            "github": dict(self.github),
            "runner": {"os": "Linux", "temp": str(self.temp)},
            "steps": {},
        }
