"""The Twilio accounts the stand-in knows, and their auth tokens, checked as Twilio checks
them.

"All requests to sensitive areas of the Twilio API must use HTTP Basic Authentication ...
your Account SID as the username, and your Auth Token as the password"; anything else is
refused with 401 and code 20003, Permission Denied, among whose causes are "Previous Auth
Token has been deleted" and "Account is suspended or closed"
(https://www.twilio.com/docs/api/errors/20003). An account has a primary token and may have
a secondary one, both good for API requests; once the secondary is promoted, "all requests
to Twilio using your old primary Auth Token will result in an error"
(https://www.twilio.com/docs/iam/api/authtoken). Twilio signs its webhooks and status
callbacks with the account's token (https://www.twilio.com/docs/usage/webhooks/webhooks-security):
here the primary one at the time it sends them, whatever token the create used.

An account the stand-in does not know is refused, as Twilio refuses one. The local stack
registers the tenants it adds (infra/local/stack.py); others are registered with:
  - `POST /_control/accounts` `{"account_sid", "auth_token", "secondary_auth_token"?}`: the
    account's tokens from now on (a new account, or a rotation: the old primary is refused
    at once); `set_account(...)` in Python;
  - `GET /_control/accounts` lists the accounts known (their SIDs, never their tokens).
The accounts outlive `POST /_control/reset`, as accounts outlive what was sent with them.
"""

from __future__ import annotations

import threading

from werkzeug.datastructures import Authorization
from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import StandIn, json_response


class TwilioAccountsStandIn(StandIn):
    """The accounts and their tokens, for every part of the Twilio stand-in."""

    rules = [Rule("/_control/accounts", endpoint="control_accounts", methods=["GET", "POST"])]

    def __init__(self) -> None:
        super().__init__()
        self._tokens: dict[str, tuple[str, ...]] = {}  # AccountSid → (primary, secondary?)
        self._accounts_lock = threading.Lock()

    def set_account(self, account_sid: str, auth_token: str, secondary_auth_token: str | None = None) -> None:
        """The account's tokens from now on: its primary (which signs what Twilio sends) and
        an optional secondary; any other token, an earlier primary too, is refused."""
        if not auth_token:
            raise ValueError("an account needs its auth token")
        with self._accounts_lock:
            self._tokens[account_sid] = (
                (auth_token, secondary_auth_token) if secondary_auth_token else (auth_token,)
            )

    def knows(self, account_sid: str) -> bool:
        with self._accounts_lock:
            return account_sid in self._tokens

    def authenticates(self, account_sid: str, authorization: Authorization | None) -> bool:
        """Whether the request's Basic authentication is the account's SID and one of its
        tokens."""
        if authorization is None or authorization.username != account_sid:
            return False
        with self._accounts_lock:
            return (authorization.password or "") in self._tokens.get(account_sid, ())

    def signing_token(self, account_sid: str) -> str:
        """The token Twilio signs the account's webhooks and callbacks with: its primary."""
        with self._accounts_lock:
            return self._tokens.get(account_sid, ("",))[0]

    def control_accounts(self, request: Request) -> Response:
        if request.method == "POST":
            body = request.get_json(force=True)
            try:
                self.set_account(
                    str(body.get("account_sid") or ""),
                    str(body.get("auth_token") or ""),
                    body.get("secondary_auth_token") or None,
                )
            except ValueError as error:
                return json_response({"error": {"message": str(error), "status": 400}}, 400)
        with self._accounts_lock:
            return json_response({"accounts": sorted(self._tokens)})
