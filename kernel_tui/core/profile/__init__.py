"""Nsight Compute profiles of a candidate's kernels: finding ncu, the command line that runs a target under
it, reading its raw-page CSV into a Profile, and saying in words what a profile shows and what changed."""

from kernel_tui.core.profile.compare import compare_profiles, profile_table_row, summary_lines
from kernel_tui.core.profile.models import KernelProfile, Profile
from kernel_tui.core.profile.ncu import METRICS, failure_reason, find_ncu, ncu_wrapper, unknown_metrics
from kernel_tui.core.profile.parse import ProfileError, parse_ncu_csv

__all__ = [
    "METRICS", "KernelProfile", "Profile", "ProfileError", "compare_profiles", "failure_reason", "find_ncu",
    "ncu_wrapper", "parse_ncu_csv", "profile_table_row", "summary_lines", "unknown_metrics",
]
