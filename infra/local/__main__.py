"""`make local`: the local stack as a long-running service, until SIGINT or SIGTERM.

Honours TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_NUMBERS (the default tenant and its
numbers), OPENAI_API_KEY, BATCH_WINDOW_SECONDS, OPENAI_TIMEOUT_SECONDS, GATEWAY_PORT,
AWS_PORT, CONSOLE_PORT (the console, infra/console: 8000; 0: any free port),
WEBHOOK_BASE_URL, AUTO_CREATE_CONVERSATIONS, and every setting of the functions
(TWILIO_TIMEOUT_SECONDS, TWILIO_CONNECTION_OVERRIDES, ...: they run in this process, and
read the environment). OpenAI and Twilio are local stand-ins unless USE_REAL_OPENAI=1 /
USE_REAL_TWILIO=1 ask for the real services. More tenants: `python -m infra.tenants` with
AWS_ENDPOINT_URL set to the printed AWS endpoint."""

from __future__ import annotations

import os
import signal
import sys
import threading

from functions.answer.settings import OpenAISettings
from functions.batching.rules.debounce import BatchingRules
from functions.batching.settings import BatchingSettings
from functions.intake.settings import PublicUrlSettings
from functions.registry import STATUS_CALLBACK
from functions.stack_names import STACK_NAME
from infra.console.__main__ import DEFAULT_PORT as CONSOLE_PORT
from infra.console.__main__ import console_app
from infra.local.servers import Server
from infra.local.stack import LocalConfig, LocalStack

(STATUS_CALLBACK_RESOURCE,) = STATUS_CALLBACK.routes


def main() -> int:
    config = LocalConfig.from_env()
    if config.use_real_openai and config.openai_api_key.startswith("local-"):
        print("USE_REAL_OPENAI=1 needs OPENAI_API_KEY.", file=sys.stderr)
        return 2
    if config.use_real_twilio and config.twilio_auth_token.startswith("local-"):
        print("USE_REAL_TWILIO=1 needs TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN.", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with LocalStack(config) as stack:
        _print_addresses(stack, config)
        app = console_app(STACK_NAME)
        console = Server(config.host, int(os.environ.get("CONSOLE_PORT") or CONSOLE_PORT), app)
        console.start()
        print(f"Console: {app.served_at(config.host, console.server.server_port)}", flush=True)
        stop.wait()
        console.stop()
    print("Stopped.")
    return 0


def _print_addresses(stack: LocalStack, config: LocalConfig) -> None:
    """The lines `make local` has always printed (scripts read them; new lines go after)."""
    print(f"Webhook (WhatsApp): {stack.whatsapp_url}")
    print(f"Webhook (SMS): {stack.sms_url}")
    print(f"AWS endpoint: {stack.aws.url}")
    if stack.twilio_url:
        print(f"Twilio API: {stack.twilio_url}")
    if stack.openai_url:
        print(f"OpenAI API: {stack.openai_url}")
    print(f"State machine: {stack.state_machine_arn}")
    rules = BatchingRules.parse(BatchingSettings.get().batching_defaults())
    print(f"{batching_line(rules)}. Ctrl-C to stop.", flush=True)
    print(f"Tenant: {config.twilio_account_sid} with {', '.join(config.twilio_numbers)}")
    timeout = OpenAISettings.get().openai_timeout_seconds
    print(f"OpenAI: {timeout:g}s per Generate Reply attempt (OPENAI_TIMEOUT_SECONDS)", flush=True)
    public = PublicUrlSettings.get().public_base()  # WEBHOOK_BASE_URL, or the gateway's URL
    print(f"Status callback: {public.given_to_twilio(STATUS_CALLBACK_RESOURCE)}")
    print(f"Paste in Twilio (WhatsApp): {public.given_to_twilio('/whatsapp')}")
    print(f"Paste in Twilio (SMS): {public.given_to_twilio('/sms')}", flush=True)


def batching_line(rules: BatchingRules) -> str:
    """How the functions decide that a burst is over, in their mode: the fixed window's
    line as it has always been printed (scripts read it), or the quiet period and the cap."""
    if rules.mode == "fixed":
        return f"Batch window: {rules.window_seconds:g}s"
    cap = f"at most {rules.max_wait_seconds:g}s"
    if rules.mode == "adaptive":
        learned = f"learned within {rules.quiet_min_seconds:g}s to {rules.quiet_max_seconds:g}s"
        return f"Batching: adaptive, quiet {rules.quiet_seconds:g}s to start ({learned}), {cap}"
    typing = (
        f" ({rules.typing_quiet_seconds:g}s after a gap under {rules.typing_gap_seconds:g}s)"
        if rules.typing_gap_seconds
        else ""
    )
    return f"Batching: quiet {rules.quiet_seconds:g}s{typing}, {cap}"


if __name__ == "__main__":
    sys.exit(main())
