"""Prints the ElastiCache IAM auth token botocore makes, for tests/iam_token.rs.

Usage: elasticache_token.py ACCESS_KEY SECRET_KEY SESSION_TOKEN REGION CACHE USER SERVERLESS(0|1) UNIX_SECONDS

The signing clock is frozen at UNIX_SECONDS (get_current_datetime is replaced in botocore's
pure-Python signer and, when awscrt is installed, in its CRT signer). Run with
BOTO_DISABLE_CRT=true for botocore's own (pure-Python) SigV4 query signer, which is what PyPI's
botocore uses without awscrt.
"""
import datetime
import sys
from urllib.parse import urlencode

import botocore.auth
import botocore.session
from botocore.credentials import Credentials
from botocore.model import ServiceId
from botocore.signers import RequestSigner

access_key, secret_key, token, region, cache, user, serverless, at = sys.argv[1:9]
frozen = datetime.datetime.fromtimestamp(int(at), datetime.timezone.utc)


def frozen_now(remove_tzinfo=True):
    return frozen.replace(tzinfo=None) if remove_tzinfo else frozen


botocore.auth.get_current_datetime = frozen_now
try:
    import botocore.crt.auth

    botocore.crt.auth.get_current_datetime = frozen_now
except ImportError:
    pass

params = {"Action": "connect", "User": user}
if serverless == "1":
    params["ResourceType"] = "ServerlessCache"
signer = RequestSigner(
    ServiceId("elasticache"),
    region,
    "elasticache",
    "v4",
    Credentials(access_key, secret_key, token or None),
    botocore.session.get_session().get_component("event_emitter"),
)
url = signer.generate_presigned_url(
    {
        "method": "GET",
        "url": f"http://{cache}/?{urlencode(params)}",
        "body": {},
        "headers": {},
        "context": {},
    },
    operation_name="connect",
    expires_in=900,
    region_name=region,
)
print(url.removeprefix("http://"))
