"""A task directory on disk: task.json validated into a TaskSpec, and the reference, baseline and input
generator sources beside it. Every failure is one TaskError line naming the file and each field at fault."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from kernel_tui.core.errors import TaskError
from kernel_tui.core.task.spec import TaskSpec


@dataclass(frozen=True)
class Task:
    """A task directory: the spec plus the reference, baseline and (optional) input generator sources."""

    root: Path
    spec: TaskSpec
    reference_source: str
    baseline_source: str
    generator_source: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def baseline_is_pytorch(self) -> bool:
        return self.spec.baseline.language == "pytorch"


# pydantic's wording for the errors a person meets most, in the words of a task file (an unknown key
# is described apart, with the valid keys)
_PLAIN = {"missing": "is required and missing"}


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model that holds the key at `loc` (a pydantic error location) in a task file."""
    model: type[BaseModel] | None = TaskSpec
    for part in loc[:-1]:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        model = _inner_model(field.annotation)
    return model


def _inner_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _describe_error(err: Mapping[str, Any]) -> str:
    loc = tuple(err["loc"])
    where = ".".join(str(p) for p in loc) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        keys = [f.alias or n for n, f in model.model_fields.items()] if model else []
        key = str(loc[-1])
        close = difflib.get_close_matches(key, keys, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"field {where}: unknown key ({hint}valid keys: {', '.join(keys)})" if keys else f"field {where}: unknown key"
    text = _PLAIN.get(kind) or err["msg"].removeprefix("Value error, ")
    return f"field {where}: {text}"


def _describe_validation(path: Path, exc: ValidationError) -> str:
    """One line naming the file and every field at fault, so one edit can fix them all."""
    problems = []
    for err in exc.errors():
        line = _describe_error(err)
        if line not in problems:  # a union reports a bad value once per member
            problems.append(line)
    return f"{path}: {' | '.join(problems)}"


def load_spec(path: Path) -> TaskSpec:
    """Load and validate a task.json; raises TaskError with one line naming file and field."""
    path = Path(path)
    if path.is_dir():
        path = path / "task.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(f"{path}: no such task file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise TaskError(f"{path}: a task file holds one JSON object")
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise TaskError(_describe_validation(path, exc)) from None


def _read_source(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(f"{path}: {what} file is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot read {what}: {exc}") from None


def load_task(directory: Path) -> Task:
    directory = Path(directory)
    if not directory.exists():
        raise TaskError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise TaskError(f"{directory}: a task is a directory holding task.json")
    spec = load_spec(directory / "task.json")
    generator = spec.generator
    return Task(
        root=directory,
        spec=spec,
        reference_source=_read_source(directory / spec.reference.filename, "reference"),
        baseline_source=_read_source(directory / spec.baseline.filename, "baseline"),
        generator_source=_read_source(directory / generator.filename, "input generator") if generator else None,
    )
