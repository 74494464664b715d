"""A version's Nsight Compute profile: what holds it back, each kernel, and what changed against another
version. r profiles it (again) now; the rounds pause while the GPU is busy with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from kernel_tui.tui.messages import ProfileLoaded

if TYPE_CHECKING:
    from kernel_tui.tui.controller import Controller


class ProfileScreen(Screen):
    BINDINGS = [
        Binding("escape,i", "back", "Back", id="profile-back"),
        Binding("r", "profile_now", "Profile now", id="profile-now"),
    ]

    def __init__(self, controller: Controller, commit: str, against: str | None = None) -> None:
        super().__init__(id="profile")
        self.controller, self.commit, self.against = controller, commit, against
        self.off: str | None = None  # why this session cannot profile, once the view said so

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="profile-box"):
            yield Static("loading…", id="profile-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#profile-box").border_title = f"profile of {self.commit[:8]}"
        self.app.load_profile(self.controller, self, self.commit, self.against)  # type: ignore[attr-defined]

    @on(ProfileLoaded)
    def _loaded(self, message: ProfileLoaded) -> None:
        v = message.view
        if v.commit != self.commit:
            return
        self.off = v.off
        self.query_one("#profile-box").border_title = v.title
        self.query_one("#profile-text", Static).update("\n".join(v.lines))

    def taken(self, commit: str) -> None:
        """A profile was just taken: shown if it is of this version or of the one it is compared with."""
        if commit in (self.commit, self.against):
            self.app.load_profile(self.controller, self, self.commit, self.against)  # type: ignore[attr-defined]

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_profile_now(self) -> None:
        if self.off is not None:  # nothing would run: said (and logged), and the rounds are not paused for it
            self.notify(f"no profile can be taken here: {self.off}", severity="warning")
            self.controller.profile(self.commit)  # returns at once, with the reason in the log
            return
        self.query_one("#profile-text", Static).update(f"profiling {self.commit[:8]}… (rounds are paused meanwhile)")
        self.app.run_profile(self.controller, self, self.commit, self.against)  # type: ignore[attr-defined]
