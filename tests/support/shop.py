"""A tenant of the local stack's own for the assistant's tests (its number, its token), so
that its assistant profile reaches no other test; and a business's documents or tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from functions.assistant import assistant_profiles
from infra.local.webhooks import inbound_form, post_webhook


class Shop:
    def __init__(self, harness: Any) -> None:
        self.harness = harness
        self.number = "whatsapp:+1555" + "".join(str(int(c, 16) % 10) for c in os.urandom(4).hex()[:7])
        self.account_sid, self.token = harness.add_tenant(self.number)

    def assistants(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`python -m infra.assistants ...`, as an operator runs it against the local stack."""
        stack = self.harness.stack
        env = {
            "AWS_ENDPOINT_URL": stack.aws.url,
            "OPENAI_BASE_URL": stack.openai_url or "",
            "PATH": os.environ.get("PATH", ""),
        }
        result = subprocess.run(
            [sys.executable, "-m", "infra.assistants", *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assistant_profiles.forget()  # what ASSISTANT_PROFILE_CACHE_SECONDS does to a warm function
        return result

    def put_profile(self, tmp_path: Path, profile: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        path = tmp_path / f"profile-{os.urandom(3).hex()}.json"
        path.write_text(json.dumps(profile))
        return self.assistants("put", "--tenant", self.account_sid, str(path))

    def send(self, user: str, body: str) -> None:
        form = inbound_form(body, user, self.number, self.account_sid)
        assert post_webhook(self.harness.stack.whatsapp_url, form, self.token).status_code == 200

    def conversation_id(self, user: str) -> str:
        return str(self.harness.conversation_of(user, self.number, self.account_sid).conversation_id)

    def signing_key(self) -> str:
        secrets = self.harness.stack.client("secretsmanager")
        name = f"BurstReply/tenants/tools/{self.account_sid}"
        return str(json.loads(secrets.get_secret_value(SecretId=name)["SecretString"])["signing_key"])
