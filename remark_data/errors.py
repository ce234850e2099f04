"""Errors a user can cause. The CLI prints them as one line and exits non-zero."""


class RemarkError(Exception):
    """A user-facing error: bad file, bad config, checksum mismatch, unreachable endpoint."""
