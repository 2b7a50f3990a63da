"""Entry point for Streamlit Community Cloud: the app itself, with this folder's
requirements.txt (Community Cloud installs the dependency file that sits beside the
entry point, before the repository root's). That file takes torch's CPU build."""

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

runpy.run_path(str(ROOT / "streamlit_app.py"), run_name="__main__")
