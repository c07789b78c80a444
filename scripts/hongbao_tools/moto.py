"""EventBridge and SQS on loopback: moto in server mode (PyPI `moto[server]`, pinned in
scripts/requirements.txt), and the ledger feed the SAM template deploys (a bus, a rule matching
`{"source": ["hongbao"]}`, an SQS queue as its target), through boto3 (a dependency of moto).
The Rust tests have the same in tests/harness/moto.rs."""

from __future__ import annotations

import json
import subprocess
import sys

import boto3

from .procs import free_port, kill_tree, spawn, wait_for_port

REGION = "us-east-1"
# Test credentials: moto accepts any; never real ones.
CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}


class MotoServer:
    """`python -m moto.server` on a free loopback port; a context manager."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        """`host`: the address to listen on (another local address than loopback, such as the
        Docker bridge's gateway, lets Lambda containers reach it)."""
        self.host = host
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """`http://<host>:<port>`."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> MotoServer:
        self.proc = spawn(
            [sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.proc, timeout=60, host=self.host)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            kill_tree(self.proc)
            self.proc = None

    def client(self, service: str):
        """A boto3 client of `service` against this server."""
        return boto3.client(service, region_name=REGION, endpoint_url=self.url, **CREDENTIALS)

    def lambda_env(self) -> dict[str, str]:
        """What a sandbox needs to reach this server as it would reach AWS."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
        }

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class LedgerFeed:
    """A bus `bus_name`, a queue, and a rule sending every `source: hongbao` event to it."""

    def __init__(self, moto: MotoServer, bus_name: str):
        self.bus_name = bus_name
        events = moto.client("events")
        self.sqs = moto.client("sqs")
        events.create_event_bus(Name=bus_name)
        self.queue_url = self.sqs.create_queue(QueueName=f"{bus_name}-feed")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        events.put_rule(
            Name=f"{bus_name}-to-feed",
            EventBusName=bus_name,
            EventPattern=json.dumps({"source": ["hongbao"]}),
        )
        events.put_targets(
            Rule=f"{bus_name}-to-feed", EventBusName=bus_name, Targets=[{"Id": "feed", "Arn": arn}]
        )

    def drain(self) -> list[dict]:
        """Every event on the queue (the EventBridge envelopes), each message deleted."""
        out = []
        while True:
            got = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
            ).get("Messages", [])
            if not got:
                return out
            for m in got:
                out.append(json.loads(m["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
