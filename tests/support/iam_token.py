"""Prints the ElastiCache or MemoryDB IAM auth token botocore makes, for tests/it/iam_token.rs.

Usage: iam_token.py ACCESS_KEY SECRET_KEY SESSION_TOKEN REGION NAME USER TARGET UNIX_SECONDS

TARGET is `elasticache` (a replication group), `elasticache-serverless` (adds
ResourceType=ServerlessCache) or `memorydb` (service "memorydb", as in the MemoryDB developer
guide's IAMAuthTokenRequest example).

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

access_key, secret_key, token, region, cache, user, target, at = sys.argv[1:9]
service = {
    "elasticache": "elasticache",
    "elasticache-serverless": "elasticache",
    "memorydb": "memorydb",
}[target]
frozen = datetime.datetime.fromtimestamp(int(at), datetime.UTC)


def frozen_now(remove_tzinfo=True):
    return frozen.replace(tzinfo=None) if remove_tzinfo else frozen


botocore.auth.get_current_datetime = frozen_now
try:
    import botocore.crt.auth

    botocore.crt.auth.get_current_datetime = frozen_now
except ImportError:
    pass

params = {"Action": "connect", "User": user}
if target == "elasticache-serverless":
    params["ResourceType"] = "ServerlessCache"
signer = RequestSigner(
    ServiceId(service),
    region,
    service,
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
