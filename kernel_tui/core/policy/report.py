"""What the policy says about a source: each violation by its rule and line, and a summary for a person."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Violation(BaseModel):
    model_config = ConfigDict(frozen=True)
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.rule} (line {self.line}): {self.message}"


class PolicyReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    violations: list[Violation]
    syntax_error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations and self.syntax_error is None

    def summary(self) -> str:
        if self.syntax_error:
            return f"syntax: {self.syntax_error}"
        return "; ".join(str(v) for v in self.violations[:3]) + (
            f" (+{len(self.violations) - 3} more)" if len(self.violations) > 3 else ""
        )
