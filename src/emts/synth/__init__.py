"""Synthetic motion curriculum (§4): camera paths, plates, actors and clips.

Everything here is numpy + OpenCV only, so the demo runs from the runtime install.
"""
