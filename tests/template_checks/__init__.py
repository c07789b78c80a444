"""The checks of tests/template_matrix.py, one concern per module.

- `stack`: template.yaml rendered for one set of parameter values (the SAM transform by
  samtranslator, Conditions and intrinsic functions by cloud-radar, the Rules by hand) and the
  functions' cold-start settings check (`check_settings`);
- `boots`: whether the functions of a render would boot (IAM, network path, store users);
- `live`: the store users' access string on a real redis-server;
- `dashboard`: the CloudWatch dashboard of a render (every metric emitted by the code or an AWS
  metric of a resource of that render; the store's widgets);
- `runbook`: docs/operations.md against the alarms (a section per alarm, its four parts, the
  widgets it names) and each alarm's description (its link to that section, 1024 characters).
"""

import sys
from pathlib import Path

# hongbao_tools lives in scripts/ (the scripts there find it as their own directory); the
# modules here import it.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
