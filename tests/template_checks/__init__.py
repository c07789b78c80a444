"""The checks of tests/template_matrix.py, one concern per module.

- `stack`: template.yaml rendered for one set of parameter values (the SAM transform by
  samtranslator, Conditions and intrinsic functions by cloud-radar, the Rules by hand) and the
  functions' cold-start settings check (`check_settings`);
- `boots`: whether the functions of a render would boot (IAM, network path, store users);
- `live`: the store users' access string on a real redis-server.
"""

import sys
from pathlib import Path

# hongbao_tools lives in scripts/ (the scripts there find it as their own directory); the
# modules here import it.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
