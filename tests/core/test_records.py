"""What crosses into the records is typed: a verdict's status is an evaluator Status or the person's rejection."""

import pytest
from pydantic import ValidationError

from kernel_tui.core.evaluator.models import Status
from kernel_tui.core.records import ProposerInfo, TrajectoryLine

SEARCH = ProposerInfo(kind="search", name="built-in search")


def line(status: str) -> TrajectoryLine:
    return TrajectoryLine(round=1, change="c", proposer=SEARCH, commit="0" * 40, status=status, reason="r",
                          accepted=False)


def test_a_status_is_typed_and_shown_as_its_value():
    ok = line("ok")
    assert ok.status is Status.ok and f"{ok.status}" == "ok"
    assert line("rejected_by_person").status == "rejected_by_person"
    assert ok.model_dump(mode="json")["status"] == "ok"


def test_an_unknown_status_is_refused():
    with pytest.raises(ValidationError):
        line("fine, probably")
