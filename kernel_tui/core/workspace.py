"""The git-backed store of a run: every proposal a commit, the accepted lineage branch `best`.

Layout of a workspace (a git repository):
    task.json reference.py baseline.py   the task, as copied in (tracked)
    kernel.py                            the kernel source of each commit (tracked)
    best.py                              mirrors the current best (untracked)
    trajectory.jsonl evaluations/ *.json report.md *.png   run artifacts (untracked)
Proposals are committed on top of the current best, *before* they are evaluated, with an explicit
author (model, search or person) and trailers; each round's commit is kept at refs/candidates/NNNN;
verdicts are recorded as git notes (refs/notes/verdicts) and in trajectory.jsonl; `best` only ever
fast-forwards, and a restore is a new commit. Commits are built from the object database, never from
the user's index or working tree, so nothing a person does in the directory can corrupt a round.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

import git
from git.index.typ import BaseIndexEntry
from gitdb.base import IStream
from pydantic import BaseModel, ValidationError

from kernel_tui.core.errors import KernelTuiError
from kernel_tui.core.records import ProposerInfo, TrajectoryLine
from kernel_tui.core.task import Task, load_task

TOOL = git.Actor("kernel-tui", "kernel-tui@localhost")
KERNEL_FILE = "kernel.py"
NOTES_REF = "refs/notes/verdicts"
PROFILES_REF = "refs/notes/profiles"  # a version's Nsight Compute profile (core/profile/store.py)
CANDIDATES = "refs/candidates"
EXCLUDE = """# kernel-tui run artifacts: not part of the kernel's history
best.py
trajectory.jsonl
trajectory.jsonl.torn-*
model-messages.jsonl
tool-calls.jsonl
evaluations/
*.json
!task.json
report.md
*.png
.lock
triton-cache/
.work/
"""


class WorkspaceError(KernelTuiError):
    pass


class WorkspaceBusy(WorkspaceError):
    pass


def actor_for(proposer: ProposerInfo) -> git.Actor:
    if proposer.kind == "person":
        return git.Actor(proposer.name, proposer.email or "person@localhost")
    if proposer.kind == "llm":
        return git.Actor(proposer.model or proposer.name, "model@kernel-tui.localhost")
    if proposer.kind == "search":
        return git.Actor("kernel-tui search", "search@kernel-tui.localhost")
    return git.Actor(f"kernel-tui {proposer.kind}", f"{proposer.kind}@kernel-tui.localhost")


def person_identity(name: str | None = None, email: str | None = None) -> ProposerInfo:
    """The person at the keyboard: what they configured, else their global git identity."""
    if not (name and email):
        try:
            reader = git.GitConfigParser(git.config.get_config_path("global"), read_only=True)
            name = name or str(reader.get_value("user", "name", ""))
            email = email or str(reader.get_value("user", "email", ""))
        except (OSError, KeyError, ValueError):
            pass
    return ProposerInfo(kind="person", name=str(name or "person"), email=str(email or "person@localhost"))


# The trailers of a restore commit: the version it copies, the last round judged when it was made (where
# the report and the record line place it), and, for a chosen start (core.history.start_from), the round.
RESTORED_FROM, AFTER_ROUND, CHOSEN_START = "Restored-from", "After-round", "Chosen-start"


def _message(change: str, trailers: dict[str, str], body: str = "") -> str:
    subject = change.strip() or "(no description)"
    text = " ".join(body.split())  # one paragraph: a trailer line is read back as "Key: value" from the end
    lines = [subject, ""] + ([text, ""] if text else []) + [f"{k}: {v}" for k, v in trailers.items() if v]
    return "\n".join(lines) + "\n"


def write_durably(path: Path, text: str) -> None:
    """Write `text` to `path` so that a crash leaves the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Workspace:
    def __init__(self, root: Path, repo: git.Repo, task: Task) -> None:
        self.root, self.repo, self.task = root, repo, task
        self._lock_file: io.TextIOWrapper | None = None

    # --- opening ------------------------------------------------------------------------------
    @staticmethod
    def is_workspace(path: Path) -> bool:
        return (path / ".git").is_dir() and (path / "task.json").is_file() and (path / KERNEL_FILE).exists()

    @classmethod
    def create(cls, task_dir: Path, parent: Path = Path("workspaces"), path: Path | None = None) -> Workspace:
        task = load_task(task_dir)
        if path is None:
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            path = Path(parent) / f"{Path(task_dir).resolve().name}-{stamp}"
        path = Path(path)
        if path.exists() and any(path.iterdir()):
            raise WorkspaceError(f"{path}: exists and is not empty; pick another --workspace")
        path.mkdir(parents=True, exist_ok=True)
        shutil.copy(task.root / "task.json", path / "task.json")
        shutil.copy(task.root / task.spec.reference.filename, path / task.spec.reference.filename)
        shutil.copy(task.root / task.spec.baseline.filename, path / task.spec.baseline.filename)
        (path / KERNEL_FILE).write_text(task.baseline_source, encoding="utf-8")
        repo = git.Repo.init(path, initial_branch="best")
        (Path(repo.git_dir) / "info").mkdir(exist_ok=True)
        (Path(repo.git_dir) / "info" / "exclude").write_text(EXCLUDE)
        with repo.config_writer() as cw:  # the identity of the tool's own objects (notes)
            cw.set_value("user", "name", TOOL.name)
            cw.set_value("user", "email", TOOL.email)
        files = ["task.json", task.spec.reference.filename, task.spec.baseline.filename, KERNEL_FILE]
        repo.index.add(files)
        repo.index.commit(
            _message(f"Baseline of {task.name}", {"Round": "0", "Proposer": "baseline"}),
            author=TOOL, committer=TOOL,
        )
        git.Reference.create(repo, f"{CANDIDATES}/0000", repo.head.commit)
        ws = cls(path, repo, load_task(path))
        ws.sync_best_file()
        return ws

    @classmethod
    def open(cls, path: Path) -> Workspace:
        path = Path(path)
        if not path.exists():
            raise WorkspaceError(f"{path}: no such directory")
        if not cls.is_workspace(path):
            raise WorkspaceError(f"{path}: not a kernel-tui workspace (no .git, task.json and {KERNEL_FILE})")
        try:
            repo = git.Repo(path)
            repo.commit("best")
        except (git.InvalidGitRepositoryError, git.BadName, ValueError) as exc:
            raise WorkspaceError(f"{path}: its git repository has no branch 'best' ({exc})") from None
        return cls(path, repo, load_task(path))

    # --- the lock -------------------------------------------------------------------------------
    def lock(self) -> None:
        """Exclusive use of the workspace by this process; a second one fails with a clear message."""
        f = open(self.root / ".lock", "a+", encoding="utf-8")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "?"
            f.close()
            raise WorkspaceBusy(f"{self.root}: in use by another kernel-tui process (pid {holder})") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._lock_file = f

    def unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    # --- reading --------------------------------------------------------------------------------
    @property
    def best(self) -> git.Commit:
        return self.repo.commit("best")

    @property
    def baseline(self) -> git.Commit:
        return self.repo.commit(f"{CANDIDATES}/0000")

    def source_at(self, rev: str | git.Commit) -> str:
        commit = self.repo.commit(rev) if isinstance(rev, str) else rev
        try:
            return (commit.tree / KERNEL_FILE).data_stream.read().decode("utf-8")
        except KeyError:
            raise WorkspaceError(f"commit {commit.hexsha[:8]} has no {KERNEL_FILE}") from None

    @property
    def best_source(self) -> str:
        return self.source_at(self.best)

    @property
    def best_is_pytorch_start(self) -> bool:
        """No Triton version accepted yet: the best is still the task's PyTorch starting point."""
        return self.task.baseline_is_pytorch and self.best_source == self.task.baseline_source

    def candidate_refs(self) -> dict[int, git.Commit]:
        out = {}
        for ref in self.repo.references:
            if ref.path.startswith(CANDIDATES + "/"):
                try:
                    out[int(ref.path.rsplit("/", 1)[1])] = ref.commit
                except ValueError:
                    continue
        return dict(sorted(out.items()))

    def next_round(self) -> int:
        return max(self.candidate_refs(), default=0) + 1

    def trajectory(self) -> list[TrajectoryLine]:
        path = self.root / "trajectory.jsonl"
        if not path.exists():
            return []
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:  # a torn last write (killed mid-append): keep it aside, drop it from the file
            torn = path.with_name(f"trajectory.jsonl.torn-{datetime.now():%Y%m%d-%H%M%S}")
            torn.write_bytes(lines[-1])
            lines.pop()
            write_durably(path, b"\n".join(lines).decode("utf-8") + ("\n" if lines else ""))
        out = []
        for number, line in enumerate(lines, start=1):
            try:
                out.append(TrajectoryLine.model_validate_json(line))
            except ValidationError as exc:
                msg = exc.errors()[0]["msg"]
                raise WorkspaceError(f"{path}: line {number} is corrupt ({msg}); fix or remove it, nothing was changed") from None
        return out

    def pending(self) -> list[tuple[int, git.Commit]]:
        """Rounds committed but without a verdict (killed before or during evaluation)."""
        done = {line.round for line in self.trajectory()}
        return [(r, c) for r, c in self.candidate_refs().items() if r > 0 and r not in done]

    def proposal_info(self, commit: git.Commit) -> tuple[str, dict[str, str]]:
        """(change, trailers) of a proposal commit."""
        message = commit.message if isinstance(commit.message, str) else commit.message.decode("utf-8", "replace")
        lines = message.strip().splitlines()
        trailers: dict[str, str] = {}
        for line in reversed(lines):
            if ": " not in line:
                break
            key, _, value = line.partition(": ")
            trailers[key] = value
        return (lines[0] if lines else ""), trailers

    # --- writing --------------------------------------------------------------------------------
    def _commit_source(self, source: str, message: str, parent: git.Commit, author: git.Actor) -> git.Commit:
        data = source.encode("utf-8")
        blob = self.repo.odb.store(IStream(git.Blob.type, len(data), io.BytesIO(data)))
        index = git.IndexFile.from_tree(self.repo, parent.tree)
        index.add([BaseIndexEntry((0o100644, blob.binsha, 0, KERNEL_FILE))], write=False)
        tree = index.write_tree()
        return git.Commit.create_from_tree(
            self.repo, tree, message, parent_commits=[parent], head=False, author=author, committer=TOOL,
        )

    def commit_proposal(self, round_no: int, source: str, change: str, proposer: ProposerInfo) -> git.Commit:
        """Commit a proposal on top of the current best and keep it at refs/candidates/NNNN."""
        trailers = {"Round": str(round_no), "Proposer": f"{proposer.kind}:{proposer.name}", "Model": proposer.model or ""}
        commit = self._commit_source(source, _message(change, trailers), self.best, actor_for(proposer))
        git.Reference.create(self.repo, f"{CANDIDATES}/{round_no:04d}", commit, force=True)
        return commit

    def commit_edit(self, round_no: int, source: str, proposal: git.Commit, person: ProposerInfo, note: str = "",
                    change: str | None = None) -> git.Commit:
        """A person's revision of a proposal: a new commit on top of it, authored by them. `change` says what
        the revision evaluates (the proposal's own description no longer does)."""
        proposed, trailers = self.proposal_info(proposal)
        trailers.update({"Edited-by": f"{person.name} <{person.email or 'person@localhost'}>"})
        subject = change or f"{proposed} (edited)"
        message = _message(subject + (f" — {note}" if note else ""), trailers)
        commit = self._commit_source(source, message, proposal, actor_for(person))
        git.Reference.create(self.repo, f"{CANDIDATES}/{round_no:04d}", commit, force=True)
        return commit

    def commit_onto(self, round_no: int, proposal: git.Commit, onto: git.Commit) -> git.Commit:
        """A batch's proposal moved onto the version accepted before it (best only moves forward): the same
        source, message and author, on top of `onto`, with a trailer naming the original; it becomes the round's
        candidate."""
        change, trailers = self.proposal_info(proposal)
        trailers["Re-gated-from"] = proposal.hexsha
        commit = self._commit_source(self.source_at(proposal), _message(change, trailers), onto,
                                     git.Actor(proposal.author.name, proposal.author.email))
        git.Reference.create(self.repo, f"{CANDIDATES}/{round_no:04d}", commit, force=True)
        return commit

    def record_verdict(self, line: TrajectoryLine) -> None:
        """Append the verdict to trajectory.jsonl (synced) and attach it to the commit as a git note."""
        path = self.root / "trajectory.jsonl"
        with open(path, "a", encoding="utf-8") as f:
            f.write(line.model_dump_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._note(line)

    def _note(self, line: TrajectoryLine) -> None:
        note = {k: v for k, v in line.model_dump(mode="json").items() if k in (
            "round", "status", "reason", "accepted", "latency", "improvement", "ci_low", "ci_high", "p_value", "device",
        )}
        self.add_note(NOTES_REF, line.commit, note)

    def add_note(self, ref: str, commit: str, data: dict) -> None:
        """Attach JSON to a commit under a notes ref (replacing what was there). Through a file: a note of
        many kernels' profiles is longer than one command-line argument may be."""
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=self.repo.git_dir, delete=False, encoding="utf-8") as f:
            f.write(json.dumps(data))
        try:
            self.repo.git.notes("--ref", ref, "add", "-f", "-F", f.name, commit)
        finally:
            os.unlink(f.name)

    def read_note(self, ref: str, commit: str) -> dict | None:
        try:
            return json.loads(self.repo.git.notes("--ref", ref, "show", commit))
        except (git.GitCommandError, ValueError):
            return None

    def note_for(self, commit: git.Commit) -> dict | None:
        return self.read_note(NOTES_REF, commit.hexsha)

    def accept(self, commit: git.Commit) -> None:
        """Fast-forward `best` to an accepted commit (its ancestry must contain the current best)."""
        if not self.repo.is_ancestor(self.best, commit):
            raise WorkspaceError(f"{commit.hexsha[:8]} does not descend from best; refusing to rewrite history")
        self.repo.heads.best.set_commit(commit)
        self.sync_best_file()

    def restore(self, rev: str, person: ProposerInfo, *, subject: str = "", body: str = "",
                trailers: dict[str, str] | None = None) -> git.Commit:
        """Make an old version the incumbent again: a new commit on `best`, history untouched. Its trailers
        name the version it copies and the last round judged before it (the report lists restores by them);
        `subject`, `body` and `trailers` say more where the caller knows more (core.history.restore_version)."""
        old = self.repo.commit(rev)
        after = max((line.round for line in self.trajectory()), default=0)
        fields = {RESTORED_FROM: old.hexsha, AFTER_ROUND: str(after), "Proposer": f"{person.kind}:{person.name}",
                  **(trailers or {})}
        commit = self._commit_source(
            self.source_at(old), _message(subject or f"Restore {old.hexsha[:8]} as incumbent", fields, body),
            self.best, actor_for(person),
        )
        self.accept(commit)
        return commit

    def sync_best_file(self) -> None:
        """best.py and the tracked files in the directory follow `best`."""
        write_durably(self.root / "best.py", self.best_source)
        try:
            self.repo.head.reset(index=True, working_tree=True)
        except git.GitCommandError:
            pass  # a person's uncommitted edits in the directory are theirs; best.py is still right

    def evaluation_dir(self, round_no: int) -> Path:
        d = self.root / "evaluations" / f"evaluation-{round_no:04d}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write_json(self, name: str, data: BaseModel | dict, directory: Path | None = None) -> Path:
        path = (directory or self.root) / name
        text = data.model_dump_json(indent=2) if isinstance(data, BaseModel) else json.dumps(data, indent=2)
        write_durably(path, text + "\n")
        return path

    def read_json(self, name: str) -> dict | None:
        path = self.root / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, OSError) as exc:
            raise WorkspaceError(f"{path}: unreadable ({exc})") from None

    def reconcile(self) -> list[str]:
        """After a crash: finish what a verdict started (note, best move). Returns what was repaired."""
        repaired = []
        lines = self.trajectory()
        for line in lines:
            if self.note_for(self.repo.commit(line.commit)) is None:
                self._note(line)
                repaired.append(f"round {line.round}: verdict note restored")
        accepted = [ln for ln in lines if ln.accepted]
        if accepted:
            last = self.repo.commit(accepted[-1].commit)
            if last.hexsha != self.best.hexsha and self.repo.is_ancestor(self.best, last):
                self.accept(last)
                repaired.append(f"round {accepted[-1].round}: best moved to its accepted commit")
        best_file = self.root / "best.py"
        if not best_file.exists() or best_file.read_text(encoding="utf-8") != self.best_source:
            self.sync_best_file()
            repaired.append("best.py rewritten from branch best")
        return repaired
