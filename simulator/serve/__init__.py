"""The review desk: a local web app where clinicians read transcripts, label them blind, calibrate the
judges, edit scenarios and criteria, and talk to the bot themselves (`simulator serve`)."""

from __future__ import annotations

__all__ = ["DeskConfig", "create_app"]

from simulator.serve.app import create_app
from simulator.serve.config import DeskConfig
